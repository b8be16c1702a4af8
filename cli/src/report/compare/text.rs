//! `peer compare` in words: how the pairs were judged, the rows that differ, how the floors
//! moved, and what was only in one report.

use std::fmt;
use std::io::{self, Write};

use super::judge::{Comparison, Mode, Outcome, Pair, StatesCompared};
use crate::report::model::MachineState;
use peerpipe::units::format_nanos;

/// Writes how the pairs were judged, the differing rows (paired in a shared machine state: the
/// change of the time each adds to its floor with its 95 % interval, in percent of A's round
/// trip, both added times, the state and both ratios; paired without states: both ratios with
/// their intervals, the change in time and percent, and how far its interval lies from 0;
/// absolute: both p50s, the difference, the change and the noise of each file), how the floors
/// moved, then how many rows and baselines were compared, how many differ and which are only
/// in A or only in B.
///
/// # Errors
/// Errors of `out`.
pub fn render(comparison: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let t = &comparison.thresholds;
    let abs = format_nanos(t.abs.as_nanos() as f64);
    match comparison.mode {
        Mode::Paired if comparison.states.is_some() => {
            writeln!(
                out,
                "paired, in a machine state both reports ran in: a row differs when the time it \
                 adds to its own floor"
            )?;
            writeln!(
                out,
                "there moved by more than {abs} and {}% of A's round trip there, and the 95% \
                 interval of that change",
                t.rel_pct
            )?;
            writeln!(out, "leaves out 0 (the ratios are shown as context).")?;
        }
        Mode::Paired => {
            writeln!(
                out,
                "paired: a row differs when its ratio to its own floor moved by more than {}% \
                 and {abs} (at the floors' mean p50),",
                t.rel_pct
            )?;
            writeln!(out, "and the 95% interval of that change leaves out 0.")?;
        }
        Mode::Absolute => {
            writeln!(
                out,
                "absolute: a p50 differs when |B - A| exceeds {abs}, {}% of A and the noise of \
                 either file",
                t.rel_pct
            )?;
            writeln!(out, "(noise: spread of the per-round p50s; - = one round, noise 0).")?;
        }
    }
    if let Some((a, b)) = &comparison.machines_differ {
        writeln!(out, "note: measured on different machines: A on {a:?}, B on {b:?}.")?;
    }
    if let Some((a, b)) = &comparison.clocks_differ {
        writeln!(
            out,
            "note: timed with different clocks: A with {a}, B with {b}; a span can read tens of \
             ns apart between them (docs/PERFORMANCE.md, \"The clock\")."
        )?;
    }
    if let Some((a, b)) = comparison.states_differ {
        writeln!(
            out,
            "note: the machine was in different states: moving 4 KiB between the first two \
             CPUs and back took {} in A and {} in B for most of each run. A cost added to every \
             transfer changes ratios as well as times; compare runs taken in one state \
             (docs/PERFORMANCE.md, \"The machine's state\").",
            format_nanos(a as f64),
            format_nanos(b as f64)
        )?;
    }
    if let Some(states) = &comparison.states {
        writeln!(out, "{}", states_line(states))?;
    }
    let differing: Vec<&Pair> = comparison.differing().collect();
    if comparison.no_state_in_common() {
        if comparison.states.as_ref().is_some_and(|s| !s.shared.is_empty()) {
            writeln!(
                out,
                "no row ran in a machine state both reports share, or long enough there (in more \
                 than one generation) to be judged: nothing to compare; measure again until \
                 both runs hold a state in common."
            )?;
        }
    } else if differing.is_empty() {
        writeln!(out, "nothing differs beyond the thresholds and the noise.")?;
        let smallest = comparison
            .rows
            .iter()
            .filter_map(|p| p.paired?.smallest_found_ns(comparison.thresholds))
            .max_by(f64::total_cmp);
        if let Some(smallest) = smallest {
            writeln!(
                out,
                "these two runs could not tell a change of added time under {} from their \
                 noise and the thresholds (the least sure row);\nlonger runs narrow it: --duration, \
                 --rounds and --generations 4x about halve it.",
                format_nanos(smallest.round())
            )?;
        }
    } else {
        writeln!(out)?;
        let (paired, absolute): (Vec<&Pair>, Vec<&Pair>) =
            differing.iter().partition(|p| p.paired.is_some());
        let (added, ratios): (Vec<&Pair>, Vec<&Pair>) =
            paired.iter().partition(|p| p.paired.is_some_and(|c| c.on_added_time()));
        if !added.is_empty() {
            render_added(&added, comparison.states.as_ref(), out)?;
        }
        if !ratios.is_empty() {
            render_paired(&ratios, out)?;
        }
        if !absolute.is_empty() {
            render_absolute(&absolute, out)?;
        }
        writeln!(out)?;
    }
    if comparison.mode == Mode::Paired {
        floors_moved(&comparison.baselines, out)?;
    }
    writeln!(
        out,
        "compared {} rows and {} baselines: {} differ; {} only in A, {} only in B.",
        comparison.rows.len(),
        comparison.baselines.len(),
        differing.len(),
        comparison.only_in_a.len(),
        comparison.only_in_b.len()
    )?;
    let other_state = comparison.rows.iter().filter(|p| p.outcome == Outcome::OtherState).count();
    if other_state > 0 && !comparison.no_state_in_common() {
        writeln!(
            out,
            "{other_state} rows ran in no machine state both reports share, or not long enough \
             there to be judged, and were not judged."
        )?;
    }
    let on_ratios =
        comparison.rows.iter().filter(|p| p.paired.is_some_and(|c| !c.on_added_time())).count();
    if comparison.states.is_some() && on_ratios > 0 {
        writeln!(
            out,
            "{on_ratios} rows had no figures per machine state in one of the files and were \
             judged on their overall ratios."
        )?;
    }
    let unpaired = comparison
        .rows
        .iter()
        .filter(|p| p.paired.is_none() && p.outcome != Outcome::OtherState)
        .count();
    if comparison.mode == Mode::Paired && unpaired > 0 {
        writeln!(
            out,
            "{unpaired} rows had no paired ratio in one of the files (no floor of their bytes was \
             measured) and were judged by their p50."
        )?;
    }
    if comparison.rows.is_empty() && comparison.baselines.is_empty() {
        writeln!(out, "warning: the two reports have no row in common.")?;
    }
    for (name, labels) in [("A", &comparison.only_in_a), ("B", &comparison.only_in_b)] {
        for label in labels.iter().take(LIST_AT_MOST) {
            writeln!(out, "  only in {name}: {label}")?;
        }
        if labels.len() > LIST_AT_MOST {
            writeln!(out, "  only in {name}: ... and {} more", labels.len() - LIST_AT_MOST)?;
        }
    }
    Ok(())
}

