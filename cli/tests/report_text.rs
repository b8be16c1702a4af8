//! What the report prints: the table, the summary, and compare's thresholds and
//! notes, on hand-built reports (no processes, no clocks).

mod reports;

use std::time::Duration;

use peerpipe_cli::report::compare::{self, Mode, Outcome, Thresholds};
use peerpipe_cli::report::{Report, Round, Row, render, summary};
use reports::{report, row, sample, with_probes};

fn text_of(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("UTF-8 output")
}

// ---------------------------------------------------------------------------------------------
// Table and summary
// ---------------------------------------------------------------------------------------------

#[test]
fn table_puts_the_baseline_then_echo_raw_then_echo_in_each_group() {
    let mut report = sample();
    report.rows[0].client_cpu_ns = f64::NAN;
    let text = text_of(|out| render::table(&report, out));
    for line in text.lines() {
        assert!(line.chars().count() <= 120, "{} columns: {line}", line.chars().count());
    }
    let group: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("f64 x 500 (4000 B)")).skip(1).take(5).collect();
    assert!(group[0].trim_start().starts_with("baseline raw r/w"), "{group:?}");
    assert!(group[1].trim_start().starts_with("echo-raw zero-copy"), "{group:?}");
    assert!(group[2].trim_start().starts_with("echo-raw codec"), "{group:?}");
    assert!(group[3].trim_start().starts_with("echo     zero-copy"), "{group:?}");
    assert!(group[4].trim_start().starts_with("echo     codec"), "{group:?}");
    // Units per magnitude; the baseline's 60 µs p50; NaN CPU is a dash.
    assert!(group[0].contains("60us") && group[0].contains("1.00x"), "{}", group[0]);
    assert!(group[1].contains("80us") && group[1].contains(" - "), "{}", group[1]);
    assert!(text.contains("wait block, pin free") && text.contains("wait spin, pin free"));
    assert!(text.contains("f64 x 65536 (512 KiB)"));
}

/// The percentages on the summary's breakdown lines, three per line.
fn shares(text: &str) -> Vec<[f64; 3]> {
    text.lines()
        .filter(|l| l.contains("converting ") && l.contains('%'))
        .map(|l| {
            let numbers: Vec<f64> = l
                .split('%')
                .filter_map(|part| part.rsplit(' ').next().and_then(|n| n.parse().ok()))
                .collect();
            assert_eq!(numbers.len(), 3, "{l}");
            [numbers[0], numbers[1], numbers[2]]
        })
        .collect()
}

#[test]
fn the_summary_splits_the_round_trip_and_judges_the_answers_row_against_the_budget() {
    let report = sample();
    let text = text_of(|out| render::summary(&report, out));
    // Definitions stated once under the heading.
    let mut lines = text.lines().skip_while(|l| !l.starts_with("where the p50 round trip goes"));
    assert!(lines.nth(1).unwrap().contains("waiting = smallest raw baseline p50"), "{text}");
    assert_eq!(text.matches("waiting = smallest raw baseline p50").count(), 1, "{text}");

    // One breakdown line per size and wait, each adding up to 100 %.
    let all = shares(&text);
    assert_eq!(all.len(), 4, "{text}");
    for [converting, moving, waiting] in &all {
        let total = converting + moving + waiting;
        assert!((total - 100.0).abs() <= 0.2, "{converting} + {moving} + {waiting} = {total}");
    }
    // f64 × 500, block, echo-raw zero-copy: of its 80 µs, encode 2 µs + decode 2 µs + server
    // 4 µs = 8 µs converting (10 %), the 8-byte block baseline's 50 µs waiting (62.5 %), the
    // remaining 22 µs moving (27.5 %).
    let block_500 = text
        .lines()
        .skip_while(|l| !l.starts_with("f64 x 500"))
        .find(|l| l.trim_start().starts_with("block"))
        .unwrap();
    assert!(block_500.contains("converting 10.0% (8us)"), "{block_500}");
    assert!(block_500.contains("moving 27.5% (22us)"), "{block_500}");
    assert!(block_500.contains("waiting 62.5% (50us)"), "{block_500}");
    assert!(block_500.contains("[echo-raw zero-copy]"), "{block_500}");

    // The fastest configuration is named; the budget is judged on the overhead of the
    // answer's row (echo zero-copy, spin: 25 µs - 1.25 µs server at p50, 50 µs - 1.25 µs at
    // p99), at p50 and p99, once, on the size's line.
    assert!(text.contains("  fastest: echo-raw zero-copy, spin: p50 20us, p99 40us\n"), "{text}");
    assert!(text.contains("  fastest: echo-raw zero-copy, spin: p50 400us, p99 800us\n"), "{text}");
    let line = |size: &str| {
        text.lines()
            .find(|l| l.strip_prefix("  ").is_some_and(|l| l.starts_with(&format!("{size} "))))
            .unwrap_or_else(|| panic!("no line for {size}:\n{text}"))
    };
    let small = line("f64 x 500");
    let figures: Vec<&str> = small.split_whitespace().skip(3).take(2).collect();
    assert_eq!(figures, ["23.8us", "48.8us"], "{small}");
    assert!(small.contains(" met at p50 and p99 "), "{small}");
    assert!(small.trim_end().ends_with("echo zero-copy, spin"), "{small}");
    assert!(text.contains("  your case's round trip p50 25us"), "{text}");
    assert!(line("f64 x 65536").contains(" MISSED at p50 by 325us "), "{text}");
    assert!(
        text.contains(
            "budget 150us on the overhead at p50 and p99: met by 1 of 2 sizes; missed by:"
        ),
        "{text}"
    );
    assert!(text.contains("  f64 x 65536 (at p50)."), "{text}");
}

