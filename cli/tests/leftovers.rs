//! Nothing left behind: however a run of the report or of `peer soak` ends — SIGINT, SIGTERM,
//! SIGHUP or SIGKILL at a random moment — within a second of its end no process of it is
//! alive or stopped, nothing of it holds shared memory, and its stdout and stderr are at end
//! of stream (see `common::leftovers`). A run ended by SIGINT or SIGTERM writes every row it
//! measured before the signal.
//!
//! Each test makes a few runs; `PEERPIPE_LEFTOVER_RUNS=N` makes N (`benches/leftovers.sh`).
//! The runs are serialized: on two cores, runs side by side would only slow each other.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use common::leftovers::{self, Ending, Moments, launch, new_tag, runs, summary};
use common::{Watchdog, peer_exe, secs, serialize};

static RUN_LOCK: Mutex<()> = Mutex::new(());

/// Runs of the report per signal in a plain `cargo test`.
const REPORT_RUNS: usize = 2;
/// Runs of the soak per signal in a plain `cargo test`.
const SOAK_RUNS: usize = 1;

/// A report of several sizes over pipes and shared memory, with spinning and hybrid waits
/// (so that parked servers would spin if not stopped), short enough for many runs: ~6 s, so
/// that the latest moment a test ends it at (3 s) falls well within it.
fn report_command() -> Command {
    let mut command = Command::new(peer_exe());
    command
        .args(["--sizes", "500,65536", "--dtype", "f64", "--transport", "pipe,shm-ring"])
        .args(["--wait", "spin,hybrid", "--duration", "100ms", "--rounds", "4"])
        .args(["--generations", "2", "--warmup", "2ms", "--sync-ops", "2000"]);
    command
}

/// `peer soak` over `transport` for longer than any moment it is ended at.
fn soak_command(transport: &str) -> Command {
    let mut command = Command::new(peer_exe());
    command.args(["soak", "--duration", "6s", "--peers", "2", "--max-elements", "65536"]);
    command.args(["--transport", transport, "--timeout", "5s"]);
    command
}

/// Ends `count` runs of `make(i)` with `signal`, each at a random moment up to `latest`, and
/// fails naming everything any of them left behind.
fn end_at_random_moments(
    kind: &str,
    signal: Signal,
    count: usize,
    latest: Duration,
    make: impl Fn(usize) -> Command,
) {
    let _lock = serialize(&RUN_LOCK);
    let what = format!("{kind} {}", signal.as_str());
    let mut moments = Moments::new(&what);
    let mut endings: Vec<Ending> = Vec::with_capacity(count);
    for i in 0..count {
        let _watchdog = Watchdog::new(secs(60));
        let mut run = launch(make(i), &new_tag(kind));
        let moment = moments.between(Duration::from_millis(20), latest);
        let until = Instant::now() + moment;
        while Instant::now() < until && run.running() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let ending = run.end(Some(signal));
        // Killed by SIGKILL; ended by another signal with 128 + it, or by the signal itself
        // when it came before the handlers were installed, at the very start.
        let (code, killed_by) = match ending.status {
            Some(status) => (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)),
            None => (None, None),
        };
        let expected = match signal {
            Signal::SIGKILL => killed_by == Some(9),
            _ => code == Some(128 + signal as i32) || killed_by == Some(signal as i32),
        };
        assert!(expected, "{what}: {ending:?}");
        endings.push(ending);
    }
    let text = summary(kind, signal.as_str(), &endings);
    println!("{text}");
    assert!(endings.iter().all(|e| e.leftovers.is_empty()), "{text}");
}

fn report(signal: Signal) {
    end_at_random_moments("report", signal, runs(REPORT_RUNS), secs(3), |_| report_command());
}

/// Each run over the next transport, starting at `first`, so that the four signals in CI
/// cover all four transports.
fn soak(signal: Signal, first: usize) {
    end_at_random_moments("soak", signal, runs(SOAK_RUNS), secs(3), move |i| {
        soak_command(["pipe", "shm-sem", "shm-ring", "tcp"][(i + first) % 4])
    });
}

#[test]
fn a_report_ended_by_sigint_at_a_random_moment_leaves_nothing_behind() {
    report(Signal::SIGINT);
}

#[test]
fn a_report_ended_by_sigterm_at_a_random_moment_leaves_nothing_behind() {
    report(Signal::SIGTERM);
}

#[test]
fn a_report_ended_by_sighup_at_a_random_moment_leaves_nothing_behind() {
    report(Signal::SIGHUP);
}

#[test]
fn a_report_killed_at_a_random_moment_leaves_nothing_behind() {
    report(Signal::SIGKILL);
}

#[test]
fn a_soak_ended_by_sigint_at_a_random_moment_leaves_nothing_behind() {
    soak(Signal::SIGINT, 0);
}

#[test]
fn a_soak_ended_by_sigterm_at_a_random_moment_leaves_nothing_behind() {
    soak(Signal::SIGTERM, 1);
}

#[test]
fn a_soak_ended_by_sighup_at_a_random_moment_leaves_nothing_behind() {
    soak(Signal::SIGHUP, 2);
}

#[test]
fn a_soak_killed_at_a_random_moment_leaves_nothing_behind() {
    soak(Signal::SIGKILL, 3);
}

