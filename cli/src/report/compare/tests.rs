//! The rules of `peer compare` on hand-built reports.

use super::*;
use crate::report::compare::text::{Signed, render};
use crate::report::states;
use peerpipe::units::format_nanos;

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

fn change(a: f64, a_ci: [f64; 2], b: f64, b_ci: [f64; 2]) -> PairedChange {
    PairedChange {
        a_ratio: a,
        a_ci,
        b_ratio: b,
        b_ci,
        floor_ns: 2_000.0,
        a_floor_ns: 2_000.0,
        a_added: None,
        b_added: None,
        states: None,
    }
}

#[test]
fn a_paired_change_needs_time_share_and_an_interval_clear_of_zero() {
    let t = Thresholds { abs: Duration::from_nanos(100), rel_pct: 5.0 };
    // 1.40 -> 1.65 at a 2 us floor: +500 ns, +17.9 %; the change's interval reaches down to
    // 0.25 - sqrt((0.03^2 + 0.02^2) / 2).
    let moved = change(1.40, [1.38, 1.42], 1.65, [1.62, 1.68]);
    assert_eq!(moved.difference_ns().round(), 500.0);
    assert!((moved.gap() - (0.25 - 0.00065f64.sqrt())).abs() < 1e-9, "{}", moved.gap());
    assert_eq!(judge_paired(&moved, t), Outcome::Differs);
    // Intervals that overlap still leave the change clear of 0 when they overlap little:
    // 0.25 - sqrt((0.15^2 + 0.20^2) / 2) = +0.073.
    let overlapping = change(1.40, [1.28, 1.60], 1.65, [1.50, 1.80]);
    assert!(overlapping.gap() > 0.07, "{}", overlapping.gap());
    assert_eq!(judge_paired(&overlapping, t), Outcome::Differs);
    // The same move with a change's interval holding 0 is not reported.
    let unsure = change(1.40, [1.10, 1.70], 1.65, [1.35, 1.95]);
    assert!(unsure.gap() < 0.0, "{}", unsure.gap());
    assert_eq!(judge_paired(&unsure, t), Outcome::WithinInterval);
    // Under the absolute threshold: 1.40 -> 1.44 at 2 us is 80 ns.
    let small = change(1.40, [1.39, 1.41], 1.44, [1.43, 1.45]);
    assert_eq!(judge_paired(&small, t), Outcome::WithinAbs);
    // Over 100 ns but under 5 % of the ratio: 1.40 -> 1.46 at 2 us is 120 ns, 4.3 %.
    let slight = change(1.40, [1.39, 1.41], 1.46, [1.45, 1.47]);
    assert_eq!(judge_paired(&slight, t), Outcome::WithinRel);
    // Faster counts too.
    let faster = change(1.65, [1.62, 1.68], 1.40, [1.38, 1.42]);
    assert_eq!(judge_paired(&faster, t), Outcome::Differs);
}

/// `change` judged in a shared state, with these added times (median, interval) over a
/// 2 us floor.
fn in_state(a: (f64, [f64; 2]), b: (f64, [f64; 2])) -> PairedChange {
    let added = |(median_ns, ci_ns)| Some(PairedDifference { median_ns, ci_ns });
    PairedChange {
        a_added: added(a),
        b_added: added(b),
        states: Some((0, 0)),
        ..change(1.30, [0.90, 1.60], 1.58, [1.20, 1.90])
    }
}