#[test]
fn breakdown_follows_its_definitions() {
    let report = sample();
    // spin, 500: 20 µs = 2 µs converting, the 4 µs of the smallest spin baseline waiting,
    // 14 µs moving.
    let fast = report
        .rows
        .iter()
        .find(|r| r.id.wait.to_string() == "spin" && r.id.elements == 500)
        .unwrap();
    let b = summary::breakdown(&report, fast);
    assert_eq!(b.round_trip_ns, 20_000);
    assert_eq!((b.converting_ns, b.moving_ns, b.waiting_ns), (2_000, 14_000, Some(4_000)));
    // Waiting is capped at the transfer: a 50 µs wake-up in a 30 µs round trip.
    let mut short = report.rows[0].clone();
    short.rtt_ns.p50 = 30_000;
    let b = summary::breakdown(&report, &short);
    assert_eq!((b.converting_ns, b.moving_ns, b.waiting_ns), (8_000, 0, Some(22_000)));
    let (c, m, w) = b.shares_pct();
    assert!((c + m + w - 100.0).abs() < 1e-9);
}

#[test]
fn the_summary_without_baselines_says_moving_and_waiting_cannot_be_split() {
    let mut report = sample();
    report.baseline.clear();
    let text = text_of(|out| render::summary(&report, out));
    assert!(text.contains("no baseline to split moving from waiting"), "{text}");
    assert!(text.contains("fastest: echo-raw zero-copy, spin: p50 20us"), "{text}");
    let table = text_of(|out| render::table(&report, out));
    assert!(table.contains("(not measured)"), "{table}");
}

#[test]
fn the_summary_of_an_empty_report_says_so() {
    let text = text_of(|out| render::summary(&report(vec![], vec![]), out));
    assert!(text.contains("no rows were measured"), "{text}");
}

#[test]
fn the_summary_without_a_budget_does_not_judge() {
    let mut report = sample();
    report.config.budget_ns = 0;
    let text = text_of(|out| render::summary(&report, out));
    assert!(!text.contains("budget 150us") && !text.contains("met at"), "{text}");
    assert!(!text.contains("MISSED"), "{text}");
    assert!(text.contains("no budget was set"), "{text}");
    // The answer's lines have no budget column figures either.
    assert!(text.lines().all(|l| !l.contains(" x ") || !l.contains("met at")), "{text}");
}

// ---------------------------------------------------------------------------------------------
// compare
// ---------------------------------------------------------------------------------------------

/// One row with the given per-round p50s and no paired ratio: judged by its p50.
fn one_row(p50: u64, round_p50s: Vec<u64>) -> Report {
    let mut r = row("f64", 500, "echo", "codec", "hybrid", p50);
    r.ratio_ci = None;
    r.rounds = round_p50s
        .into_iter()
        .map(|p50_ns| Round {
            p50_ns,
            p99_ns: None,
            floor_p50_ns: None,
            client_cpu: None,
            server_cpu: None,
            preemptions: None,
            generation: 0,
            probe_ns: None,
            compute_ns: None,
            state: None,
        })
        .collect();
    report(vec![], vec![r])
}

