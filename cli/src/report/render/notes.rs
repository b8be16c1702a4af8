//! The notes on the machine that the table prints under its sections: contention (other tasks
//! taking a CPU), the machine's state as the rounds' probes saw it, and changes of speed
//! during the run.

use crate::report::format;
use crate::report::model::{BaselineRow, CONTENDED_PREEMPTIONS, Report, Round, contended_share};

use super::states::states_note;

/// A floor whose per-round p50 varied by more than this factor (max ÷ min) within its group
/// is reported as a change of the machine's speed during the run.
pub const SPEED_CHANGE_FACTOR: f64 = 1.5;

/// Share of contended rounds (see [`contended_share`]) above which the table says so.
pub const CONTENDED_NOTE_SHARE: f64 = 0.25;

/// One line when more than [`CONTENDED_NOTE_SHARE`] of all rounds (floors and rows) were
/// contended: another task kept taking a CPU from the client or a server, which adds about the
/// same wait to a floor and its rows and so lowers ratios — a busy machine, not a slow one.
pub fn contention(report: &Report) -> Option<String> {
    let rounds: Vec<Round> = report
        .baseline
        .iter()
        .flat_map(|b| b.rounds.iter().copied())
        .chain(report.rows.iter().flat_map(|r| r.rounds.iter().copied()))
        .collect();
    let share = contended_share(&rounds)?;
    (share > CONTENDED_NOTE_SHARE).then(|| {
        format!(
            "note: in {:.0}% of the rounds another task took a CPU from the client or a server \
             ({}+ preemptions in a burst):\nthe machine was busy; contention adds about the same \
             wait to a floor and its rows, so ratios read lower than on a quiet machine.",
            share * 100.0,
            CONTENDED_PREEMPTIONS
        )
    })
}

/// The machine's state as the rounds' probes saw it ([`crate::report::states`]): one line
/// with the 4 KiB round trip between the first two CPUs in each state found and how many
/// rounds ran in it; then, when there is more than one state, a note on each state but the
/// main one ([`states_note`]). `None` when no round was probed (one CPU).
pub fn machine_state(report: &Report) -> Option<String> {
    let states = &report.machine.states;
    if states.is_empty() {
        return None;
    }
    let list: Vec<String> = states
        .iter()
        .map(|s| format!("{} in {} rounds", format::ns(s.probe_ns), s.rounds))
        .collect();
    let line = format!(
        "machine state: 4 KiB moved between the first two CPUs and back took {} (probed every \
         round; {} found).",
        list.join(", "),
        match states.len() {
            1 => "one state".to_owned(),
            n => format!("{n} states"),
        }
    );
    Some(match states_note(report) {
        Some(note) => format!("{line}\n{note}"),
        None => line,
    })
}

/// One line when some floor's per-round p50 varied by more than [`SPEED_CHANGE_FACTOR`]: the
/// machine changed speed during the run, which paired ratios survive and absolute times do
/// not.
pub fn speed_change(report: &Report) -> Option<String> {
    let spread = |b: &BaselineRow| {
        b.round_p50_range_ns().map(|(lo, hi)| (hi as f64 / lo.max(1) as f64, lo, hi))
    };
    let changed: Vec<(f64, u64, u64, &BaselineRow)> = report
        .baseline
        .iter()
        .filter_map(|b| spread(b).map(|(f, lo, hi)| (f, lo, hi, b)))
        .filter(|&(f, ..)| f > SPEED_CHANGE_FACTOR)
        .collect();
    let &(factor, lo, hi, worst) = changed.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    let others = match changed.len() {
        1 => String::new(),
        n => format!(" (and {} other floors)", n - 1),
    };
    Some(format!(
        "note: the {} B floor ({}, {}, {}) ranged {}..{} ({}x) across rounds{others}: the \
         machine changed speed during the run; ratios are paired and hold, absolute times do not.",
        worst.bytes,
        worst.transport,
        worst.wait,
        worst.pin,
        format::ns(lo),
        format::ns(hi),
        format::ratio(factor)
    ))
}
