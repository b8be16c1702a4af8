//! Comparing two reports against their measured noise.
//!
//! Rows of A and B are matched by (dtype, elements, path, handler, wait, pin, transport),
//! baselines by (bytes, transport, wait, pin). A matched pair differs when its p50 moved by more than the
//! absolute threshold, more than the relative threshold (percent of A's p50), and more than the
//! noise: the larger spread of p50 across `--repeat` runs recorded in either file.

use std::fmt;
use std::io::{self, Write};
use std::time::Duration;

use super::{BaselineRow, Report, Row};
use crate::units::format_nanos;

/// Thresholds a difference must exceed (both) to be reported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Thresholds {
    /// Absolute.
    pub abs: Duration,
    /// Relative, percent of A's p50.
    pub rel_pct: f64,
}

impl Default for Thresholds {
    /// 10 µs and 10 %, the defaults of `peer compare`.
    fn default() -> Thresholds {
        Thresholds { abs: Duration::from_micros(10), rel_pct: 10.0 }
    }
}

/// What became of one matched pair, tested in this order: the first threshold the difference
/// does not exceed is named.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// |B − A| is at most the absolute threshold.
    WithinAbs,
    /// |B − A| is at most the relative threshold of A's p50.
    WithinRel,
    /// |B − A| is at most the noise (the larger p50 spread across repeats of A and of B).
    WithinNoise,
    /// |B − A| exceeds all three: reported.
    Differs,
}

/// One row (or baseline) present in both reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    /// What was measured, e.g. `f64 x 500 echo zero-copy, wait block, pin free`.
    pub label: String,
    /// A's p50 round trip.
    pub a_p50_ns: u64,
    /// B's p50 round trip.
    pub b_p50_ns: u64,
    /// Spread of p50 across A's repeats; `None` when A measured it once.
    pub a_noise_ns: Option<u64>,
    /// Spread of p50 across B's repeats; `None` when B measured it once.
    pub b_noise_ns: Option<u64>,
    /// Whether it differs, or which threshold it stays within.
    pub outcome: Outcome,
}

impl Pair {
    /// B − A in nanoseconds.
    pub fn difference_ns(&self) -> i128 {
        self.b_p50_ns as i128 - self.a_p50_ns as i128
    }

    /// B − A in percent of A; `None` when A's p50 is zero.
    pub fn change_pct(&self) -> Option<f64> {
        (self.a_p50_ns > 0).then(|| self.difference_ns() as f64 * 100.0 / self.a_p50_ns as f64)
    }
}

/// The result of [`compare`].
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The thresholds used.
    pub thresholds: Thresholds,
    /// Matched rows, in A's order.
    pub rows: Vec<Pair>,
    /// Matched baselines, in A's order.
    pub baselines: Vec<Pair>,
    /// Labels of rows and baselines found only in A.
    pub only_in_a: Vec<String>,
    /// Labels of rows and baselines found only in B.
    pub only_in_b: Vec<String>,
    /// The CPU models of A and B when they differ.
    pub machines_differ: Option<(String, String)>,
}

impl Comparison {
    /// True when any matched row or baseline differs beyond the thresholds and the noise.
    /// Rows present in only one file do not count.
    pub fn differs(&self) -> bool {
        self.rows.iter().chain(&self.baselines).any(|p| p.outcome == Outcome::Differs)
    }

    /// The matched rows and baselines that differ, rows first.
    pub fn differing(&self) -> impl Iterator<Item = &Pair> {
        self.rows.iter().chain(&self.baselines).filter(|p| p.outcome == Outcome::Differs)
    }
}