/// `sample()` with the first round of every floor and row in a state where 4 KiB moved
/// between the CPUs and back in `first_ns`, the other two in one where it took `rest_ns`.
fn in_states(first_ns: u64, rest_ns: u64) -> Report {
    with_probes(sample(), |i| if i == 0 { first_ns } else { rest_ns })
}

#[test]
fn the_table_names_the_machine_states_and_each_group_the_one_its_figures_are_from() {
    let table = |report: &Report| text_of(|out| render::table(report, out));
    let steady = table(&with_probes(sample(), |i| 900 + 10 * i as u64));
    assert!(
        steady.contains(
            "machine state: 4 KiB moved between the first two CPUs and back took 910ns in 18 \
             rounds (probed every round; one state found)."
        ),
        "{steady}"
    );
    assert!(!steady.contains("rounds ran in a state") && !steady.contains("main state 4"));
    // Two states: each group names the one its rows' figures come from (where most of its
    // rounds ran).
    let changed = table(&in_states(3_500, 900));
    assert!(
        changed.contains(
            "took 900ns in 12 rounds, 3.50us in 6 rounds (probed every round; 2 \
             states found)."
        ),
        "{changed}"
    );
    // On a line of its own when the group's line has no room left in 120 columns.
    let lines: Vec<&str> = changed.lines().collect();
    let groups: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].starts_with("f64 x ")).collect();
    assert_eq!(groups.len(), 4, "{changed}");
    for &i in &groups {
        assert!(lines[i].chars().count() <= 120, "{}", lines[i]);
        assert_eq!(lines[i + 1], "  main state 4 KiB 900ns", "{changed}");
    }
    // On the group's line when it fits there (no placement by the scheduler to report).
    let mut mostly_slow = in_states(900, 3_500);
    for floor in &mut mostly_slow.baseline {
        floor.pin = "split".parse().unwrap();
    }
    for row in &mut mostly_slow.rows {
        row.id.pin = "split".parse().unwrap();
    }
    let mostly_slow = table(&mostly_slow);
    let groups: Vec<&str> = mostly_slow.lines().filter(|l| l.starts_with("f64 x ")).collect();
    assert_eq!(groups.len(), 4, "{mostly_slow}");
    assert!(groups.iter().all(|l| l.ends_with("; main state 4 KiB 3.50us")), "{mostly_slow}");
    // Not probed (one CPU): nothing is claimed.
    assert!(!table(&sample()).contains("machine state"));
    // The answer says, under its figures, what the rounds of another state showed.
    let answer = |report: &Report| text_of(|out| render::summary(report, out));
    let answered = answer(&in_states(3_500, 900));
    assert!(
        answered.contains(
            "state, f64 x 500: 1 of 3 rounds ran in a state where moving 4 KiB across CPUs cost \
             3.89x more"
        ),
        "{answered}"
    );
    assert!(!answer(&with_probes(sample(), |_| 900)).contains("rounds ran in a state"));
}

#[test]
fn the_table_notes_the_rounds_that_ran_in_another_machine_state() {
    // Every floor's and row's first round in a state where 4 KiB moved in 3.5 us, the other
    // two in one where it moved in 0.9 us.
    let table = text_of(|out| render::table(&in_states(3_500, 900), out));
    assert!(
        table.contains(
            "note: 6 of 18 rounds ran in a state where moving 4 KiB across CPUs cost 3.89x more: \
             there the ratios were"
        ),
        "{table}"
    );
    // Not probed: no such note.
    assert!(!text_of(|out| render::table(&sample(), out)).contains("rounds ran in a state"));
}