#[test]
fn in_a_shared_state_the_added_time_is_judged_not_the_ratio() {
    let t = Thresholds { abs: Duration::from_nanos(100), rel_pct: 5.0 };
    // 600 -> 1100 ns added: +500 ns, clear of 0; that the ratio's change is not does not matter.
    let moved = in_state((600.0, [550.0, 650.0]), (1_100.0, [1_000.0, 1_400.0]));
    assert!(moved.on_added_time() && moved.gap() <= 0.0);
    assert_eq!(moved.difference_ns(), 500.0);
    let (change, [lo, hi]) = moved.added_change_ns().unwrap();
    // Each side: the two runs' spreads facing each other, in quadrature, over sqrt(2).
    let below = ((100.0f64.powi(2) + 50.0f64.powi(2)) / 2.0).sqrt();
    let above = ((300.0f64.powi(2) + 50.0f64.powi(2)) / 2.0).sqrt();
    assert_eq!(change, 500.0);
    assert!((lo - (500.0 - below)).abs() < 1e-9 && (hi - (500.0 + above)).abs() < 1e-9);
    assert_eq!(moved.added_gap_ns(), Some(lo));
    assert_eq!(moved.a_round_trip_ns(), 2_600.0);
    assert!((moved.change_pct() - 500.0 * 100.0 / 2_600.0).abs() < 1e-9);
    assert_eq!(judge_paired(&moved, t), Outcome::Differs);
    // Intervals that touch leave the change clear of 0: +500 - sqrt((100^2 + 400^2) / 2).
    let touching = in_state((600.0, [550.0, 1_000.0]), (1_100.0, [1_000.0, 1_400.0]));
    assert_eq!(judge_paired(&touching, t), Outcome::Differs);
    // Wide ones do not, sqrt((300^2 + 700^2) / 2) = 539 ns being more than the 500: not sure
    // enough.
    let unsure = in_state((600.0, [550.0, 1_300.0]), (1_100.0, [800.0, 1_400.0]));
    assert!(unsure.added_gap_ns().unwrap() < 0.0);
    assert_eq!(judge_paired(&unsure, t), Outcome::WithinInterval);
    // +90 ns is under 100 ns.
    let small = in_state((600.0, [590.0, 610.0]), (690.0, [680.0, 700.0]));
    assert_eq!(judge_paired(&small, t), Outcome::WithinAbs);
    // +120 ns is over 100 ns but under 5 % of A's round trip (2 us floor + 600 ns = 130 ns).
    let slight = in_state((600.0, [590.0, 610.0]), (720.0, [710.0, 730.0]));
    assert_eq!(judge_paired(&slight, t), Outcome::WithinRel);
    assert_eq!(judge_paired(&slight, Thresholds { rel_pct: 4.0, ..t }), Outcome::Differs);
    // Faster counts too.
    let faster = in_state((1_100.0, [1_000.0, 1_400.0]), (600.0, [550.0, 650.0]));
    assert_eq!((faster.difference_ns(), judge_paired(&faster, t)), (-500.0, Outcome::Differs));
    // Without states the same figures are judged on the ratios, whose change holds 0.
    let overall = PairedChange { states: None, ..moved };
    assert!(!overall.on_added_time());
    assert_eq!(judge_paired(&overall, t), Outcome::WithinInterval);
}

/// A report of one row and its floor in 20 rounds of the given states: each round's
/// (probe, floor p50, ratio) comes from `state_of(i)`, `added_ns` more on the row.
fn run(state_of: impl Fn(usize) -> (u64, u64, f64), added_ns: u64) -> Report {
    let rounds: Vec<(Option<u64>, u64, u64)> = (0..20)
        .map(|i| {
            let (probe, floor, ratio) = state_of(i);
            // A little scatter, so that intervals have a width.
            let jitter = [0.995, 1.0, 1.005][i % 3];
            let floor = floor + (i as u64 % 4) * 10;
            let row = (floor as f64 * ratio * jitter) as u64 + added_ns;
            (Some(probe + (i as u64 % 5) * 10), floor, row)
        })
        .collect();
    with_states(&rounds)
}

/// A report of one row and its floor in `rounds` (probe, floor p50, row p50), two per
/// generation, its machine's states found and its rounds assigned to them.
fn with_states(rounds: &[(Option<u64>, u64, u64)]) -> Report {
    let mut report = states::testing::one_row(rounds);
    states::assign(&mut report);
    report
}

const FAST: (u64, u64, f64) = (900, 2_100, 1.30);
const SLOW: (u64, u64, f64) = (3_500, 6_000, 1.05);
const T: Thresholds = Thresholds { abs: Duration::from_nanos(100), rel_pct: 5.0 };