/// The table of rows judged on added time in a shared machine state: the change of the time
/// each adds to its floor with its 95 % interval, that change in percent of A's
/// round trip, both added times, the state (its 4 KiB cross-CPU round trip in A and in B) and
/// both ratios, as context.
fn render_added(
    pairs: &[&Pair],
    states: Option<&StatesCompared>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let ns = |x: f64| format_nanos(x.round());
    let signed = |x: f64| Signed(x.round() as i128);
    let probe = |all: Option<&Vec<MachineState>>, id: u32| {
        all.and_then(|all| all.iter().find(|s| s.id == id))
            .map_or("?".to_owned(), |s| format_nanos(s.probe_ns as f64))
    };
    let cells: Vec<(&str, [String; 6])> = pairs
        .iter()
        .filter_map(|p| {
            let c = p.paired.as_ref()?;
            let (median, [lo, hi]) = c.added_change_ns()?;
            let (a, b) = (c.a_added?.median_ns, c.b_added?.median_ns);
            let (sa, sb) = c.states?;
            let row = [
                format!("{} [{}, {}]", signed(median), signed(lo), signed(hi)),
                format_change(c.change_pct()),
                ns(a),
                ns(b),
                format!("{}/{}", probe(states.map(|s| &s.a), sa), probe(states.map(|s| &s.b), sb)),
                format!("{:.3}x -> {:.3}x", c.a_ratio, c.b_ratio),
            ];
            Some((p.label.as_str(), row))
        })
        .collect();
    let header =
        ["added B-A [95% CI]", "change", "A added", "B added", "state: 4 KiB A/B", "ratio A -> B"];
    let mut widths = header.map(|h| h.chars().count());
    for (_, row) in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let width = cells.iter().map(|(label, _)| label.chars().count()).max().unwrap_or(0);
    let line = |label: &str, row: [&str; 6], out: &mut dyn Write| {
        let mut text = format!("{label:<width$}");
        for (cell, w) in row.iter().zip(widths) {
            text.push_str(&format!("  {cell:>w$}"));
        }
        writeln!(out, "{}", text.trim_end())
    };
    line("", header, out)?;
    for (label, row) in &cells {
        line(label, row.each_ref().map(String::as_str), out)?;
    }
    Ok(())
}