#[test]
fn the_answer_columns_line_up_whatever_the_longest_size_label() {
    let mut report = sample();
    report.rows.push(row("f64-as-f32", 1_048_576, "echo", "codec", "spin", 3_000_000));
    let text = text_of(|out| render::summary(&report, out));
    // Every line of the answer's table puts its overhead figure's last character in the
    // header's column, however long the size label ("f64-as-f32 x 1048576" is 20 characters).
    let header = text.lines().find(|l| l.trim_start().starts_with("size")).expect("header");
    let end = header.find("overhead").expect("overhead column") + "overhead".len();
    let lines: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != header)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(lines.iter().any(|l| l.contains("f64-as-f32 x 1048576")), "{text}");
    for line in lines {
        let figure = line[..end].trim_end();
        assert_eq!(figure.len(), end, "misaligned:\n{header}\n{line}");
        assert!(line[..end].ends_with("us") || line[..end].ends_with("ms"), "{header}\n{line}");
    }
}

#[test]
fn compare_says_when_two_runs_were_taken_in_different_states() {
    let judge = |a: &Report, b: &Report, mode| compare::compare(a, b, thresholds(1, 5.0), mode);
    // Most rounds of A moved 4 KiB across CPUs in 900 ns, most of B's in 3.4 us.
    let (fast, slow) = (in_states(3_400, 900), in_states(900, 3_400));
    // Rows not judged per state (absolute mode): the runs' main states differ.
    let across = judge(&fast, &slow, Mode::Absolute);
    assert_eq!(across.states_differ, Some((900, 3_400)));
    let text = text_of(|out| compare::render(&across, out));
    assert!(text.contains("took 900ns in A and 3.40us in B for most of each run"), "{text}");
    // Judged per state (paired, states in both): each row in a state both ran in; no note.
    assert_eq!(judge(&fast, &slow, Mode::Paired).states_differ, None);
    // One state, or unknown on one side: no claim.
    let same = in_states(1_000, 1_000);
    assert_eq!(judge(&fast, &same, Mode::Absolute).states_differ, None);
    assert_eq!(judge(&fast, &sample(), Mode::Absolute).states_differ, None);
    assert_eq!(judge(&sample(), &slow, Mode::Paired).states_differ, None);
}

#[test]
fn compare_says_when_two_runs_were_timed_with_different_clocks() {
    let judge = |a: &Report, b: &Report| compare::compare(a, b, thresholds(1, 5.0), Mode::Paired);
    let with_clock = |clock: &str| {
        let mut report = sample();
        report.machine.clock = clock.to_owned();
        report
    };
    let tsc = with_clock("tsc (2.596 GHz)");
    let c = judge(&tsc, &with_clock("monotonic (PEERPIPE_CLOCK=monotonic)"));
    assert_eq!(c.clocks_differ, Some(("tsc".to_owned(), "monotonic".to_owned())));
    let text = text_of(|out| compare::render(&c, out));
    assert!(
        text.contains("note: timed with different clocks: A with tsc, B with monotonic"),
        "{text}"
    );
    assert!(!c.differs(), "a note, not a difference");
    // Rates calibrated a little apart are the same clock; a report without one is said so.
    assert_eq!(judge(&tsc, &with_clock("tsc (2.597 GHz)")).clocks_differ, None);
    let old = judge(&with_clock(""), &tsc).clocks_differ;
    assert_eq!(old, Some(("not recorded".to_owned(), "tsc".to_owned())));
}

fn thresholds(abs_us: u64, rel_pct: f64) -> Thresholds {
    Thresholds { abs: Duration::from_micros(abs_us), rel_pct }
}

#[test]
fn a_difference_below_the_absolute_threshold_is_not_reported() {
    // 5 µs on 100 µs: 5 % clears a 1 % threshold but not 10 µs.
    let c = compare::compare(
        &one_row(100_000, vec![]),
        &one_row(105_000, vec![]),
        thresholds(10, 1.0),
        Mode::Absolute,
    );
    assert_eq!(c.rows[0].outcome, Outcome::WithinAbs);
    assert!(!c.differs());
}

#[test]
fn a_difference_below_the_relative_threshold_is_not_reported() {
    // 50 µs on 1 ms: clears 10 µs but is 5 % of A.
    let c = compare::compare(
        &one_row(1_000_000, vec![]),
        &one_row(1_050_000, vec![]),
        thresholds(10, 10.0),
        Mode::Absolute,
    );
    assert_eq!(c.rows[0].outcome, Outcome::WithinRel);
    assert!(!c.differs());
}

