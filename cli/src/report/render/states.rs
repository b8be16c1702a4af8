//! The note on the machine's states ([`crate::report::states`]): how many rounds ran in a
//! state other than the main one, how much moving data between CPUs cost there, and what the
//! ratios were there.

use crate::report::format;
use crate::report::model::{MachineState, Report, Row};
use crate::report::states;

/// `cost 3.50x more` or `cost 2.15x less`: the 4 KiB probe of `state` against `main`'s.
fn cost(state: &MachineState, main: &MachineState) -> String {
    let (of, to) = (state.probe_ns.max(1) as f64, main.probe_ns.max(1) as f64);
    if of >= to {
        format!("cost {}x more", format::ratio(of / to))
    } else {
        format!("cost {}x less", format::ratio(to / of))
    }
}

/// `1.05x`, or `1.04x..1.07x` for a range.
fn ratios(values: &[f64]) -> Option<String> {
    let lo = values.iter().copied().reduce(f64::min)?;
    let hi = values.iter().copied().reduce(f64::max)?;
    if format::ratio(lo) == format::ratio(hi) {
        Some(format!("{}x", format::ratio(lo)))
    } else {
        Some(format!("{}x..{}x", format::ratio(lo), format::ratio(hi)))
    }
}

/// One line for each state of the run but its main one (the state with most rounds), e.g.
/// `note: 2 of 20 rounds ran in a state where moving 4 KiB across CPUs cost 3.50x more: there
/// the ratios were 1.04x..1.07x (1.28x..1.31x in the main state).` The ratios are the rows'
/// figures in that state ([`states::figures`]); a state no row has figures in gets the
/// first part only. `None` with fewer than two states.
pub fn states_note(report: &Report) -> Option<String> {
    let all = &report.machine.states;
    let main = states::run_main_state(all).filter(|_| all.len() >= 2)?;
    let total: u64 = all.iter().map(|s| s.rounds).sum();
    let figures: Vec<_> = report.rows.iter().map(|row| states::figures(&row.rounds)).collect();
    let ratios_in = |state: u32| -> Vec<f64> {
        figures.iter().flatten().filter(|f| f.state == state).filter_map(|f| f.ratio).collect()
    };
    let in_main = ratios(&ratios_in(main.id));
    let lines: Vec<String> = all
        .iter()
        .filter(|s| s.id != main.id)
        .map(|state| {
            let mut line = format!("note: {}", ran_in(state.rounds, total, state, main));
            let there = ratios_in(state.id);
            if let Some(there_text) = ratios(&there) {
                let were = if there.len() == 1 { "the ratio was" } else { "the ratios were" };
                line.push_str(&format!(": there {were} {there_text}"));
                if let Some(main_text) = &in_main {
                    line.push_str(&format!(" ({main_text} in the main state)"));
                }
            }
            line.push('.');
            line
        })
        .collect();
    Some(lines.join("\n"))
}

/// `2 of 20 rounds ran in a state where moving 4 KiB across CPUs cost 3.50x more`: the start
/// of every sentence on a state other than `main`, for the run's note and for a row's.
fn ran_in(rounds: u64, total: u64, state: &MachineState, main: &MachineState) -> String {
    format!(
        "{rounds} of {total} rounds ran in a state where moving 4 KiB across CPUs {}",
        cost(state, main)
    )
}

/// The same note for one row, in its own rounds: e.g. `2 of 20 rounds ran in a state where
/// moving 4 KiB across CPUs cost 3.50x more: there the ratio was 1.05x.` — one sentence per
/// state but the row's main state ([`states::main_state`]), joined by spaces. `None` when the
/// row ran in one state (or its rounds carry none), or `all` (the report's
/// [`Machine::states`](crate::report::Machine::states)) lacks its states.
pub fn row_states_note(all: &[MachineState], row: &Row) -> Option<String> {
    let figures = states::figures(&row.rounds);
    let main_figures = states::main_state(&figures).filter(|_| figures.len() >= 2)?;
    let state = |id: u32| all.iter().find(|s| s.id == id);
    let main = state(main_figures.state)?;
    let total: u64 = figures.iter().map(|f| f.rounds).sum();
    let sentences: Vec<String> = figures
        .iter()
        .filter(|f| f.state != main.id)
        .filter_map(|f| {
            let mut sentence = ran_in(f.rounds, total, state(f.state)?, main);
            if let Some(ratio) = f.ratio {
                sentence.push_str(&format!(": there the ratio was {}x", format::ratio(ratio)));
            }
            sentence.push('.');
            Some(sentence)
        })
        .collect();
    (!sentences.is_empty()).then(|| sentences.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::states::{assign, testing};

    /// 20 rounds of one row: the first `slow` in the slow state (4 KiB in 3.5 us, ratio 1.05),
    /// the rest in the fast one (1 us, ratio 1.30).
    fn report(slow: usize) -> Report {
        let rounds: Vec<(Option<u64>, u64, u64)> = (0..20)
            .map(|i| match i < slow {
                true => (Some(3_500), 6_000, 6_300),
                false => (Some(1_000), 2_000, 2_600),
            })
            .collect();
        let mut report = testing::one_row(&rounds);
        assign(&mut report);
        report
    }

    #[test]
    fn a_few_rounds_in_another_state_are_named_with_their_ratio() {
        let report = report(2);
        let note = states_note(&report).unwrap();
        assert_eq!(
            note,
            "note: 2 of 20 rounds ran in a state where moving 4 KiB across CPUs cost 3.50x more: \
             there the ratio was 1.05x (1.30x in the main state)."
        );
        let row = row_states_note(&report.machine.states, &report.rows[0]).unwrap();
        assert_eq!(
            row,
            "2 of 20 rounds ran in a state where moving 4 KiB across CPUs cost 3.50x more: there \
             the ratio was 1.05x."
        );
    }

    #[test]
    fn a_faster_minority_state_reads_as_costing_less() {
        let note = states_note(&report(18)).unwrap();
        assert!(
            note.starts_with("note: 2 of 20 rounds ran in a state where moving 4 KiB"),
            "{note}"
        );
        assert!(note.contains("cost 3.50x less: there the ratio was 1.30x"), "{note}");
    }

    #[test]
    fn one_state_has_no_note() {
        let report = report(0);
        assert_eq!(report.machine.states.len(), 1);
        assert_eq!(states_note(&report), None);
        assert_eq!(row_states_note(&report.machine.states, &report.rows[0]), None);
    }
}