/// The paired table: both ratios, the change in time and percent, the change of the time the
/// row adds to its floor (`added B-A`, with its 95 % interval), and how far the ratio's change
/// lies from 0 beyond its interval.
fn render_paired(pairs: &[&Pair], out: &mut dyn Write) -> io::Result<()> {
    let width = pairs.iter().map(|p| p.label.chars().count()).max().unwrap_or(0);
    let added: Vec<String> = pairs
        .iter()
        .map(|p| {
            let change = p.paired.as_ref().and_then(|c| c.added_change_ns());
            change.map_or("-".to_owned(), |(median, [lo, hi])| {
                let ns = |x: f64| Signed(x.round() as i128);
                format!("{} [{}, {}]", ns(median), ns(lo), ns(hi))
            })
        })
        .collect();
    let added_width = added.iter().map(|a| a.chars().count()).max().unwrap_or(0).max(9);
    writeln!(
        out,
        "{:<width$}  {:>20} {:>20} {:>9} {:>8} {:>added_width$}  how sure",
        "", "A ratio [95% CI]", "B ratio [95% CI]", "diff", "change", "added B-A"
    )?;
    for (p, added) in pairs.iter().zip(&added) {
        let Some(c) = &p.paired else { continue };
        writeln!(
            out,
            "{:<width$}  {:>20} {:>20} {:>9} {:>8} {:>added_width$}  interval {:.3}x clear of 0",
            p.label,
            ratio_with_interval(c.a_ratio, c.a_ci),
            ratio_with_interval(c.b_ratio, c.b_ci),
            Signed(p.difference_ns()),
            format_change(c.change_pct()),
            added,
            c.gap(),
        )?;
    }
    Ok(())
}

/// What the machine's states of A and B mean for the comparison: the states rows were judged
/// in, or, when the reports share none, why nothing could be compared.
fn states_line(states: &StatesCompared) -> String {
    let took = |s: &MachineState| format_nanos(s.probe_ns as f64);
    let list = |all: Vec<String>| match all.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    if states.shared.is_empty() {
        // How fast the second CPU computed sets states apart too (`across_runs::same_compute`).
        let took = |s: &MachineState| match s.compute_ns {
            Some(ns) => {
                format!("{} (the second CPU copying in {})", took(s), format_nanos(ns as f64))
            }
            None => took(s),
        };
        let (a, b) = (states.a.iter().map(took).collect(), states.b.iter().map(took).collect());
        let (a_states, b_states) = (states.a.len(), states.b.len());
        return format!(
            "A ran in {} where moving 4 KiB across CPUs took {}, B in {} where it took {}: no \
             state in common, nothing to compare (measure again until both runs hold one).",
            if a_states == 1 { "a state" } else { "states" },
            list(a),
            if b_states == 1 { "one" } else { "states" },
            list(b),
        );
    }
    let find = |all: &[MachineState], id: u32| all.iter().find(|s| s.id == id).copied();
    let shared: Vec<(MachineState, MachineState)> = states
        .shared
        .iter()
        .filter_map(|&(a, b)| Some((find(&states.a, a)?, find(&states.b, b)?)))
        .collect();
    let left_out = |all: &[MachineState], shared: &dyn Fn(u32) -> bool| -> u64 {
        all.iter().filter(|s| !shared(s.id)).map(|s| s.rounds).sum()
    };
    let a_out = left_out(&states.a, &|id| states.shared.iter().any(|&(a, _)| a == id));
    let b_out = left_out(&states.b, &|id| states.shared.iter().any(|&(_, b)| b == id));
    let mut line = format!(
        "machine states: rows are judged in the state{} both reports ran in, where moving 4 KiB \
         across CPUs took {} in A, {} in B",
        if shared.len() == 1 { "" } else { "s" },
        list(shared.iter().map(|(a, _)| took(a)).collect()),
        list(shared.iter().map(|(_, b)| took(b)).collect()),
    );
    if a_out + b_out > 0 {
        let total = |all: &[MachineState]| all.iter().map(|s| s.rounds).sum::<u64>();
        line.push_str(&format!(
            "; rounds in other states are left out ({a_out} of {} in A, {b_out} of {} in B)",
            total(&states.a),
            total(&states.b)
        ));
    }
    line.push('.');
    line
}