#[test]
fn a_difference_within_the_noise_of_either_file_is_not_reported() {
    // 30 µs on 100 µs clears 10 µs and 10 %, but B's repeats spread over 40 µs.
    let a = one_row(100_000, vec![100_000]);
    let b = one_row(130_000, vec![100_000, 140_000]);
    let c = compare::compare(&a, &b, thresholds(10, 10.0), Mode::Absolute);
    assert_eq!(c.rows[0].outcome, Outcome::WithinNoise);
    assert_eq!((c.rows[0].a_noise_ns, c.rows[0].b_noise_ns), (None, Some(40_000)));
    assert!(!c.differs());
    // The noise of A counts too.
    let c = compare::compare(&b, &a, thresholds(10, 10.0), Mode::Absolute);
    assert_eq!(c.rows[0].outcome, Outcome::WithinNoise);
}

#[test]
fn a_difference_beyond_all_three_is_reported_side_by_side() {
    let a = one_row(100_000, vec![99_000, 101_000]);
    let b = one_row(150_000, vec![148_000, 153_000]);
    let c = compare::compare(&a, &b, thresholds(10, 10.0), Mode::Absolute);
    assert_eq!(c.rows[0].outcome, Outcome::Differs);
    assert!(c.differs());
    assert_eq!(c.rows[0].difference_ns(), 50_000);
    let text = text_of(|out| compare::render(&c, out));
    let line = text.lines().find(|l| l.starts_with("f64 x 500 echo codec")).expect(&text);
    for cell in ["100us", "150us", "+50us", "+50.0%", "2us", "5us"] {
        assert!(line.contains(cell), "{cell} missing from {line}");
    }
    assert!(text.contains("compared 1 rows and 0 baselines: 1 differ; 0 only in A, 0 only in B."));
}

#[test]
fn compare_matches_rows_and_baselines_by_key_and_counts_the_rest() {
    let a = sample();
    let mut b = sample();
    b.rows.remove(3);
    b.rows.push(row("f32", 500, "echo", "codec", "spin", 30_000));
    b.baseline[0].rtt_ns.p50 = 500_000; // 8 B block: 50 µs → 500 µs
    let c = compare::compare(&a, &b, Thresholds::default(), Mode::Absolute);
    assert_eq!(c.rows.len(), a.rows.len() - 1);
    assert_eq!(c.baselines.len(), a.baseline.len());
    assert_eq!(c.only_in_a.len(), 1);
    assert_eq!(c.only_in_b, vec!["f32 x 500 echo codec, wait spin, pin free".to_owned()]);
    assert!(c.differs(), "the baseline moved");
    let text = text_of(|out| compare::render(&c, out));
    assert!(text.contains("baseline 8 B, wait block, pin free"), "{text}");
    assert!(text.contains("compared 15 rows and 6 baselines: 1 differ; 1 only in A, 1 only in B."));
    assert!(text.contains("only in B: f32 x 500 echo codec, wait spin, pin free"), "{text}");

    let same = compare::compare(&a, &a, Thresholds::default(), Mode::Absolute);
    assert!(!same.differs());
    assert!(text_of(|out| compare::render(&same, out)).contains("nothing differs"));
}

// ---------------------------------------------------------------------------------------------
// pairing in the table
// ---------------------------------------------------------------------------------------------

#[test]
fn each_group_shows_its_floor_spread_and_the_ratio_interval() {
    let text = text_of(|out| render::table(&sample(), out));
    // base(4000, "block", 60_000) has rounds at 57us, 60us, 63us.
    let group = text.lines().find(|l| l.starts_with("f64 x 500 (4000 B)")).expect(&text);
    assert!(group.contains("floor p50 per round 57us..63us (1.11x)"), "{group}");
    // Pinned free: how often client and server shared a core (never, in the sample).
    assert!(group.contains("one core in up to 0% of rounds"), "{group}");
    assert!(text.contains("ratio: paired - the median over 3 rounds"), "{text}");
    let row = text.lines().find(|l| l.contains("echo     codec")).expect(&text);
    assert!(row.trim_end().ends_with("1.25x 1.20-1.30"), "{row}");
    // A steady machine gets no speed-change note.
    assert!(!text.contains("changed speed"), "{text}");
}