/// Ends a report with `signal` once its second group (4000 B) is over — when the floor of the
/// third (524288 B) has been spawned — and checks that the JSON, the CSV and the table hold
/// every row of the groups measured before, and list the rest as interrupted or measured.
fn a_report_ended_by(signal: Signal) {
    let _lock = serialize(&RUN_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let dir = std::env::temp_dir();
    let stem = format!("peerpipe-ended-{}-{}", std::process::id(), signal.as_str());
    let (json, csv) = (dir.join(format!("{stem}.json")), dir.join(format!("{stem}.csv")));
    let mut command = Command::new(peer_exe());
    command
        .args(["--sizes", "500,65536", "--dtype", "f64", "--transport", "pipe", "--wait"])
        .args(["hybrid", "--generations", "1", "--rounds", "4", "--duration", "40ms"])
        .args(["--warmup", "2ms", "--json"])
        .arg(&json)
        .arg("--csv")
        .arg(&csv);
    let mut run = launch(command, &new_tag("ended"));
    let until = Instant::now() + secs(30);
    let third_group =
        |tag: &str| leftovers::tagged(tag).iter().any(|p| p.cmdline.contains("--raw-echo 524288"));
    while !third_group(run.tag()) {
        assert!(run.running() && Instant::now() < until, "the third group never started");
        std::thread::sleep(Duration::from_millis(2));
    }
    let ending = run.end(Some(signal));
    let text = std::fs::read_to_string(&json);
    let table = std::fs::read_to_string(&csv).unwrap_or_default();
    let _ = std::fs::remove_file(&json);
    let _ = std::fs::remove_file(&csv);
    assert!(ending.leftovers.is_empty(), "{:?}", ending.leftovers);
    assert_eq!(ending.status.and_then(|s| s.code()), Some(128 + signal as i32), "{ending:?}");
    let interrupted = format!("interrupted by {}", signal.as_str());
    assert!(ending.stderr.contains(&interrupted), "{}", ending.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&text.expect("the JSON is written")).expect("JSON");
    let rows = report["rows"].as_array().expect("rows");
    let of = |bytes: u64| rows.iter().filter(move |r| r["bytes"] == bytes);
    // The 4000 B group ended before the signal: all four rows (two handlers, two paths).
    assert_eq!(of(4000).count(), 4, "{rows:?}");
    for row in of(4000) {
        assert_eq!(row["rounds"].as_array().map(Vec::len), Some(4), "{row}");
        assert!(row["iterations"].as_u64() > Some(0) && row["ratio_to_baseline"].is_number());
    }
    let floors: Vec<u64> = report["baseline"]
        .as_array()
        .expect("baseline")
        .iter()
        .filter_map(|b| b["bytes"].as_u64())
        .collect();
    assert!(floors.starts_with(&[8, 4000]), "{floors:?}");
    // The interrupted group's rows are listed with the reason, unless it finished first.
    let skipped = report["skipped"].as_array().expect("skipped");
    let listed = skipped
        .iter()
        .filter(|s| s["bytes"] == 524288 && s["failed"] == true)
        .inspect(|s| assert!(s["reason"].as_str().unwrap_or("").contains(&interrupted), "{s}"))
        .count();
    assert_eq!(listed + of(524288).count(), 4, "{skipped:?}");
    assert_eq!(table.lines().filter(|l| l.starts_with("f64,500,4000,")).count(), 4, "{table}");
    assert!(ending.stdout.contains("f64 x 500"), "the table is printed:\n{}", ending.stdout);
}

#[test]
fn a_report_ended_by_sigint_writes_every_row_measured_before_the_signal() {
    a_report_ended_by(Signal::SIGINT);
}

#[test]
fn a_report_ended_by_sigterm_writes_every_row_measured_before_the_signal() {
    a_report_ended_by(Signal::SIGTERM);
}

/// The re-executed test binary plays a misbehaving server; see `common::misbehave`.
#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}

/// A report waiting for a server that never answers (its deadline a minute away) is not held
/// by that wait: a second after SIGINT its servers are killed, the wait ends, and the report
/// exits 130 with nothing left behind.
#[test]
fn an_interrupted_report_is_not_held_by_a_wait_for_a_silent_server() {
    let _lock = serialize(&RUN_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let mut command = Command::new(peer_exe());
    command
        .args(["--role", "client", "--sizes", "500", "--dtype", "f64", "--path", "codec"])
        .args(["--wait", "block", "--timeout", "60s", "--spawn"])
        .arg(common::misbehaving_shell_line("hang-after-hello", None));
    let mut run = launch(command, &new_tag("silent"));
    let report = run.pid() as i32;
    let until = Instant::now() + secs(20);
    // The server, not the report (whose --spawn argument names it too).
    let silent = |tag: &str| {
        leftovers::tagged(tag)
            .iter()
            .any(|p| p.pid != report && p.cmdline.contains("misbehaving_server_entry"))
    };
    while !silent(run.tag()) {
        assert!(run.running() && Instant::now() < until, "the silent server never started");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(500)); // the report now waits for its reply
    let signalled = Instant::now();
    let ending = run.end(Some(Signal::SIGINT));
    let took = signalled.elapsed();
    assert!(ending.leftovers.is_empty(), "{:?}", ending.leftovers);
    assert_eq!(ending.status.and_then(|s| s.code()), Some(130), "{ending:?}");
    // One second of grace, then the kill; far from the minute the wait was allowed.
    assert!(took < secs(4), "the report took {took:?} to end after SIGINT");
    assert!(ending.stderr.contains("interrupted by SIGINT"), "{}", ending.stderr);
    // The row it was probing is listed with the interrupt as its reason.
    assert!(ending.stdout.contains("interrupted by SIGINT"), "{}", ending.stdout);
}
