//! `peer repeat`: does the interval a run prints hold when the user runs it again?
//!
//! The same report is run N times (each writing its `--json`), and for every row each run's
//! ratio interval is checked against the **median ratio of the other runs in its machine
//! state** (runs whose main state's 4 KiB probe is within
//! [`across_runs::ACROSS_RUNS_FACTOR`] of its own, and whose row's rounds saw the second CPU
//! copy within [`across_runs::COMPUTE_ACROSS_RUNS_FACTOR`] of its own): `held` when the
//! interval contains it, `MISSED` when not, `unresolved` when the run itself said its ratio
//! is no result ([`RatioVerdict`]), and `alone` when no other run ran in its state. The tally
//! counts held and unresolved runs out of those with others in their state: a run that says
//! it cannot bound its figure has not misled anyone. The figures are recomputed from each
//! report's recorded rounds with this `peer`'s statistics ([`states::headline_figures`]), so
//! reports written by an earlier build are judged by the interval this one prints.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use peerpipe::error::{Error, Result};

use super::across_runs;
use super::format;
use super::model::Report;
use super::ratio::RatioVerdict;
use super::states;

/// Share of the runs (with others in their state) whose interval must hold the others'
/// median, or say unresolved, for the check to pass: 9 of 10.
pub const TARGET_SHARE: f64 = 0.9;

/// One run's figures for one row.
#[derive(Clone, Debug, PartialEq)]
pub struct RunFigure {
    /// The row's ratio in its main state.
    pub ratio: Option<f64>,
    /// Its 95 % interval.
    pub ci: Option<[f64; 2]>,
    /// The 4 KiB probe of that state (the run's main state when the rounds carry no state).
    pub probe_ns: Option<u64>,
    /// How fast the second CPU computed in the rounds the ratio comes from
    /// ([`StateFigures::compute_ns`](super::states::StateFigures::compute_ns)).
    pub compute_ns: Option<u64>,
    /// The row's server p50 over the whole run: how fast the server's CPU computed, which
    /// the 4 KiB probe does not see and which can differ from one run to the next.
    pub server_ns: Option<u64>,
}

/// What became of one run's interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Held {
    /// It contains the median of the other runs in its state (the median given).
    Yes(f64),
    /// It does not.
    Missed(f64),
    /// The run called its ratio unresolved (the median of the others given).
    Unresolved(f64),
    /// No other run ran in its state, or the run has no ratio: nothing to hold.
    Alone,
}

/// Counts over the runs of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Tally {
    /// Runs whose interval held the others' median.
    pub held: usize,
    /// Runs that said unresolved.
    pub unresolved: usize,
    /// Runs whose interval missed it.
    pub missed: usize,
    /// Runs with no other run in their state.
    pub alone: usize,
}

impl Tally {
    /// Runs that had others in their state.
    pub fn judged(&self) -> usize {
        self.held + self.unresolved + self.missed
    }

    /// True when held + unresolved reach [`TARGET_SHARE`] of the judged runs (and some were).
    pub fn passes(&self) -> bool {
        self.judged() > 0
            && (self.held + self.unresolved) as f64 >= TARGET_SHARE * self.judged() as f64
    }
}

/// Whether each run's interval held the median ratio of the other runs in its state.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::repeat::{Held, RunFigure, judge};
/// let run = |ratio: f64, half: f64, probe_ns| RunFigure {
///     ratio: Some(ratio), ci: Some([ratio - half, ratio + half]), probe_ns: Some(probe_ns),
///     compute_ns: None, server_ns: None };
/// let runs = [run(1.30, 0.02, 1000), run(1.31, 0.02, 1050), run(1.32, 0.02, 980),
///     run(1.40, 0.01, 1020), run(1.06, 0.01, 3500)];
/// let held = judge(&runs);
/// assert_eq!(held[0], Held::Yes(1.32)); // the others of its state: 1.31, 1.32 and 1.40
/// assert!(matches!(held[3], Held::Missed(_)));
/// assert_eq!(held[4], Held::Alone); // the only run in the slow state
/// ```
pub fn judge(runs: &[RunFigure]) -> Vec<Held> {
    runs.iter()
        .enumerate()
        .map(|(i, run)| {
            let Some(ratio) = run.ratio else { return Held::Alone };
            let mut others: Vec<f64> = others_in_state(runs, i).filter_map(|o| o.ratio).collect();
            if others.is_empty() {
                return Held::Alone;
            }
            others.sort_unstable_by(f64::total_cmp);
            let median = crate::pairing::median(&others);
            match RatioVerdict::judge(Some(ratio), run.ci) {
                RatioVerdict::Resolved { ci: [lo, hi], .. } if lo <= median && median <= hi => {
                    Held::Yes(median)
                }
                RatioVerdict::Resolved { .. } => Held::Missed(median),
                _ => Held::Unresolved(median),
            }
        })
        .collect()
}