fn text(comparison: &Comparison) -> String {
    let mut out = Vec::new();
    render(comparison, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn rows_are_judged_in_the_state_both_reports_ran_in() {
    let a = run(|_| FAST, 0);
    // B: half its rounds in the slow state, where the ratio is 1.05.
    let b = run(|i| if i < 10 { FAST } else { SLOW }, 0);
    let c = compare(&a, &b, T, Mode::Paired);
    let states = c.states.as_ref().unwrap();
    assert_eq!((states.a.len(), states.b.len(), &states.shared), (1, 2, &vec![(0, 0)]));
    let change = c.rows[0].paired.unwrap();
    assert_eq!(change.states, Some((0, 0)));
    assert!((change.b_ratio - 1.30).abs() < 0.01, "{change:?}");
    assert!(!c.differs() && !c.no_state_in_common(), "{}", text(&c));
    assert_eq!(c.states_differ, None);
    let words = text(&c);
    assert!(words.contains("judged in the state both reports ran in"), "{words}");
    assert!(words.contains("left out (0 of 20 in A, 10 of 20 in B)"), "{words}");
    // Over all of B's rounds, as without states, its ratio says neither state.
    let all = states::stratum(0, b.rows[0].rounds.iter()).unwrap();
    assert!(all.ratio_ci.unwrap()[0] < 1.10, "{all:?}");
}

#[test]
fn a_known_server_delay_reads_as_its_own_size() {
    let a = run(|i| if i % 2 == 0 { FAST } else { SLOW }, 0);
    let b = run(|i| if i % 3 == 0 { SLOW } else { FAST }, 500);
    let c = compare(&a, &b, T, Mode::Paired);
    assert!(c.differs(), "{}", text(&c));
    let change = c.rows[0].paired.unwrap();
    // Judged in the state where both have most rounds: the fast one (10 and 13).
    assert_eq!(change.states, Some((0, 0)));
    let (added, [lo, hi]) = change.added_change_ns().unwrap();
    assert!((added - 500.0).abs() < 20.0 && lo <= 500.0 && 500.0 <= hi, "{change:?}");
    let words = text(&c);
    assert!(words.contains("added B-A") && words.contains("+5"), "{words}");
}

#[test]
fn reports_that_share_no_state_have_nothing_to_compare() {
    let a = run(|_| SLOW, 0);
    let b = run(|_| FAST, 0);
    let c = compare(&a, &b, T, Mode::Paired);
    assert!(c.states.as_ref().unwrap().shared.is_empty());
    assert!(c.no_state_in_common() && !c.differs());
    assert_eq!(c.rows[0].outcome, Outcome::OtherState);
    let words = text(&c);
    assert!(
        words.contains(
            "A ran in a state where moving 4 KiB across CPUs took 3.52us, B in one where it \
             took 920ns: no state in common, nothing to compare"
        ),
        "{words}"
    );
    assert!(!words.contains("nothing differs"), "{words}");
    // By absolute times the states are not matched: the p50s are compared as ever.
    assert!(compare(&a, &b, T, Mode::Absolute).states.is_none());
}

#[test]
fn a_row_in_a_shared_state_too_briefly_to_be_bounded_is_not_judged() {
    // A: one generation (two rounds) in the fast state, then the slow one; B: all fast, with
    // its server 500 ns slower. Over all its rounds A's row mixes the two states.
    let b = run(|_| FAST, 500);
    let brief = run(|i| if i < 2 { FAST } else { SLOW }, 0);
    let c = compare(&brief, &b, T, Mode::Paired);
    assert!(!c.states.as_ref().unwrap().shared.is_empty(), "{}", text(&c));
    assert_eq!(c.rows[0].outcome, Outcome::OtherState, "{}", text(&c));
    assert!(c.no_state_in_common() && !c.differs());
    let words = text(&c);
    assert!(words.contains("or long enough there (in more than one generation)"), "{words}");
    assert!(
        !words.contains("nothing differs") && !words.contains("judged by their p50"),
        "{words}"
    );
    // Two generations there bound it: judged in that state, and the delay found.
    let longer = run(|i| if i < 4 { FAST } else { SLOW }, 0);
    let c = compare(&longer, &b, T, Mode::Paired);
    assert!(c.differs(), "{}", text(&c));
    assert_eq!(c.rows[0].paired.unwrap().states, Some((0, 0)));
}

#[test]
fn a_report_without_states_is_judged_on_its_overall_ratio() {
    let a = run(|_| FAST, 0);
    let mut unprobed = run(|_| FAST, 500);
    unprobed.machine.states.clear();
    for round in unprobed.baseline[0].rounds.iter_mut().chain(&mut unprobed.rows[0].rounds) {
        (round.probe_ns, round.state) = (None, None);
    }
    let c = compare(&a, &unprobed, T, Mode::Paired);
    assert!(c.states.is_none() && !c.no_state_in_common());
    let change = c.rows[0].paired.unwrap();
    assert_eq!(change.states, None);
    assert_eq!(change.b_ratio, unprobed.rows[0].ratio_to_baseline.unwrap());
    assert!(c.differs());
}

/// The next of a sequence of pseudo-random numbers in [0, 1), from `state`.
fn uniform(state: &mut u64) -> f64 {
    *state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

/// A run as a busy machine gives it, drawn from `seed`: 20 rounds in one state (4 KiB across
/// CPUs in about 910 ns), two per generation, whose floor p50 wanders between about 1 and 4 us
/// from generation to generation, and a row that adds 630 ns (± 60 ns) to it, plus
/// `extra_ns` (a server delay).
fn busy_run(seed: u64, extra_ns: f64) -> Report {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut speed = 1.0;
    let rounds: Vec<(Option<u64>, u64, u64)> = (0..20)
        .map(|i| {
            if i % 2 == 0 {
                speed = 0.5 + 1.5 * uniform(&mut state);
            }
            let floor = 2_100.0 * speed * (0.975 + 0.05 * uniform(&mut state));
            let added = 630.0 + extra_ns + 120.0 * (uniform(&mut state) - 0.5);
            let probe = 900.0 + 20.0 * uniform(&mut state);
            (Some(probe as u64), floor as u64, (floor + added) as u64)
        })
        .collect();
    with_states(&rounds)
}

#[test]
fn a_500ns_server_delay_differs_though_the_ratio_intervals_overlap() {
    let (a, b) = (busy_run(1, 0.0), busy_run(2, 500.0));
    let c = compare(&a, &b, T, Mode::Paired);
    let change = c.rows[0].paired.unwrap();
    // The floor's wandering widens the ratios' intervals until they overlap and the ratio's
    // change is barely clear of 0...
    assert!(change.a_ci[1] > change.b_ci[0], "{change:?}");
    assert!(change.gap() < 0.1 * (change.b_ratio - change.a_ratio), "{change:?}");
    // ...while the added time holds: +500 ns, judged in the state both ran in.
    assert!(change.on_added_time() && change.states == Some((0, 0)), "{change:?}");
    assert_eq!(c.rows[0].outcome, Outcome::Differs, "{}", text(&c));
    let (added, [lo, hi]) = change.added_change_ns().unwrap();
    // About +500 ns, its interval clear of 0 and reaching to within the rows' scatter of 500.
    assert!((added - 500.0).abs() < 60.0 && lo > 0.0 && lo <= 500.0, "{change:?}");
    assert!(hi >= 500.0 - 60.0, "{change:?}");
    let words = text(&c);
    assert!(words.contains("the time it adds to its own floor"), "{words}");
    let line = words.lines().find(|l| l.starts_with("f64 x 500 echo codec")).expect(&words);
    let interval = format!("[{}, {}]", Signed(lo.round() as i128), Signed(hi.round() as i128));
    assert!(line.contains(&format!("{} {interval}", Signed(added.round() as i128))), "{line}");
    let state = |all: &[MachineState]| format_nanos(all[0].probe_ns as f64);
    let probes = format!("{}/{}", state(&a.machine.states), state(&b.machine.states));
    assert!(line.contains(&probes), "{probes} missing from {line}");
    assert!(line.contains(&format!("{:.3}x -> {:.3}x", change.a_ratio, change.b_ratio)));
    assert!(words.contains("compared 1 rows and 1 baselines: 1 differ;"), "{words}");
    // ...where the added time's is clear by most of itself.
    assert!(change.added_gap_ns().unwrap() > 0.8 * added, "{change:?}");
}

#[test]
fn runs_of_one_configuration_agree_and_a_server_delay_stands_out_in_each() {
    for seed in 0..5 {
        let a = busy_run(10 + seed, 0.0);
        let same = compare(&a, &busy_run(20 + seed, 0.0), T, Mode::Paired);
        assert!(!same.differs() && !same.no_state_in_common(), "seed {seed}: {}", text(&same));
        let delayed = compare(&a, &busy_run(30 + seed, 500.0), T, Mode::Paired);
        assert!(delayed.differs(), "seed {seed}: {}", text(&delayed));
        let added = delayed.rows[0].difference_ns();
        assert!((300..=700).contains(&added), "seed {seed}: {added} ns");
    }
}

#[test]
fn reports_whose_rounds_were_not_probed_are_judged_on_their_ratios() {
    let strip = |mut report: Report| {
        report.machine.states.clear();
        for round in report.baseline[0].rounds.iter_mut().chain(&mut report.rows[0].rounds) {
            (round.probe_ns, round.state) = (None, None);
        }
        report
    };
    let (a, b) = (strip(busy_run(1, 0.0)), strip(busy_run(2, 500.0)));
    let c = compare(&a, &b, T, Mode::Paired);
    let change = c.rows[0].paired.unwrap();
    assert!(c.states.is_none() && !change.on_added_time(), "{change:?}");
    // Judged by the ratio's change, whose interval is barely clear of 0 here.
    let words = text(&c);
    assert_eq!(c.rows[0].outcome, Outcome::Differs, "{words}");
    assert!(words.contains("the 95% interval of that change leaves out 0"), "{words}");
    let line = words.lines().find(|l| l.starts_with("f64 x 500 echo codec")).expect(&words);
    assert!(line.ends_with(&format!("interval {:.3}x clear of 0", change.gap())), "{line}");
    assert!(change.gap() > 0.0 && change.gap() < 0.05, "{change:?}");
    // By absolute times it is judged on the p50s, states or not.
    let (a, b) = (busy_run(1, 0.0), busy_run(2, 500.0));
    let absolute = compare(&a, &b, T, Mode::Absolute);
    assert!(absolute.states.is_none() && absolute.rows[0].paired.is_none());
}

#[test]
fn a_runs_usual_probe_is_its_main_states() {
    // Per-round states: the state most rounds ran in (here 14 of 20 in the slow one).
    let b = run(|i| if i < 6 { FAST } else { SLOW }, 0);
    let main = b.machine.states.iter().max_by_key(|s| s.rounds).unwrap();
    assert_eq!(usual_probe_ns(&b), Some(main.probe_ns));
    assert!(main.probe_ns >= 3_500, "{:?}", b.machine.states);
    // No round probed: none known.
    let mut unprobed = run(|_| FAST, 0);
    unprobed.machine.states.clear();
    assert_eq!(usual_probe_ns(&unprobed), None);
}

/// A run of 24 rounds, 14 in the slow state, whose row's added time scatters by +-400 ns
/// (`shift` picks where in the pattern it starts), and 10 in the fast one, where it scatters
/// by +-10 ns; the row adds `added_ns` to its floor in both.
fn two_states(added_ns: u64, shift: usize) -> Report {
    let rounds: Vec<(Option<u64>, u64, u64)> = (0..24)
        .map(|i| {
            let wide = [0, 400, 800, 200, 600][(i + shift) % 5];
            let narrow = [0, 10, 20][(i + shift) % 3];
            if i % 12 < 7 {
                (Some(3_500), 6_000, 6_000 + added_ns - 400 + wide)
            } else {
                (Some(900), 2_000, 2_000 + added_ns - 10 + narrow)
            }
        })
        .collect();
    with_states(&rounds)
}

#[test]
fn of_the_states_both_ran_in_the_change_is_judged_where_it_is_known_most_surely() {
    let (a, b) = (two_states(400, 0), two_states(600, 2));
    assert_eq!(a.machine.states.len(), 2, "{:?}", a.machine.states);
    let c = compare(&a, &b, T, Mode::Paired);
    let change = c.rows[0].paired.unwrap();
    // The slow state holds more rounds, the fast one the narrower interval: judged there.
    let fast =
        |report: &Report| report.machine.states.iter().find(|s| s.probe_ns < 1_000).unwrap().id;
    assert_eq!(change.states, Some((fast(&a), fast(&b))), "{}", text(&c));
    assert_eq!(change.difference_ns().round(), 200.0);
    assert_eq!(c.rows[0].outcome, Outcome::Differs, "{}", text(&c));
}

#[test]
fn states_of_two_runs_are_one_only_when_their_probes_are_within_a_fifth() {
    // A run at 900 ns and one whose state sat at 1.3 us: 1.44x apart, two states (one run
    // never holds them apart, but two runs can), so nothing is judged.
    let (a, b) = (run(|_| FAST, 0), run(|_| (1_300, 2_100, 1.30), 200));
    let c = compare(&a, &b, T, Mode::Paired);
    assert!(c.no_state_in_common() && !c.differs(), "{}", text(&c));
    // At 1.05x they are one.
    let c = compare(&a, &run(|_| (945, 2_100, 1.30), 200), T, Mode::Paired);
    assert!(!c.no_state_in_common() && c.differs(), "{}", text(&c));
}

#[test]
fn states_whose_second_cpu_computed_at_other_speeds_are_not_one() {
    // One probe figure, the second CPU copying 1.6x slower in B: two states of the machine
    // (a server there answers slower though nothing in the configuration changed).
    let (mut a, mut b) = (run(|_| FAST, 0), run(|_| FAST, 0));
    a.machine.states[0].compute_ns = Some(2_200);
    b.machine.states[0].compute_ns = Some(3_500);
    let c = compare(&a, &b, T, Mode::Paired);
    assert!(c.no_state_in_common() && !c.differs(), "{}", text(&c));
    let words = text(&c);
    assert!(words.contains("(the second CPU copying in 3.50us)"), "{words}");
    // Within 1.25x they are one; a report without the figure matches either.
    b.machine.states[0].compute_ns = Some(2_500);
    assert!(!compare(&a, &b, T, Mode::Paired).no_state_in_common());
    b.machine.states[0].compute_ns = None;
    assert!(!compare(&a, &b, T, Mode::Paired).no_state_in_common());
}
