//! The one spawn rule, seen from Rust: a shell line that is a simple command runs as
//! `exec LINE`, so the process spawned is the server itself (its pid is the one `Peer` knows,
//! its parent is this process), not a shell waiting for it. Python and C check the same
//! (python/tests/test_echo.py, capi/tests/c/spawn.c).

mod common;

use common::{Watchdog, peer_exe, secs};
use peerpipe::{Options, Peer};

/// The program behind a running pid and its parent's pid, from `/proc`.
fn program_and_parent(pid: u32) -> (String, u32) {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("the server's exe");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the server's stat");
    // The fields after the command name (which ends at the last ')') start with the state,
    // then the parent's pid.
    let after_name = &stat[stat.rfind(')').expect("a command name") + 1..];
    let parent = after_name.split_whitespace().nth(1).expect("ppid").parse().expect("a pid");
    let name = exe.file_name().expect("a file name").to_string_lossy().into_owned();
    (name, parent)
}

#[test]
fn a_simple_shell_line_runs_the_server_in_the_shells_place() {
    let _watchdog = Watchdog::new(secs(20));
    let line = format!("{} --role server --handler echo", peer_exe());
    let mut peer = Peer::spawn_shell(&line, Options::default()).expect("spawn through sh -c");
    let pid = peer.server_pid().expect("a spawned server has a pid");
    assert_eq!(program_and_parent(pid), ("peer".to_owned(), std::process::id()));
    let mut out = [0.0];
    peer.call_f64(&[2.5], &mut out).expect("the server answers");
    assert_eq!(out, [2.5]);
}