#[test]
fn a_floor_that_changed_speed_across_rounds_is_named_at_the_top() {
    let mut report = sample();
    let floor = report
        .baseline
        .iter_mut()
        .find(|b| b.bytes == 4000 && b.wait.to_string() == "spin")
        .unwrap();
    floor.rounds[2].p50_ns = 64_000; // 15.2us, 16us, 64us: 4.2x
    let text = text_of(|out| render::table(&report, out));
    let note = text.lines().find(|l| l.starts_with("note: the 4000 B floor")).expect(&text);
    assert!(note.contains("(pipe, spin, free) ranged 15.2us..64us (4.21x)"), "{note}");
    assert!(note.contains("ratios are paired and hold, absolute times do not"), "{note}");
    // The note comes before the first group.
    let note_at = text.find("note: the 4000 B floor").unwrap();
    assert!(note_at < text.find("f64 x 500").unwrap());
    assert_eq!(render::speed_change(&sample()), None);
}

#[test]
fn a_busy_machine_is_named_when_most_rounds_were_preempted() {
    let mut report = sample();
    assert_eq!(render::contention(&report), None, "no preemption counts in the sample");
    for row in &mut report.rows {
        for (i, round) in row.rounds.iter_mut().enumerate() {
            round.preemptions = Some(if i == 0 { 0 } else { 6 });
        }
    }
    // 2 of every 3 row rounds contended; the floors' rounds are unknown and do not count.
    let line = render::contention(&report).expect("a note");
    assert!(line.starts_with("note: in 67% of the rounds another task took a CPU"), "{line}");
    let text = text_of(|out| render::table(&report, out));
    assert!(text.contains("ratios read lower than on a quiet machine"), "{text}");
    for row in &mut report.rows {
        for round in &mut row.rounds {
            round.preemptions = Some(4);
        }
    }
    assert_eq!(render::contention(&report), None, "a few preemptions a burst are kernel noise");
}

/// A row of `wait` at `pin` (f64 x 500, echo, codec) whose p50 round trip is `rtt`.
fn placed(wait: &str, pin: &str, rtt: u64) -> Row {
    let mut placed = row("f64", 500, "echo", "codec", wait, rtt);
    placed.id.pin = pin.parse().unwrap();
    placed
}

#[test]
fn the_answer_gives_the_default_wait_unpinned_even_when_a_pinned_wait_is_faster() {
    let rows = vec![placed("spin", "split", 2_000), placed("auto", "free", 3_000)];
    let text = text_of(|out| render::summary(&report(vec![], rows), out));
    let line = text.lines().find(|l| l.contains("f64 x 500")).expect("the 500 line");
    assert!(line.trim_end().ends_with("echo codec, auto"), "{text}");
    assert!(text.contains("at the default wait, unpinned, as a program gets it"), "{text}");
    // Only one placement of auto: the answer says how to see the others.
    assert!(
        text.contains("placement: auto measured unpinned only; --pin same,split,free"),
        "{text}"
    );
}

#[test]
fn the_answer_says_when_placement_changes_it_by_more_than_one_and_a_half_times() {
    let rows = vec![
        placed("auto", "free", 3_000),
        placed("auto", "same", 10_000),
        placed("auto", "split", 2_800),
    ];
    let text = text_of(|out| render::summary(&report(vec![], rows), out));
    // Overheads are round trip - server time (a twentieth of it here): 2850, 9500, 2660 ns.
    assert!(
        text.contains(
            "placement changes f64 x 500 at wait auto by 3.6x: unpinned 2.85us, on one core \
             9.50us, on two cores 2.66us."
        ),
        "{text}"
    );
    assert!(!text.contains("measured unpinned only"), "{text}");
    // Within 1.5x: nothing to say.
    let close = vec![placed("auto", "free", 3_000), placed("auto", "same", 4_000)];
    let text = text_of(|out| render::summary(&report(vec![], close), out));
    assert!(!text.contains("placement"), "{text}");
}

#[test]
fn the_answer_names_the_load_it_ran_beside() {
    let mut loaded = report(vec![], vec![placed("auto", "free", 3_000)]);
    loaded.config.load = 2;
    let text = text_of(|out| render::summary(&loaded, out));
    assert!(text.contains(", beside 2 busy threads)"), "{text}");
    let text = text_of(|out| render::table(&loaded, out));
    assert!(text.contains("load: 2 busy threads beside the client and servers"), "{text}");
}