/// The runs other than `runs[i]` that ran in its state.
fn others_in_state(runs: &[RunFigure], i: usize) -> impl Iterator<Item = &RunFigure> {
    let run = &runs[i];
    runs.iter()
        .enumerate()
        .filter(move |&(j, other)| j != i && same_state(run, other))
        .map(|(_, o)| o)
}

/// A missed run whose server computed at another speed than the others of its state did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerApart {
    /// The run's number, from 1.
    pub run: usize,
    /// Its row's server p50.
    pub server_ns: u64,
    /// The median server p50 of the other runs in its state.
    pub others_ns: u64,
}

/// The missed runs (by `verdicts`, [`judge`]'s) whose row's server p50 is
/// [`across_runs::COMPUTE_ACROSS_RUNS_FACTOR`] or more apart from the median of the other runs in
/// their state. All runs are of one configuration, so the server did the same work in each:
/// a server that took that much longer ran on a CPU that computed slower, a change of the
/// machine between runs that the probes of one run did not see.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::repeat::{RunFigure, ServerApart, judge, missed_at_another_server_speed};
/// let run = |ratio: f64, server_ns| RunFigure { ratio: Some(ratio),
///     ci: Some([ratio - 0.02, ratio + 0.02]), probe_ns: Some(950), compute_ns: None,
///     server_ns: Some(server_ns) };
/// let runs = [run(1.20, 140), run(1.21, 140), run(1.19, 150), run(1.31, 240), run(1.20, 140)];
/// let apart = missed_at_another_server_speed(&runs, &judge(&runs));
/// assert_eq!(apart, [ServerApart { run: 4, server_ns: 240, others_ns: 140 }]);
/// ```
pub fn missed_at_another_server_speed(runs: &[RunFigure], verdicts: &[Held]) -> Vec<ServerApart> {
    let mut apart = Vec::new();
    for (i, (run, verdict)) in runs.iter().zip(verdicts).enumerate() {
        let (Held::Missed(_), Some(server_ns)) = (verdict, run.server_ns) else { continue };
        let others = others_in_state(runs, i).filter_map(|o| o.server_ns).collect();
        let Some(others_ns) = crate::pairing::median_ns(others) else { continue };
        if !across_runs::within_factor(
            server_ns,
            others_ns,
            across_runs::COMPUTE_ACROSS_RUNS_FACTOR,
        ) {
            apart.push(ServerApart { run: i + 1, server_ns, others_ns });
        }
    }
    apart
}

/// Two runs' main states are one state when their probes are less than
/// [`across_runs::ACROSS_RUNS_FACTOR`] apart and their second CPUs computed alike
/// ([`across_runs::same_compute`]), or when neither run probed.
fn same_state(a: &RunFigure, b: &RunFigure) -> bool {
    same_probe(a.probe_ns, b.probe_ns) && across_runs::same_compute(a.compute_ns, b.compute_ns)
}

