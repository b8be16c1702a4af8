//! `peer compare` as users run it: its exit codes (0 nothing differs, 1 a difference, 2 an
//! error, 3 the machine's states), the figures it judges on, and the files it refuses.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use peerpipe_cli::report::key::RowId;
use peerpipe_cli::report::{
    BaselineRow, ConfigRecord, Machine, Percentiles, Report, Round, Row, compare, export, states,
};

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("peerpipe-cli", name)
}

fn peer(args: &[&str]) -> Output {
    common::run_peer(args)
}

fn stdout(output: &Output) -> String {
    common::text(&output.stdout)
}

fn stderr(output: &Output) -> String {
    common::text(&output.stderr)
}

fn report_with_p50(p50: u64) -> Report {
    let p = Percentiles { min: p50 / 2, p50, p90: p50, p99: p50 * 2, p999: p50 * 3, max: p50 * 4 };
    Report {
        peerpipe: "0.1.0".into(),
        machine: Machine::default(),
        config: ConfigRecord::default(),
        baseline: vec![BaselineRow {
            bytes: 4000,
            transport: "pipe".parse().unwrap(),
            wait: "hybrid".parse().unwrap(),
            pin: "free".parse().unwrap(),
            lent: false,
            iterations: 100,
            rtt_ns: Percentiles { p50: 80_000, ..p },
            rounds: vec![],
            shared_core_share: None,
            route: None,
        }],
        rows: vec![Row {
            id: RowId {
                dtype: "f64".parse().unwrap(),
                elements: 500,
                bytes: 4000,
                transport: "pipe".parse().unwrap(),
                path: "zero-copy".parse().unwrap(),
                handler: "echo".parse().unwrap(),
                wait: "hybrid".parse().unwrap(),
                pin: "free".parse().unwrap(),
            },
            iterations: 100,
            rtt_ns: p,
            transfer_ns: p,
            encode_ns: Percentiles::default(),
            decode_ns: Percentiles::default(),
            server_ns: Percentiles::default(),
            client_cpu_ns: 1000.0,
            server_cpu_ns: f64::NAN,
            mb_per_s: 8.0,
            ratio_to_baseline: Some(p50 as f64 / 80_000.0),
            ratio_ci: None,
            rounds: vec![],
            shared_core_share: None,
            client_waits: None,
        }],
        sync_costs: vec![],
        skipped: vec![],
    }
}

fn write_report(dir: &Path, name: &str, p50: u64) -> String {
    let path = dir.join(name);
    export::write_json(&report_with_p50(p50), &path).expect("write a report");
    path.to_str().expect("UTF-8 temp path").to_owned()
}