fn render_absolute(pairs: &[&Pair], out: &mut dyn Write) -> io::Result<()> {
    let width = pairs.iter().map(|p| p.label.chars().count()).max().unwrap_or(0);
    writeln!(
        out,
        "{:<width$}  {:>8} {:>8} {:>9} {:>9} {:>8} {:>8}",
        "", "A p50", "B p50", "diff", "change", "noise A", "noise B"
    )?;
    for p in pairs {
        writeln!(
            out,
            "{:<width$}  {:>8} {:>8} {:>9} {:>9} {:>8} {:>8}",
            p.label,
            format_nanos(p.a_p50_ns as f64),
            format_nanos(p.b_p50_ns as f64),
            Signed(p.difference_ns()),
            p.change_pct().map_or("-".to_owned(), format_change),
            p.a_noise_ns.map_or("-".to_owned(), |n| format_nanos(n as f64)),
            p.b_noise_ns.map_or("-".to_owned(), |n| format_nanos(n as f64)),
        )?;
    }
    Ok(())
}

/// `floors: B/A of the p50 ranged 0.98x-1.35x over 4 floors (the machine's speed; not judged)`.
fn floors_moved(baselines: &[Pair], out: &mut dyn Write) -> io::Result<()> {
    let ratios: Vec<f64> = baselines
        .iter()
        .filter(|p| p.a_p50_ns > 0)
        .map(|p| p.b_p50_ns as f64 / p.a_p50_ns as f64)
        .collect();
    let (Some(lo), Some(hi)) =
        (ratios.iter().copied().reduce(f64::min), ratios.iter().copied().reduce(f64::max))
    else {
        return Ok(());
    };
    writeln!(
        out,
        "floors: B/A of their p50 ranged {lo:.2}x-{hi:.2}x over {} floors (the machine's speed, \
         which pairing takes out; --mode absolute judges them).",
        ratios.len()
    )
}

/// `1.38x [1.35, 1.41]`.
fn ratio_with_interval(ratio: f64, ci: [f64; 2]) -> String {
    format!("{ratio:.3}x [{:.3}, {:.3}]", ci[0], ci[1])
}

/// A change in percent: one decimal below 1000 %, none above.
fn format_change(pct: f64) -> String {
    if pct.abs() < 1000.0 { format!("{pct:+.1}%") } else { format!("{pct:+.0}%") }
}

/// Rows listed by name under "only in A/B" before the rest are only counted.
const LIST_AT_MOST: usize = 12;

/// A signed nanosecond difference with its unit: `+27.9us`, `-850ns`.
pub(super) struct Signed(pub(super) i128);

impl fmt::Display for Signed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { '-' } else { '+' };
        let text = format!("{sign}{}", format_nanos(self.0.unsigned_abs() as f64));
        f.pad(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_differences_carry_sign_and_unit() {
        assert_eq!(format!("{:>8}", Signed(27_900)), " +27.9us");
        assert_eq!(Signed(-850).to_string(), "-850ns");
    }
}
