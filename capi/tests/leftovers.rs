//! A C program that never calls `pp_close` leaves nothing behind: whether it returns from
//! `main`, crashes (`abort`) or is killed (SIGKILL) in the middle of its calls, within a
//! second of its end its servers — over a pipe and over shared memory — are gone, nothing of
//! it holds shared memory, and its stdout and stderr are at end of stream. The servers see
//! their client's ends close and exit by themselves (see the crate's `docs/GUARANTEES.md`).
//!
//! A few runs each; `PEERPIPE_LEFTOVER_RUNS=N` makes N (`benches/leftovers.sh`).

mod common;

#[path = "../../tests/common/leftovers.rs"]
mod leftovers;

use std::process::Command;
use std::time::{Duration, Instant};

use leftovers::{Ending, Moments, launch, new_tag, runs, summary};
use nix::sys::signal::Signal;

/// Runs of each ending in a plain `cargo test`.
const RUNS: usize = 3;

fn leftover_client() -> Option<std::path::PathBuf> {
    common::have("cc").then(|| common::compile_c("tests/c/leftover.c"))
}

/// Runs the client `count` times in `mode`; with `signal`, sends it at a random moment after
/// the client said `ready` (its peers are up and calling).
fn runs_of(mode: &str, signal: Option<Signal>) {
    let Some(client) = leftover_client() else { return };
    let how = signal.map_or_else(|| format!("{mode} without pp_close"), |s| s.as_str().to_owned());
    let mut moments = Moments::new(&how);
    let mut endings: Vec<Ending> = Vec::new();
    for _ in 0..runs(RUNS) {
        let mut command = Command::new(&client);
        command.arg(mode).arg(common::peer_exe());
        let run = launch(command, &new_tag("c"));
        if let Some(_signal) = signal {
            // The peers are up once both servers exist; then calls go on until the signal.
            let until = Instant::now() + Duration::from_secs(30);
            while leftovers::tagged(run.tag()).len() < 3 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
            std::thread::sleep(moments.between(Duration::ZERO, Duration::from_millis(300)));
        }
        let ending = run.end(signal);
        let expected = match mode {
            "exit" => ending.status.and_then(|s| s.code()) == Some(0),
            _ => ending.status.is_some_and(|s| !s.success()),
        };
        assert!(expected, "{how}: {ending:?}");
        if signal.is_none() {
            assert!(ending.stdout.contains("ready"), "{how}: {ending:?}");
        }
        endings.push(ending);
    }
    let text = summary("c-client", &how, &endings);
    println!("{text}");
    assert!(endings.iter().all(|e| e.leftovers.is_empty()), "{text}");
}

#[test]
fn a_c_client_returning_from_main_without_pp_close_leaves_nothing_behind() {
    runs_of("exit", None);
}

#[test]
fn a_c_client_that_crashes_without_pp_close_leaves_nothing_behind() {
    runs_of("abort", None);
}

#[test]
fn a_c_client_killed_mid_call_leaves_nothing_behind() {
    runs_of("calls", Some(Signal::SIGKILL));
}