#[test]
fn compare_exits_0_when_nothing_differs() {
    let dir = temp_dir("compare-equal");
    let a = write_report(&dir, "a.json", 100_000);
    let b = write_report(&dir, "b.json", 104_000);
    let out = peer(&["compare", &a, &b]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("nothing differs"), "{}", stdout(&out));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compare_exits_1_when_a_row_differs_beyond_the_thresholds() {
    let dir = temp_dir("compare-differs");
    let a = write_report(&dir, "a.json", 100_000);
    let b = write_report(&dir, "b.json", 150_000);
    let out = peer(&["compare", &a, &b]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("f64 x 500 echo zero-copy, wait hybrid, pin free"), "{text}");
    assert!(text.contains("+50.0%"), "{text}");
    // Looser thresholds turn the same pair into "nothing differs".
    let out = peer(&["compare", &a, &b, "--abs", "60us"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = peer(&["compare", &a, &b, "--rel", "60"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    fs::remove_dir_all(dir).ok();
}

/// A report of one row with a paired ratio: its floor's p50, the row's ratio to it and the
/// interval of that ratio.
fn paired_report(floor_p50: u64, ratio: f64, ci: [f64; 2]) -> Report {
    let mut report = report_with_p50((floor_p50 as f64 * ratio) as u64);
    report.baseline[0].rtt_ns.p50 = floor_p50;
    report.baseline[0].bytes = 4000;
    report.rows[0].ratio_to_baseline = Some(ratio);
    report.rows[0].ratio_ci = Some(ci);
    report
}

fn write(dir: &Path, name: &str, report: &Report) -> String {
    let path = dir.join(name);
    export::write_json(report, &path).expect("write a report");
    path.to_str().expect("UTF-8 temp path").to_owned()
}

#[test]
fn compare_judges_paired_ratios_so_a_slower_machine_is_not_a_difference() {
    let dir = temp_dir("compare-paired");
    // B ran while the machine was twice as slow: every time doubled, the ratio did not.
    let a = write(&dir, "a.json", &paired_report(2_000, 1.40, [1.38, 1.42]));
    let b = write(&dir, "b.json", &paired_report(4_000, 1.41, [1.38, 1.44]));
    let out = peer(&["compare", &a, &b, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("nothing differs"), "{text}");
    assert!(text.contains("floors: B/A of their p50 ranged 2.00x-2.00x"), "{text}");
    // Judged by absolute time, the same two files differ.
    let out = peer(&["compare", &a, &b, "--abs", "100ns", "--rel", "5", "--mode", "absolute"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compare_reports_a_paired_change_with_how_much_and_how_sure() {
    let dir = temp_dir("compare-paired-differs");
    // 1.40 -> 1.65 of a 2 us floor: +500 ns, +17.9 %, the change's interval clear of 0 by
    // 0.25 - sqrt((0.03^2 + 0.02^2) / 2) = 0.225.
    let a = write(&dir, "a.json", &paired_report(2_000, 1.40, [1.38, 1.42]));
    let b = write(&dir, "b.json", &paired_report(2_000, 1.65, [1.62, 1.68]));
    let out = peer(&["compare", &a, &b, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let line = text.lines().find(|l| l.starts_with("f64 x 500 echo zero-copy")).expect(&text);
    for cell in ["1.400x [1.380, 1.420]", "1.650x [1.620, 1.680]", "+500ns", "+17.9%"] {
        assert!(line.contains(cell), "{cell} missing from {line}");
    }
    assert!(line.contains("interval 0.225x clear of 0"), "{line}");
    // The same move with a change's interval that holds 0 is not sure enough to report:
    // 0.25 - sqrt((0.40^2 + 0.02^2) / 2) < 0.
    let unsure = write(&dir, "unsure.json", &paired_report(2_000, 1.65, [1.25, 1.80]));
    let out = peer(&["compare", &a, &unsure, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    fs::remove_dir_all(dir).ok();
}

/// Writes `report` as a file of another format: `format` set to `format`, or taken out.
fn write_of_format(dir: &Path, name: &str, report: &Report, format: Option<u64>) -> String {
    let path = dir.join(name);
    export::write_json(report, &path).expect("write a report");
    let mut value: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    match format {
        Some(format) => value["format"] = format.into(),
        None => drop(value.as_object_mut().unwrap().remove("format")),
    }
    fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).expect("write a report");
    path.to_str().expect("UTF-8 temp path").to_owned()
}

#[test]
fn compare_exits_3_when_a_difference_comes_with_a_change_of_machine_state() {
    let dir = temp_dir("compare-states");
    // Rows judged on their p50s (absolute): the machine's states are not matched, and most of
    // A's rounds moved 4 KiB across CPUs in ~0.9 us, most of B's in ~3.5 us. The p50s moved:
    // a difference by the numbers, which the change of state may explain.
    let fast = write(&dir, "fast.json", &report_in_state(900, 1_800, 1.30));
    let slow = write(&dir, "slow.json", &report_in_state(3_500, 5_800, 1.05));
    let compare = |a: &str, b: &str| {
        peer(&["compare", a, b, "--abs", "100ns", "--rel", "5", "--mode", "absolute"])
    };
    let out = compare(&fast, &slow);
    assert_eq!(out.status.code(), Some(3), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("the machine was in different states"), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("took 910ns in A and 3.51us in B for most of each run"),
        "{}",
        stdout(&out)
    );
    // The same two runs measured in one state: an ordinary difference, exit 1.
    let slow = write(&dir, "slow-same-state.json", &report_in_state(950, 5_800, 1.05));
    let out = compare(&fast, &slow);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compare_refuses_a_report_of_another_format_naming_both_formats() {
    let dir = temp_dir("compare-format");
    let report = report_in_state(900, 1_800, 1.30);
    let current = write(&dir, "current.json", &report);
    for (name, format, found) in [
        ("older.json", None, "has no `format`"),
        ("newer.json", Some(2), "is a report of format 2"),
        ("zero.json", Some(0), "is a report of format 0"),
    ] {
        let other = write_of_format(&dir, name, &report, format);
        for (a, b) in [(&current, &other), (&other, &current)] {
            let out = peer(&["compare", a, b]);
            assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
            let text = stderr(&out);
            assert!(text.contains(&format!("{name} {found}")), "{text}");
            assert!(text.contains("this peer reads format 1 only"), "{text}");
            assert!(stdout(&out).is_empty(), "nothing judged: {}", stdout(&out));
        }
    }
    fs::remove_dir_all(dir).ok();
}

/// `paired_report` measured in 20 rounds, each probed at about `probe_ns`, with the floor at
/// about `floor_p50` and the row at `ratio` of it, its states found.
fn report_in_state(probe_ns: u64, floor_p50: u64, ratio: f64) -> Report {
    let mut report = paired_report(floor_p50, ratio, [ratio - 0.02, ratio + 0.02]);
    let round = |p50_ns, floor_p50_ns, i: u64| Round {
        p50_ns,
        p99_ns: None,
        floor_p50_ns,
        client_cpu: None,
        server_cpu: None,
        preemptions: None,
        generation: (i / 2) as u32,
        probe_ns: Some(probe_ns + i % 3 * 10),
        compute_ns: None,
        state: None,
    };
    let floor = |i: u64| floor_p50 + i % 4 * 5;
    let row = |i: u64| (floor(i) as f64 * ratio) as u64 + i % 3 * 5;
    report.baseline[0].rounds = (0..20).map(|i| round(floor(i), None, i)).collect();
    report.rows[0].rounds = (0..20).map(|i| round(row(i), Some(floor(i)), i)).collect();
    states::assign(&mut report);
    report
}

#[test]
fn compare_exits_3_when_the_reports_share_no_machine_state() {
    let dir = temp_dir("compare-no-shared-state");
    let fast = write(&dir, "fast.json", &report_in_state(900, 2_100, 1.30));
    let slow = write(&dir, "slow.json", &report_in_state(3_500, 6_000, 1.05));
    let out = peer(&["compare", &slow, &fast, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(3), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "A ran in a state where moving 4 KiB across CPUs took 3.51us, B in one where it took \
             910ns: no state in common, nothing to compare"
        ),
        "{text}"
    );
    // The same ratios measured in one state are judged: they differ, exit 1.
    let slow_same_state = write(&dir, "slow-same-state.json", &report_in_state(950, 6_000, 1.05));
    let out = peer(&["compare", &slow_same_state, &fast, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("judged in the state both reports ran in"), "{}", stdout(&out));
    fs::remove_dir_all(dir).ok();
}

/// `report_in_state(900, ..)` on a busy machine: its floor wanders between 1 and 4 us from
/// generation to generation, and its row adds `added_ns` (+0..60 ns, the pattern moved by
/// `shift` rounds) to the floor of each round. A ratio's interval is wide there; the time the
/// row adds holds.
fn wandering(added_ns: u64, shift: usize) -> Report {
    const SPEED: [f64; 10] = [0.5, 2.0, 0.8, 1.6, 1.0, 0.6, 1.8, 1.2, 0.7, 1.4];
    let mut report = report_in_state(900, 2_100, 1.30);
    let rounds = report.baseline[0].rounds.iter_mut().zip(&mut report.rows[0].rounds);
    for (i, (floor, row)) in rounds.enumerate() {
        floor.p50_ns = (2_100.0 * SPEED[i / 2]) as u64 + i as u64 % 4 * 5;
        row.floor_p50_ns = Some(floor.p50_ns);
        row.p50_ns = floor.p50_ns + added_ns + (i + shift) as u64 % 7 * 10;
    }
    states::assign(&mut report);
    report
}

#[test]
fn compare_judges_the_time_a_row_adds_in_the_state_both_ran_in() {
    let dir = temp_dir("compare-added");
    let (a, delayed) = (wandering(630, 0), wandering(1_130, 0));
    // A server 500 ns slower: the ratio's change holds 0 within its interval, the added time's
    // does not.
    let t = compare::Thresholds { abs: std::time::Duration::from_nanos(100), rel_pct: 5.0 };
    let judged = compare::compare(&a, &delayed, t, compare::Mode::Paired);
    let change = judged.rows[0].paired.expect("paired");
    assert!(change.gap() <= 0.0 && change.added_gap_ns().unwrap() > 0.0, "{change:?}");
    let (a, delayed) = (write(&dir, "a.json", &a), write(&dir, "delayed.json", &delayed));
    let out = peer(&["compare", &a, &delayed, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    let line = text.lines().find(|l| l.starts_with("f64 x 500 echo zero-copy")).expect(&text);
    assert!(line.contains("+500ns [+") && line.contains("910ns/910ns"), "{line}");
    assert!(text.contains("1 differ;"), "{text}");
    // The same configuration again, its noise in other rounds: nothing differs.
    let again = write(&dir, "again.json", &wandering(630, 3));
    let out = peer(&["compare", &a, &again, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    // ...and it says how small a change the two runs could have told: no less than the
    // thresholds (100 ns; 5 % of A's round trip).
    let text = stdout(&out);
    let line = text.lines().find(|l| l.starts_with("these two runs could not tell")).expect(&text);
    let smallest = line.split("under ").nth(1).and_then(|s| s.split(' ').next()).expect(line);
    let ns = peerpipe::units::parse_duration(smallest).expect(line).as_nanos();
    assert!((100..500).contains(&ns), "{line}");
    // A difference under --abs, or under --rel of A's round trip, is not one.
    let slower = write(&dir, "slower.json", &wandering(830, 0));
    let out = peer(&["compare", &a, &slower, "--abs", "250ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = peer(&["compare", &a, &slower, "--abs", "100ns", "--rel", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    let out = peer(&["compare", &a, &slower, "--abs", "100ns", "--rel", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", stdout(&out), stderr(&out));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compare_exits_2_naming_a_missing_file() {
    let dir = temp_dir("compare-missing");
    let a = write_report(&dir, "a.json", 100_000);
    let missing = dir.join("never-written.json");
    let out = peer(&["compare", &a, missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("peer: error:") && err.contains("never-written.json"), "{err}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn compare_exits_2_naming_a_file_that_is_not_json() {
    let dir = temp_dir("compare-not-json");
    let a = write_report(&dir, "a.json", 100_000);
    let notes = dir.join("notes.txt");
    fs::write(&notes, "p50 was about 2us\n").unwrap();
    let out = peer(&["compare", notes.to_str().unwrap(), &a]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.starts_with("peer: error:") && err.contains("notes.txt"), "{err}");
    assert!(err.contains("not a peerpipe JSON report"), "{err}");
    fs::remove_dir_all(dir).ok();
}