/// Matches the rows and baselines of `a` and `b` and judges each pair against `thresholds`
/// and the noise. A key that occurs several times in a file (the same placement listed twice)
/// is matched occurrence by occurrence.
///
/// # Examples
/// ```
/// use peerpipe::report::compare::{Thresholds, compare};
/// use peerpipe::report::{ConfigRecord, Machine, Report};
/// let empty = Report { peerpipe: "0.1.0".into(), machine: Machine::default(),
///     config: ConfigRecord::default(), baseline: vec![], rows: vec![], sync_costs: vec![] };
/// assert!(!compare(&empty, &empty, Thresholds::default()).differs());
/// ```
pub fn compare(a: &Report, b: &Report, thresholds: Thresholds) -> Comparison {
    let (rows, mut only_in_a, mut only_in_b) =
        match_up(&a.rows, &b.rows, row_key, row_label, |x, y| pair(x, y, thresholds));
    let (baselines, base_a, base_b) =
        match_up(&a.baseline, &b.baseline, baseline_key, baseline_label, |x, y| {
            base_pair(x, y, thresholds)
        });
    only_in_a.extend(base_a);
    only_in_b.extend(base_b);
    let machines_differ =
        (a.machine.cpu != b.machine.cpu).then(|| (a.machine.cpu.clone(), b.machine.cpu.clone()));
    Comparison { thresholds, rows, baselines, only_in_a, only_in_b, machines_differ }
}

/// Pairs the k-th occurrence of each key in `a` with the k-th in `b`.
fn match_up<'a, T, K: PartialEq>(
    a: &'a [T],
    b: &'a [T],
    key: impl Fn(&'a T) -> K,
    label: impl Fn(&T) -> String,
    judge: impl Fn(&T, &T) -> Pair,
) -> (Vec<Pair>, Vec<String>, Vec<String>) {
    let mut used = vec![false; b.len()];
    let mut pairs = Vec::new();
    let mut only_in_a = Vec::new();
    for x in a {
        let k = key(x);
        match (0..b.len()).find(|&i| !used[i] && key(&b[i]) == k) {
            Some(i) => {
                used[i] = true;
                pairs.push(judge(x, &b[i]));
            }
            None => only_in_a.push(label(x)),
        }
    }
    let only_in_b = b.iter().zip(&used).filter(|(_, u)| !**u).map(|(y, _)| label(y)).collect();
    (pairs, only_in_a, only_in_b)
}

type RowKey<'a> = (&'a str, u64, &'a str, &'a str, &'a str, &'a str, &'a str);

fn row_key(row: &Row) -> RowKey<'_> {
    (&row.dtype, row.elements, &row.path, &row.handler, &row.wait, &row.pin, &row.transport)
}

fn baseline_key(base: &BaselineRow) -> (u64, &str, &str, &str) {
    (base.bytes, &base.transport, &base.wait, &base.pin)
}

fn row_label(row: &Row) -> String {
    let transport =
        if row.transport == "pipe" { String::new() } else { format!(" ({})", row.transport) };
    format!(
        "{} x {} {} {}{transport}, wait {}, pin {}",
        row.dtype, row.elements, row.handler, row.path, row.wait, row.pin
    )
}

fn baseline_label(base: &BaselineRow) -> String {
    let transport =
        if base.transport == "pipe" { String::new() } else { format!(" ({})", base.transport) };
    format!("baseline {} B{transport}, wait {}, pin {}", base.bytes, base.wait, base.pin)
}

/// A p50 and, when it was repeated, its noise (the spread of the repeats).
fn measured(p50: u64, repeats: &[u64], spread: u64) -> (u64, Option<u64>) {
    (p50, (repeats.len() > 1).then_some(spread))
}

fn pair(a: &Row, b: &Row, thresholds: Thresholds) -> Pair {
    judged(
        row_label(a),
        measured(a.rtt_ns.p50, &a.p50_repeats_ns, a.p50_spread_ns()),
        measured(b.rtt_ns.p50, &b.p50_repeats_ns, b.p50_spread_ns()),
        thresholds,
    )
}

fn base_pair(a: &BaselineRow, b: &BaselineRow, thresholds: Thresholds) -> Pair {
    judged(
        baseline_label(a),
        measured(a.rtt_ns.p50, &a.p50_repeats_ns, a.p50_spread_ns()),
        measured(b.rtt_ns.p50, &b.p50_repeats_ns, b.p50_spread_ns()),
        thresholds,
    )
}