/// Whether two runs' probes put them in one state ([`across_runs::same_state_ns`]); runs that did
/// not probe are one state, never the same as one that did.
fn same_probe(a: Option<u64>, b: Option<u64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => across_runs::same_state_ns(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// The tally of [`judge`]'s verdicts.
pub fn tally(held: &[Held]) -> Tally {
    let mut tally = Tally::default();
    for verdict in held {
        match verdict {
            Held::Yes(_) => tally.held += 1,
            Held::Missed(_) => tally.missed += 1,
            Held::Unresolved(_) => tally.unresolved += 1,
            Held::Alone => tally.alone += 1,
        }
    }
    tally
}

/// Each row of each report (matched by row, in the first report's order) with its figures in
/// every run, recomputed from the recorded rounds.
pub fn figures(reports: &[Report]) -> Vec<(String, Vec<RunFigure>)> {
    let Some(first) = reports.first() else { return Vec::new() };
    first
        .rows
        .iter()
        .map(|row| {
            let runs = reports
                .iter()
                .map(|report| {
                    let found = report.rows.iter().find(|r| r.key() == row.key());
                    let headline = found.and_then(|r| states::headline_figures(&r.rounds));
                    let states = &report.machine.states;
                    let state =
                        headline.as_ref().and_then(|h| states.iter().find(|s| s.id == h.state));
                    RunFigure {
                        ratio: headline.and_then(|h| h.ratio),
                        ci: headline.and_then(|h| h.ratio_ci),
                        probe_ns: state.map(|s| s.probe_ns),
                        compute_ns: headline.and_then(|h| h.compute_ns),
                        server_ns: found.map(|r| r.server_ns.p50),
                    }
                })
                .collect();
            let id = &row.id;
            let label = format!(
                "{} x {} {} {}, {}, {}, {}",
                id.dtype, id.elements, id.handler, id.path, id.transport, id.wait, id.pin
            );
            (label, runs)
        })
        .collect()
}

/// Writes, per row, each run's ratio and interval, its state, the others' median and whether
/// the interval held it, then the tally. Returns true when every row's tally passes.
pub fn render(rows: &[(String, Vec<RunFigure>)], out: &mut dyn Write) -> io::Result<bool> {
    let mut all_pass = true;
    for (label, runs) in rows {
        writeln!(out, "{label}")?;
        writeln!(
            out,
            "  run  ratio [95% interval]       state (4 KiB)  CPU 2 copy   server p50  others' median  \
             interval"
        )?;
        let verdicts = judge(runs);
        for (i, (run, verdict)) in runs.iter().zip(&verdicts).enumerate() {
            let figure = RatioVerdict::judge(run.ratio, run.ci).text();
            let state = run.probe_ns.map_or_else(|| "-".to_owned(), format::ns);
            let compute = run.compute_ns.map_or_else(|| "-".to_owned(), format::ns);
            let server = run.server_ns.map_or_else(|| "-".to_owned(), format::ns);
            let (median, word) = match *verdict {
                Held::Yes(m) => (format!("{m:.3}x"), "held"),
                Held::Missed(m) => (format!("{m:.3}x"), "MISSED"),
                Held::Unresolved(m) => (format!("{m:.3}x"), "unresolved"),
                Held::Alone => ("-".to_owned(), "alone in its state"),
            };
            writeln!(
                out,
                "  {:>3}  {figure:<26} {state:>13}  {compute:>11}  {server:>10}  {median:>14}  {word}",
                i + 1
            )?;
        }
        let t = tally(&verdicts);
        let widths = interval_widths(runs);
        let width = if widths.is_empty() {
            "-".to_owned()
        } else {
            format!("{:.1}%", 100.0 * crate::pairing::median(&widths))
        };
        writeln!(
            out,
            "  held the others' median in {} of {} runs, unresolved in {}, missed in {}{}; \
             median interval width {width} of the ratio: {}",
            t.held,
            t.judged(),
            t.unresolved,
            t.missed,
            if t.alone > 0 {
                format!(" ({} alone in their state)", t.alone)
            } else {
                String::new()
            },
            if t.passes() { "holds (target 9 of 10)" } else { "DOES NOT HOLD (target 9 of 10)" },
        )?;
        let apart = missed_at_another_server_speed(runs, &verdicts);
        if !apart.is_empty() {
            writeln!(
                out,
                "  {} of the {} missed ran with the server's own p50 {}x or more from the \
                 others' in their state:\n  the server's CPU computed at another speed, a \
                 change between runs that one run's probes did not see",
                apart.len(),
                t.missed,
                across_runs::COMPUTE_ACROSS_RUNS_FACTOR,
            )?;
            for line in apart.chunks(3) {
                let each: Vec<String> = line
                    .iter()
                    .map(|a| {
                        let (own, others) = (format::ns(a.server_ns), format::ns(a.others_ns));
                        format!("run {}: {own} against {others}", a.run)
                    })
                    .collect();
                writeln!(out, "    {}", each.join("; "))?;
            }
        }
        all_pass &= t.passes();
    }
    Ok(all_pass)
}

/// Each run's interval width as a share of its ratio, sorted.
fn interval_widths(runs: &[RunFigure]) -> Vec<f64> {
    let mut widths: Vec<f64> = runs
        .iter()
        .filter_map(|r| Some((r.ci?[1] - r.ci?[0]) / r.ratio.filter(|x| *x > 0.0)?))
        .collect();
    widths.sort_unstable_by(f64::total_cmp);
    widths
}

/// Runs `peer` (`exe`) `runs` times with `args` and `--json DIR/runI.json`, one after another,
/// their output discarded; says on stderr where the reports go and when each run is done.
/// Returns the reports' paths.
///
/// # Errors
/// [`Error::InvalidArgument`] when `args` already name a `--json` or `runs` is below 2; an
/// I/O error when a run cannot be started, or when one exits non-zero (which ends the series;
/// the error gives its exit status and the last line of its stderr).
pub fn run_series(exe: &Path, args: &[String], runs: usize, dir: &Path) -> Result<Vec<PathBuf>> {
    if runs < 2 {
        return Err(Error::InvalidArgument {
            what: "runs",
            reason: "needs at least 2 runs: each is judged by the others".into(),
        });
    }
    if args.iter().any(|a| a == "--json" || a.starts_with("--json=")) {
        return Err(Error::InvalidArgument {
            what: "--json",
            reason: "peer repeat writes each run's report itself (see --dir)".into(),
        });
    }
    std::fs::create_dir_all(dir)?;
    eprintln!("peer repeat: reports in {}", dir.display());
    let mut paths = Vec::with_capacity(runs);
    for i in 1..=runs {
        let path = dir.join(format!("run{i}.json"));
        let output = Command::new(exe)
            .args(args)
            .arg("--json")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().last().unwrap_or("").to_owned();
            return Err(Error::Io(io::Error::other(format!(
                "run {i} of {runs} ended with {}: {last}",
                output.status
            ))));
        }
        eprintln!("peer repeat: run {i} of {runs} done ({})", path.display());
        paths.push(path);
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(ratio: f64, half: f64, probe_ns: Option<u64>) -> RunFigure {
        RunFigure {
            ratio: Some(ratio),
            ci: Some([ratio - half, ratio + half]),
            probe_ns,
            compute_ns: None,
            server_ns: None,
        }
    }

    #[test]
    fn each_run_is_judged_by_the_median_of_the_others_in_its_state() {
        // Five fast-state runs around 1.30, one far off, two slow-state runs around 1.06.
        let runs = [
            run(1.30, 0.03, Some(900)),
            run(1.31, 0.03, Some(950)),
            run(1.29, 0.03, Some(920)),
            run(1.32, 0.03, Some(1000)),
            run(1.45, 0.02, Some(930)),
            run(1.06, 0.02, Some(3400)),
            run(1.07, 0.02, Some(3500)),
        ];
        let verdicts = judge(&runs);
        // The others of run 1 (fast): 1.29, 1.31, 1.32, 1.45: median 1.315.
        assert!(matches!(verdicts[0], Held::Yes(m) if (m - 1.315).abs() < 1e-12));
        assert!(matches!(verdicts[4], Held::Missed(_)));
        // The slow runs are judged by each other only.
        assert_eq!(verdicts[5], Held::Yes(1.07));
        assert_eq!(verdicts[6], Held::Yes(1.06));
        let t = tally(&verdicts);
        assert_eq!(t, Tally { held: 6, unresolved: 0, missed: 1, alone: 0 });
        assert!(!t.passes()); // 6 of 7 is under 9 of 10
    }

    #[test]
    fn an_unresolved_run_counts_as_honest_and_a_lonely_run_not_at_all() {
        let mut runs: Vec<RunFigure> = (0..9).map(|_| run(1.30, 0.02, Some(1000))).collect();
        // Its interval misses the others' median, but it is wider than +-25 %: unresolved.
        runs.push(RunFigure {
            ratio: Some(1.6),
            ci: Some([1.1, 2.2]),
            probe_ns: Some(1000),
            compute_ns: None,
            server_ns: None,
        });
        runs.push(run(1.05, 0.01, Some(3500)));
        runs.push(RunFigure { ci: None, ..run(1.3, 0.0, Some(1000)) });
        let t = tally(&judge(&runs));
        assert_eq!(t, Tally { held: 9, unresolved: 2, missed: 0, alone: 1 });
        assert!(t.passes());
        assert_eq!(t.judged(), 11);
    }

    #[test]
    fn runs_whose_second_cpu_computed_slower_are_another_state() {
        // Nine runs at one probe; three of them with the second CPU copying 1.6x slower and
        // a ratio far off: each kind is judged by its own kind only.
        let at = |ratio, compute_ns| RunFigure { compute_ns, ..run(ratio, 0.02, Some(1_100)) };
        let mut runs: Vec<RunFigure> = (0..6).map(|_| at(1.22, Some(1_200))).collect();
        runs.extend((0..3).map(|_| at(1.31, Some(1_950))));
        assert_eq!(tally(&judge(&runs)), Tally { held: 9, unresolved: 0, missed: 0, alone: 0 });
        // Without the compute figure, the three slow ones miss the others' median.
        let blind: Vec<RunFigure> =
            runs.iter().map(|r| RunFigure { compute_ns: None, ..*r }).collect();
        assert_eq!(tally(&judge(&blind)).missed, 3);
    }

    #[test]
    fn runs_without_states_are_one_state_and_never_the_same_as_one_with() {
        assert!(same_probe(None, None));
        assert!(!same_probe(None, Some(900)));
        assert!(same_probe(Some(900), Some(1050)));
        assert!(!same_probe(Some(900), Some(1300)));
        assert!(!same_probe(Some(900), Some(1400)));
        let verdicts = judge(&[run(1.3, 0.01, None), run(1.3, 0.01, Some(900))]);
        assert_eq!(verdicts, [Held::Alone, Held::Alone]);
    }

    #[test]
    fn a_miss_whose_server_ran_at_another_speed_is_named_under_the_tally() {
        let at = |ratio, server_ns| RunFigure {
            server_ns: Some(server_ns),
            ..run(ratio, 0.02, Some(950))
        };
        let mut runs: Vec<RunFigure> = (0..7).map(|_| at(1.20, 140)).collect();
        // One miss with the server at its usual speed, two with it 1.7x slower.
        runs.extend([at(1.27, 150), at(1.32, 240), at(1.33, 240)]);
        let verdicts = judge(&runs);
        assert_eq!(tally(&verdicts).missed, 3);
        let apart = missed_at_another_server_speed(&runs, &verdicts);
        assert_eq!(apart.iter().map(|a| a.run).collect::<Vec<_>>(), [9, 10]);
        let mut out = Vec::new();
        let passes = render(&[("row".to_owned(), runs)], &mut out).unwrap();
        assert!(!passes);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("2 of the 3 missed ran with the server's own p50 1.25x"), "{text}");
        assert!(
            text.contains("    run 9: 240ns against 140ns; run 10: 240ns against 140ns\n"),
            "{text}"
        );
        // Without the servers' figures there is nothing to say.
        let blind: Vec<RunFigure> =
            (0..10).map(|i| run(1.2 + 0.02 * i as f64, 0.01, Some(950))).collect();
        let mut out = Vec::new();
        render(&[("row".to_owned(), blind)], &mut out).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("server's own p50"));
    }

    #[test]
    fn a_run_is_placed_by_the_copy_time_of_its_rows_own_rounds() {
        use crate::report::states::{assign, testing};
        let rounds: Vec<(Option<u64>, u64, u64)> =
            (0..20).map(|i| (Some(900 + i), 2_000, 2_400)).collect();
        let mut report = testing::one_row(&rounds);
        // The state's copy time is over other rounds than the row's (another group's, taken
        // at other moments; here the floor's): fast there, slow in the row's own rounds.
        for round in &mut report.baseline[0].rounds {
            round.compute_ns = Some(571);
        }
        for round in &mut report.rows[0].rounds {
            round.compute_ns = Some(930);
        }
        assign(&mut report);
        assert_eq!(report.machine.states[0].compute_ns, Some(571));
        let figures = figures(&[report]);
        assert_eq!(figures[0].1[0].compute_ns, Some(930));
    }

    #[test]
    fn nine_of_ten_passes_and_eight_does_not() {
        let nine = Tally { held: 8, unresolved: 1, missed: 1, alone: 3 };
        assert!(nine.passes());
        let eight = Tally { held: 8, unresolved: 0, missed: 2, alone: 0 };
        assert!(!eight.passes());
        assert!(!Tally::default().passes());
    }

    #[test]
    fn a_series_needs_two_runs_and_its_own_json() {
        let dir = std::env::temp_dir();
        let exe = Path::new("/nonexistent/peer");
        assert!(matches!(
            run_series(exe, &[], 1, &dir),
            Err(Error::InvalidArgument { what: "runs", .. })
        ));
        let args = vec!["--json=x.json".to_owned()];
        assert!(matches!(
            run_series(exe, &args, 3, &dir),
            Err(Error::InvalidArgument { what: "--json", .. })
        ));
    }
}
