//! The client against servers that misbehave: each ends in its specific error within the
//! timeout, and no process is left behind.
//!
//! The misbehaving servers are this test binary re-executed (servo/ipc-channel's pattern):
//! `misbehaving_server_entry` returns at once in a normal run, and plays the server named by
//! `PEERPIPE_MISBEHAVE` when started by `common::misbehaving_command`. The tests count child
//! processes, so they take `FORK_LOCK` and never run concurrently (nix's `FORK_MTX`).

mod common;

use std::process::{Command, Stdio};
use std::sync::Mutex;

use common::{
    Watchdog, child_processes, misbehaving_command, misbehaving_shell_line, peer_exe, secs,
    serialize,
};
use peerpipe::frame::Dtype;
use peerpipe::{Error, Options, Peer};

static FORK_LOCK: Mutex<()> = Mutex::new(());

/// The re-executed test binary plays a misbehaving server; see `common::misbehave`.
#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}

const TIMEOUT: std::time::Duration = secs(2);

/// Spawns the misbehaving server `mode` and makes one call of four f64 values.
fn one_call(mode: &str) -> peerpipe::Result<()> {
    let options = Options { timeout: Some(TIMEOUT), ..Options::default() };
    let mut peer = Peer::spawn(misbehaving_command(mode, None), options)?;
    let mut reply = [0.0; 4];
    peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut reply)?;
    peer.close()?;
    Ok(())
}

/// Runs `one_call(mode)` under the fork lock and a watchdog, checks that no child process is
/// left (alive or zombie), and returns the error.
fn misbehave(mode: &str) -> Error {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    assert_eq!(child_processes(), [], "children before the test");
    let error = one_call(mode).expect_err("a misbehaving server must make the call fail");
    assert_eq!(child_processes(), [], "{mode}: a child was left behind after {error}");
    error
}