fn judged(
    label: String,
    (a_p50_ns, a_noise_ns): (u64, Option<u64>),
    (b_p50_ns, b_noise_ns): (u64, Option<u64>),
    thresholds: Thresholds,
) -> Pair {
    let noise = a_noise_ns.max(b_noise_ns).unwrap_or(0);
    Pair {
        label,
        a_p50_ns,
        b_p50_ns,
        a_noise_ns,
        b_noise_ns,
        outcome: judge(a_p50_ns, b_p50_ns, noise, thresholds),
    }
}

/// The outcome for p50s `a` and `b` with `noise`: the difference must exceed the absolute
/// threshold, the relative one and the noise, strictly.
fn judge(a: u64, b: u64, noise: u64, thresholds: Thresholds) -> Outcome {
    let difference = a.abs_diff(b);
    let abs = thresholds.abs.as_nanos();
    if (difference as u128) <= abs {
        Outcome::WithinAbs
    } else if difference as f64 <= a as f64 * thresholds.rel_pct / 100.0 {
        Outcome::WithinRel
    } else if difference <= noise {
        Outcome::WithinNoise
    } else {
        Outcome::Differs
    }
}

/// Writes the differing rows side by side (A's p50, B's p50, the difference, the change in
/// percent of A and the noise of each file), then how many rows and baselines were compared,
/// how many differ and which are only in A or only in B.
///
/// # Errors
/// Errors of `out`.
pub fn render(comparison: &Comparison, out: &mut dyn Write) -> io::Result<()> {
    let t = &comparison.thresholds;
    writeln!(
        out,
        "a p50 differs when |B - A| exceeds {}, {}% of A and the noise of either file",
        format_nanos(t.abs.as_nanos() as f64),
        t.rel_pct
    )?;
    writeln!(out, "(noise: spread of p50 across --repeat runs; - = measured once, noise 0).")?;
    if let Some((a, b)) = &comparison.machines_differ {
        writeln!(out, "note: measured on different machines: A on {a:?}, B on {b:?}.")?;
    }
    let differing: Vec<&Pair> = comparison.differing().collect();
    if differing.is_empty() {
        writeln!(out, "nothing differs beyond the thresholds and the noise.")?;
    } else {
        let width = differing.iter().map(|p| p.label.chars().count()).max().unwrap_or(0);
        writeln!(out)?;
        writeln!(
            out,
            "{:<width$}  {:>8} {:>8} {:>9} {:>9} {:>8} {:>8}",
            "", "A p50", "B p50", "diff", "change", "noise A", "noise B"
        )?;
        for p in &differing {
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
        writeln!(out)?;
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

/// A change in percent: one decimal below 1000 %, none above.
fn format_change(pct: f64) -> String {
    if pct.abs() < 1000.0 { format!("{pct:+.1}%") } else { format!("{pct:+.0}%") }
}

/// Rows listed by name under "only in A/B" before the rest are only counted.
const LIST_AT_MOST: usize = 12;

/// A signed nanosecond difference with its unit: `+27.9us`, `-850ns`.
struct Signed(i128);

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

    fn t(abs_us: u64, rel_pct: f64) -> Thresholds {
        Thresholds { abs: Duration::from_micros(abs_us), rel_pct }
    }

    #[test]
    fn each_threshold_is_strict_and_checked_in_order() {
        assert_eq!(judge(100_000, 110_000, 0, t(10, 1.0)), Outcome::WithinAbs);
        assert_eq!(judge(100_000, 110_500, 0, t(10, 10.5)), Outcome::WithinRel);
        assert_eq!(judge(100_000, 110_501, 0, t(10, 10.5)), Outcome::Differs);
        assert_eq!(judge(100_000, 111_000, 11_000, t(10, 10.0)), Outcome::WithinNoise);
        assert_eq!(judge(100_000, 111_000, 10_999, t(10, 10.0)), Outcome::Differs);
        // The relative threshold is a share of A: 11 us is within 10 % of 111 us.
        assert_eq!(judge(111_000, 100_000, 0, t(10, 10.0)), Outcome::WithinRel);
    }

    #[test]
    fn signed_differences_carry_sign_and_unit() {
        assert_eq!(format!("{:>8}", Signed(27_900)), " +27.9us");
        assert_eq!(Signed(-850).to_string(), "-850ns");
    }
}
