//! `peer repeat` as users run it: a real series of runs judged, reports judged again with
//! `--from`, and clear errors for what cannot make a series.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fs;
use std::path::PathBuf;
use std::process::Output;

use common::{Watchdog, secs, text};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("peerpipe-repeat-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn peer(args: &[&str]) -> Output {
    common::run_peer(args)
}

/// A short real report: one f64 × 8 echo row and its floor, four generations of short rounds.
const SHORT_RUN: [&str; 18] = [
    "--sizes",
    "8",
    "--dtype",
    "f64",
    "--path",
    "codec",
    "--handler",
    "echo",
    "--wait",
    "block",
    "--duration",
    "8ms",
    "--warmup",
    "1ms",
    "--rounds",
    "8",
    "--generations",
    "4",
];

#[test]
fn a_series_runs_the_report_keeps_each_run_and_judges_every_run_against_the_others() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = temp_dir("series");
    let mut args = vec!["repeat", "3", "--dir", dir.to_str().unwrap(), "--"];
    args.extend(SHORT_RUN);
    let out = peer(&args);
    // 0: every row held in 9 of 10; 1: not. Either is an answer; 2 would be an error.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out.stderr));
    for i in 1..=3 {
        assert!(dir.join(format!("run{i}.json")).is_file(), "run{i}.json kept");
    }
    let stdout = text(&out.stdout);
    assert!(stdout.contains("f64 x 8 echo codec, pipe, block"), "{stdout}");
    assert!(stdout.contains("others' median"), "{stdout}");
    // One line per run, numbered, each with a verdict, and the tally under them.
    for i in 1..=3 {
        let line = stdout
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{i} ")))
            .unwrap_or_else(|| panic!("no line for run {i}: {stdout}"));
        let verdicts = ["held", "MISSED", "unresolved", "alone in its state"];
        assert!(verdicts.iter().any(|v| line.ends_with(v)), "{line}");
    }
    let tally = stdout.lines().find(|l| l.contains("held the others' median in")).expect(&stdout);
    let passes = tally.ends_with("holds (target 9 of 10)");
    assert_eq!(passes, out.status.code() == Some(0), "{tally}");

    // The same reports judged again: the same table, and the same exit.
    let runs: Vec<String> =
        (1..=3).map(|i| dir.join(format!("run{i}.json")).to_str().unwrap().to_owned()).collect();
    let mut again = vec!["repeat", "--from"];
    again.extend(runs.iter().map(String::as_str));
    let judged = peer(&again);
    assert_eq!(judged.status.code(), out.status.code(), "{}", text(&judged.stderr));
    assert_eq!(text(&judged.stdout), stdout);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn what_cannot_make_a_series_is_refused_with_a_reason_and_exit_2() {
    let dir = temp_dir("refused");
    let dir = dir.to_str().unwrap();
    let one = peer(&["repeat", "1", "--dir", dir, "--", "--quick"]);
    assert_eq!(one.status.code(), Some(2));
    assert!(text(&one.stderr).contains("at least 2 runs"), "{}", text(&one.stderr));
    let json = peer(&["repeat", "3", "--dir", dir, "--", "--quick", "--json", "x.json"]);
    assert_eq!(json.status.code(), Some(2));
    assert!(
        text(&json.stderr).contains("writes each run's report itself"),
        "{}",
        text(&json.stderr)
    );
    // A run that fails ends the series with its reason.
    let bad = peer(&["repeat", "2", "--dir", dir, "--", "--sizes", "nonsense"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("run 1 of 2 ended with"), "{}", text(&bad.stderr));
    // --from needs two reports, and files that are reports.
    let lone = peer(&["repeat", "--from", "a.json"]);
    assert_eq!(lone.status.code(), Some(2));
    let missing = peer(&["repeat", "--from", "/nonexistent/a.json", "/nonexistent/b.json"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("/nonexistent/a.json"), "{}", text(&missing.stderr));
    let _ = fs::remove_dir_all(dir);
}