#[test]
fn a_server_that_exits_at_once_is_peer_exited_with_status_3() {
    match misbehave("exit-3") {
        Error::PeerExited { status, .. } => assert_eq!(status, "exited with status 3"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_never_says_hello_times_out() {
    match misbehave("silent") {
        Error::Timeout { waiting_for, after } => {
            assert_eq!(after, TIMEOUT);
            assert!(waiting_for.contains("HELLO"), "{waiting_for:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_hangs_after_hello_times_out_waiting_for_seq_1() {
    match misbehave("hang-after-hello") {
        Error::Timeout { waiting_for, after } => {
            assert_eq!(after, TIMEOUT);
            assert!(waiting_for.contains("reply to seq 1"), "{waiting_for:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_sends_garbage_is_bad_magic() {
    match misbehave("garbage") {
        Error::BadMagic { found } => assert_eq!(&found, b"this"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_with_the_wrong_seq_is_a_seq_mismatch() {
    match misbehave("wrong-seq") {
        Error::SeqMismatch { expected: 1, found: 2 } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_with_the_wrong_count_is_a_count_mismatch() {
    match misbehave("wrong-count") {
        Error::CountMismatch { seq: 1, expected: 4, found: 3 } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_with_the_wrong_dtype_is_a_dtype_mismatch() {
    match misbehave("wrong-dtype") {
        Error::DtypeMismatch { seq: 1, expected: Dtype::F64, found: Dtype::F32 } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_hello_in_place_of_a_reply_is_an_unexpected_kind() {
    match misbehave("hello-reply") {
        Error::UnexpectedKind { found: peerpipe::frame::Kind::Hello, .. } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_sends_half_a_frame_and_exits_is_peer_exited_naming_the_truncation() {
    match misbehave("half-frame") {
        Error::PeerExited { status, context } => {
            assert_eq!(status, "exited with status 0");
            assert!(context.contains("truncated payload: got 13 of 32 bytes"), "{context:?}");
        }
        Error::Truncated { what: "payload", expected: 32, got: 13 } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_that_sends_half_a_hello_header_and_exits_is_peer_exited_naming_the_truncation() {
    match misbehave("half-header") {
        Error::PeerExited { status, context } => {
            assert_eq!(status, "exited with status 0");
            assert!(context.contains("truncated header: got 10 of 32 bytes"), "{context:?}");
        }
        Error::Truncated { what: "header", expected: 32, got: 10 } => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_killed_mid_run_is_peer_exited_killed_by_signal_9() {
    match misbehave("killed") {
        Error::PeerExited { status, context } => {
            assert!(status.contains("killed by signal 9"), "{status:?}");
            assert!(context.contains("seq 1"), "{context:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_server_whose_handler_prints_to_stdout_still_speaks_clean_frames() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let options = Options { timeout: Some(TIMEOUT), ..Options::default() };
    let log = std::env::temp_dir().join(format!("peerpipe-noisy-echo-{}.log", std::process::id()));
    let mut peer =
        Peer::spawn(misbehaving_command("noisy-echo", Some(&log)), options).expect("spawn");
    assert_eq!(peer.server_hello().handler.as_deref(), Some("noisy-echo"));
    let values = common::f64_edges();
    let mut reply = vec![0.0; values.len()];
    for _ in 0..3 {
        peer.call_f64(&values, &mut reply).expect("call through a noisy server");
        assert_eq!(common::bits64(&reply), common::bits64(&values));
    }
    let status = peer.close().expect("close").expect("status");
    assert!(status.success(), "{status:?}");
    assert_eq!(child_processes(), []);
    // The prints were not lost either: they went to the server's stderr.
    let stderr = std::fs::read_to_string(&log).expect("the server's stderr");
    let _ = std::fs::remove_file(&log);
    assert!(stderr.contains("a stray print after stdio_transport"), "{stderr:?}");
    for seq in 1..=3 {
        assert!(stderr.contains(&format!("from the handler, seq {seq}\n")), "{stderr:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The `peer --role client` binary against misbehaving servers
// ---------------------------------------------------------------------------------------------

/// Runs `peer --role client --spawn CMD` against the misbehaving server `mode` and returns its
/// stderr after checking exit status 2, a single `peer: error: ` line, no panic or backtrace,
/// and no process left behind.
fn client_binary_against(mode: &str) -> String {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let output = Command::new(peer_exe())
        .args(["--role", "client", "--timeout", "1s", "--iters", "3", "--sizes", "4", "--spawn"])
        .arg(misbehaving_shell_line(mode, Some(std::path::Path::new("/dev/null"))))
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run peer --role client");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(2), "{mode}: {:?}, stderr {stderr:?}", output.status);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{mode}: expected one stderr line, got {stderr:?}");
    assert!(lines[0].starts_with("peer: error: "), "{mode}: {:?}", lines[0]);
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr:?}");
    // The client reaped its server before exiting, so nothing was re-parented to us either.
    assert_eq!(child_processes(), []);
    assert!(
        !server_still_running(mode),
        "{mode}: a misbehaving server outlived `peer --role client`"
    );
    lines[0].to_owned()
}

/// True when a process started for `mode` is still running anywhere (orphans are re-parented
/// to init, so the child counter cannot see them).
fn server_still_running(mode: &str) -> bool {
    let mode_var = format!("{}={mode}", common::MISBEHAVE_VAR);
    let owner_var = format!("{}={}", common::OWNER_VAR, std::process::id());
    let Ok(entries) = std::fs::read_dir("/proc") else { return false };
    entries.flatten().any(|entry| {
        std::fs::read(entry.path().join("environ")).is_ok_and(|env| {
            let mut vars = env.split(|&b| b == 0);
            vars.clone().any(|var| var == mode_var.as_bytes())
                && vars.any(|var| var == owner_var.as_bytes())
        })
    })
}

#[test]
fn the_client_binary_names_a_seq_mismatch_in_one_line_and_exits_2() {
    let line = client_binary_against("wrong-seq");
    assert!(line.contains("seq mismatch: expected reply to seq 1, found seq 2"), "{line:?}");
}

#[test]
fn the_client_binary_names_a_killed_server_in_one_line_and_exits_2() {
    let line = client_binary_against("killed");
    assert!(line.contains("killed by signal 9"), "{line:?}");
}

#[test]
fn the_client_binary_names_a_timeout_in_one_line_and_exits_2() {
    let line = client_binary_against("hang-after-hello");
    assert!(line.contains("timed out after 1s waiting for the reply to seq 1"), "{line:?}");
}

#[test]
fn the_client_binary_names_an_early_exit_in_one_line_and_exits_2() {
    let line = client_binary_against("exit-3");
    assert!(line.contains("exited with status 3"), "{line:?}");
}
