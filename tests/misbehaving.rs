//! The client against servers that misbehave: each ends in its specific error within the
//! timeout, and no process is left behind, on every transport.
//!
//! The misbehaving servers are this test binary re-executed (servo/ipc-channel's pattern):
//! `misbehaving_server_entry` returns at once in a normal run, and plays the server named by
//! `PEERPIPE_MISBEHAVE` when started by `common::misbehaving_command_on`, over the transport
//! named by `PEERPIPE_MISBEHAVE_TRANSPORT`. Each test is a function of the transport, run as
//! `NAME::pipe`, `NAME::shm_sem` and `NAME::shm_ring` (see `per_transport!`). The tests count
//! child processes, so they take `FORK_LOCK` and never run concurrently (nix's `FORK_MTX`).

#[macro_use]
mod common;

use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    Watchdog, child_processes, misbehaving_command_on, misbehaving_shell_line_on, peer_exe, secs,
    serialize,
};
use peerpipe::frame::Dtype;
use peerpipe::{Error, Options, Peer, TransportKind};

static FORK_LOCK: Mutex<()> = Mutex::new(());

/// The re-executed test binary plays a misbehaving server; see `common::misbehave`.
#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}

const TIMEOUT: Duration = secs(2);

fn options(kind: TransportKind) -> Options {
    Options { timeout: Some(TIMEOUT), transport: kind, ..Options::default() }
}

/// Spawns the misbehaving server `mode` over `kind` and makes one call of four f64 values.
fn one_call(kind: TransportKind, mode: &str) -> peerpipe::Result<()> {
    let mut peer = Peer::spawn(misbehaving_command_on(kind, mode, None), options(kind))?;
    let mut reply = [0.0; 4];
    peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut reply)?;
    peer.close()?;
    Ok(())
}

/// Runs `one_call(kind, mode)` under the fork lock and a watchdog, checks that no child
/// process is left (alive or zombie), and returns the error.
fn misbehave(kind: TransportKind, mode: &str) -> Error {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    assert_eq!(child_processes(), [], "children before the test");
    let error = one_call(kind, mode).expect_err("a misbehaving server must make the call fail");
    assert_eq!(child_processes(), [], "{kind} {mode}: a child was left behind after {error}");
    error
}

per_transport!(
    an_interrupted_handshake_terminates_and_reaps_the_server_at_once,
    spawn_interruptible_left_alone_times_out_and_serves_as_spawn_does,
    terminate_abandons_a_call_in_progress_and_reaps_the_server_at_once,
    a_server_that_exits_at_once_is_peer_exited_with_status_3,
    a_server_that_never_says_hello_times_out,
    a_server_that_hangs_after_hello_times_out_waiting_for_seq_1,
    a_server_that_sends_garbage_is_bad_magic,
    a_reply_with_the_wrong_seq_is_a_seq_mismatch,
    a_reply_with_the_wrong_count_is_a_count_mismatch,
    a_reply_with_the_wrong_dtype_is_a_dtype_mismatch,
    a_hello_in_place_of_a_reply_is_an_unexpected_kind,
    a_server_that_sends_half_a_frame_and_exits_is_peer_exited_naming_the_truncation,
    a_server_that_sends_half_a_hello_header_and_exits_is_peer_exited_naming_the_truncation,
    a_server_killed_mid_run_is_peer_exited_killed_by_signal_9,
    a_server_killed_while_the_client_waits_is_reported_well_before_the_timeout,
    a_server_whose_handler_prints_to_stdout_still_speaks_clean_frames,
    the_client_binary_names_a_seq_mismatch_in_one_line_and_exits_2,
    the_client_binary_names_a_killed_server_in_one_line_and_exits_2,
    the_client_binary_names_a_timeout_in_one_line_and_exits_2,
    the_client_binary_names_an_early_exit_in_one_line_and_exits_2,
    a_timeout_after_an_error_reply_carries_the_servers_words,
    a_death_after_an_error_reply_carries_the_servers_words,
);

fn an_interrupted_handshake_terminates_and_reaps_the_server_at_once(kind: TransportKind) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    assert_eq!(child_processes(), [], "children before the test");
    // A server that never says HELLO, and a handshake timeout far beyond the interrupt.
    let options = Options { timeout: Some(secs(60)), ..options(kind) };
    let started = Instant::now();
    let asked = std::sync::atomic::AtomicUsize::new(0);
    let interrupted = || {
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        started.elapsed() > Duration::from_millis(300)
    };
    let silent = misbehaving_command_on(kind, "silent", None);
    let err = Peer::spawn_interruptible(silent, options, &interrupted)
        .expect_err("a server that never says HELLO cannot complete a handshake");
    let took = started.elapsed();
    assert!(matches!(err, Error::Interrupted { .. }), "{kind}: {err:?}");
    let waited_for = if kind == TransportKind::Tcp { "tcp announcement" } else { "HELLO" };
    assert!(err.to_string().contains(waited_for), "{err}");
    assert!(took < secs(30), "{kind}: returned after {took:?}, not at the interrupt");
    assert!(asked.load(std::sync::atomic::Ordering::Relaxed) >= 2, "asked between slices");
    // Terminated and reaped before the call returned: not left for the timeout.
    assert_eq!(child_processes(), [], "{kind}: the server outlived the interrupted handshake");
}

/// Over tcp the silent server never announces its address: the interrupt comes during that
/// wait, which is cut into slices as the HELLO's is.
#[test]
fn an_interrupted_tcp_set_up_terminates_and_reaps_the_server_at_once() {
    an_interrupted_handshake_terminates_and_reaps_the_server_at_once(TransportKind::Tcp);
}

fn spawn_interruptible_left_alone_times_out_and_serves_as_spawn_does(kind: TransportKind) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let never = || false;
    let silent = misbehaving_command_on(kind, "silent", None);
    match Peer::spawn_interruptible(silent, options(kind), &never) {
        Err(Error::Timeout { waiting_for, after }) => {
            assert_eq!(after, TIMEOUT);
            assert!(waiting_for.contains("HELLO"), "{waiting_for:?}");
        }
        other => panic!("{kind}: {:?}", other.map(|_| ())),
    }
    let echo = Peer::server_command(peer_exe(), "echo", &options(kind));
    let mut peer = Peer::spawn_interruptible(echo, options(kind), &never).expect("spawn echo");
    let mut reply = [0.0; 3];
    peer.call_f64(&[1.0, -0.0, f64::INFINITY], &mut reply).expect("call");
    assert_eq!(reply.map(f64::to_bits), [1.0, -0.0, f64::INFINITY].map(f64::to_bits));
    peer.close().expect("close");
    assert_eq!(child_processes(), [], "{kind}: a child was left behind");
}

fn terminate_abandons_a_call_in_progress_and_reaps_the_server_at_once(kind: TransportKind) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let options = Options { timeout: Some(secs(60)), ..options(kind) };
    let mut peer = Peer::spawn(misbehaving_command_on(kind, "hang-after-hello", None), options)
        .expect("spawn");
    let pid = peer.server_pid().expect("spawned");
    peer.send(peerpipe::Values::F64(&[1.0, 2.0])).expect("send");
    let mut reply = [0.0; 2];
    let idle = peer
        .recv_for(peerpipe::ValuesMut::F64(&mut reply), Duration::from_millis(20))
        .expect("an idle slice is not an error");
    assert!(idle.is_none());
    let started = Instant::now();
    let status = peer.terminate().expect("terminate").expect("a spawned server's status");
    // Not the 60 s timeout, nor close's wait for a reply: SIGTERM (and SIGKILL within 200 ms).
    assert!(started.elapsed() < secs(2), "took {:?}", started.elapsed());
    assert!(status.code().is_none(), "ended by a signal, not {status:?}");
    assert!(!common::is_our_child(pid), "server {pid} not reaped");
    assert_eq!(child_processes(), [], "a child was left behind");
}

fn a_server_that_exits_at_once_is_peer_exited_with_status_3(kind: TransportKind) {
    match misbehave(kind, "exit-3") {
        Error::PeerExited { status, .. } => assert_eq!(status, "exited with status 3"),
        other => panic!("{other:?}"),
    }
}

fn a_server_that_never_says_hello_times_out(kind: TransportKind) {
    match misbehave(kind, "silent") {
        Error::Timeout { waiting_for, after } => {
            assert_eq!(after, TIMEOUT);
            assert!(waiting_for.contains("HELLO"), "{waiting_for:?}");
        }
        other => panic!("{other:?}"),
    }
}

fn a_server_that_hangs_after_hello_times_out_waiting_for_seq_1(kind: TransportKind) {
    match misbehave(kind, "hang-after-hello") {
        Error::Timeout { waiting_for, after } => {
            assert_eq!(after, TIMEOUT);
            assert!(waiting_for.contains("reply to seq 1"), "{waiting_for:?}");
        }
        other => panic!("{other:?}"),
    }
}

fn a_server_that_sends_garbage_is_bad_magic(kind: TransportKind) {
    // Garbage where the HELLO is due: a program that is no server, shown what it printed.
    match misbehave(kind, "garbage") {
        Error::BadHello { reason } => {
            assert!(
                reason.contains("sent \"this is not a frame of wire form\"… first"),
                "{reason}"
            );
            assert!(reason.contains("bad magic: expected \"PEER\" (50 45 45 52)"), "{reason}");
            assert!(reason.contains(peerpipe::peer::SPEAK_PEERPIPE), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

fn a_reply_with_the_wrong_seq_is_a_seq_mismatch(kind: TransportKind) {
    match misbehave(kind, "wrong-seq") {
        Error::SeqMismatch { expected: 1, found: 2 } => {}
        other => panic!("{other:?}"),
    }
}

fn a_reply_with_the_wrong_count_is_a_count_mismatch(kind: TransportKind) {
    match misbehave(kind, "wrong-count") {
        Error::CountMismatch { seq: 1, expected: 4, found: 3 } => {}
        other => panic!("{other:?}"),
    }
}

fn a_reply_with_the_wrong_dtype_is_a_dtype_mismatch(kind: TransportKind) {
    match misbehave(kind, "wrong-dtype") {
        Error::DtypeMismatch { seq: 1, expected: Dtype::F64, found: Dtype::F32 } => {}
        other => panic!("{other:?}"),
    }
}

fn a_hello_in_place_of_a_reply_is_an_unexpected_kind(kind: TransportKind) {
    match misbehave(kind, "hello-reply") {
        Error::UnexpectedKind { found: peerpipe::frame::Kind::Hello, .. } => {}
        other => panic!("{other:?}"),
    }
}

fn a_server_that_sends_half_a_frame_and_exits_is_peer_exited_naming_the_truncation(
    kind: TransportKind,
) {
    match misbehave(kind, "half-frame") {
        Error::PeerExited { status, context, code, signal } => {
            assert_eq!(status, "exited with status 0");
            assert_eq!((code, signal), (Some(0), None), "the status as a number too");
            assert!(context.contains("truncated payload: got 13 of 32 bytes"), "{context:?}");
        }
        Error::Truncated { what: "payload", expected: 32, got: 13 } => {}
        other => panic!("{other:?}"),
    }
}

fn a_server_that_sends_half_a_hello_header_and_exits_is_peer_exited_naming_the_truncation(
    kind: TransportKind,
) {
    match misbehave(kind, "half-header") {
        Error::PeerExited { status, context, code, .. } => {
            assert_eq!((status.as_str(), code), ("exited with status 0", Some(0)));
            assert!(context.contains("truncated header: got 10 of 32 bytes"), "{context:?}");
        }
        Error::Truncated { what: "header", expected: 32, got: 10 } => {}
        other => panic!("{other:?}"),
    }
}

fn a_server_killed_mid_run_is_peer_exited_killed_by_signal_9(kind: TransportKind) {
    match misbehave(kind, "killed") {
        Error::PeerExited { status, context, code, signal } => {
            assert!(status.contains("killed by signal 9"), "{status:?}");
            assert_eq!((code, signal), (None, Some(9)), "the signal as a number too");
            assert!(context.contains("seq 1"), "{context:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// A server that has said HELLO and read the request is SIGKILLed from outside while the
/// client waits for the reply: the client must see its death (over shared memory, through the
/// liveness pipe it checks at least every 10 ms while sleeping) and say how it died, long
/// before its own timeout.
fn a_server_killed_while_the_client_waits_is_reported_well_before_the_timeout(kind: TransportKind) {
    const KILL_AFTER: Duration = Duration::from_millis(300);
    let timeout = secs(6);
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    assert_eq!(child_processes(), [], "children before the test");
    let options = Options { timeout: Some(timeout), ..options(kind) };
    let mut peer = Peer::spawn(misbehaving_command_on(kind, "hang-after-hello", None), options)
        .expect("spawn a server that answers HELLO and nothing else");
    assert_eq!(peer.transport_kind(), kind);
    let pid = nix::unistd::Pid::from_raw(peer.server_pid().expect("spawned") as i32);
    // The server stays our (unreaped) child until the peer reaps it, so the pid cannot be
    // reused before the kill.
    let killer = thread::spawn(move || {
        thread::sleep(KILL_AFTER);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL the server");
        Instant::now()
    });
    let started = Instant::now();
    let result = peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut [0.0; 4]);
    let done = Instant::now();
    let killed_at = killer.join().expect("killer thread");
    let elapsed = done - started;
    let noticed_after = done.saturating_duration_since(killed_at);
    eprintln!("{kind}: the death was reported {noticed_after:?} after the kill");
    match result {
        Err(Error::PeerExited { status, context, .. }) => {
            assert!(status.contains("killed by signal 9"), "{kind}: {status:?}");
            assert!(context.contains("reply to seq 1"), "{kind}: {context:?}");
        }
        other => panic!("{kind}: expected the server's death, got {other:?} after {elapsed:?}"),
    }
    assert!(
        elapsed < timeout / 2,
        "{kind}: the death was reported {elapsed:?} into a call with a timeout of {timeout:?} \
         ({noticed_after:?} after the kill)"
    );
    drop(peer);
    assert_eq!(child_processes(), [], "{kind}: a child was left behind");
}

fn a_server_whose_handler_prints_to_stdout_still_speaks_clean_frames(kind: TransportKind) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let log =
        std::env::temp_dir().join(format!("peerpipe-noisy-echo-{}-{kind}.log", std::process::id()));
    let mut peer =
        Peer::spawn(misbehaving_command_on(kind, "noisy-echo", Some(&log)), options(kind))
            .expect("spawn");
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

/// Runs `peer --role client --transport KIND --spawn CMD` against the misbehaving server
/// `mode` and returns its stderr after checking exit status 2, a single `peer: error: ` line,
/// no panic or backtrace, and no process left behind.
fn client_binary_against(kind: TransportKind, mode: &str) -> String {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let output = Command::new(peer_exe())
        .args(["--role", "client", "--timeout", "1s", "--iters", "3", "--sizes", "4"])
        .args(["--transport", kind.name(), "--spawn"])
        .arg(misbehaving_shell_line_on(kind, mode, Some(std::path::Path::new("/dev/null"))))
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run peer --role client");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(2),
        "{kind} {mode}: {:?}, stderr {stderr:?}",
        output.status
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{kind} {mode}: expected one stderr line, got {stderr:?}");
    assert!(lines[0].starts_with("peer: error: "), "{kind} {mode}: {:?}", lines[0]);
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr:?}");
    // The client reaped its server before exiting, so nothing was re-parented to us either.
    assert_eq!(child_processes(), []);
    assert!(
        !server_still_running(mode),
        "{kind} {mode}: a misbehaving server outlived `peer --role client`"
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

fn the_client_binary_names_a_seq_mismatch_in_one_line_and_exits_2(kind: TransportKind) {
    let line = client_binary_against(kind, "wrong-seq");
    assert!(
        line.contains("seq mismatch: expected reply to seq 1, found seq 2"),
        "{kind}: {line:?}"
    );
}

fn the_client_binary_names_a_killed_server_in_one_line_and_exits_2(kind: TransportKind) {
    let line = client_binary_against(kind, "killed");
    assert!(line.contains("killed by signal 9"), "{kind}: {line:?}");
}

fn the_client_binary_names_a_timeout_in_one_line_and_exits_2(kind: TransportKind) {
    let line = client_binary_against(kind, "hang-after-hello");
    assert!(line.contains("timed out after 1s waiting for the reply to seq 1"), "{kind}: {line:?}");
}

fn the_client_binary_names_an_early_exit_in_one_line_and_exits_2(kind: TransportKind) {
    let line = client_binary_against(kind, "exit-3");
    assert!(line.contains("exited with status 3"), "{kind}: {line:?}");
}

// ---------------------------------------------------------------------------------------------
// A server's words: an ERROR reply, then silence or death
// ---------------------------------------------------------------------------------------------

/// Spawns the `mode` server over `kind` and makes the first call, which it answers with
/// ERROR: the conversation goes on, and the error is the server's text.
fn first_call_gets_the_servers_words(kind: TransportKind, mode: &str) -> Peer {
    let options = Options { timeout: Some(Duration::from_millis(500)), ..options(kind) };
    let mut peer = Peer::spawn(misbehaving_command_on(kind, mode, None), options).expect("spawn");
    let mut reply = [0.0; 4];
    match peer.call_f64(&[1.0, 2.0, 3.0, 4.0], &mut reply) {
        Err(Error::Remote { seq: 1, message }) => assert_eq!(message, common::OUT_OF_CHEESE),
        other => panic!("{kind} {mode}: expected the ERROR reply, got {other:?}"),
    }
    peer
}

fn a_timeout_after_an_error_reply_carries_the_servers_words(kind: TransportKind) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = first_call_gets_the_servers_words(kind, "out-of-cheese");
    let mut reply = [0.0; 4];
    let error = peer.call_f64(&[1.0; 4], &mut reply).expect_err("the server never answers");
    match &error {
        Error::Timeout { waiting_for, .. } => {
            assert!(waiting_for.starts_with("waiting for the reply to seq 2;"), "{kind}: {error}");
            assert!(waiting_for.ends_with(common::OUT_OF_CHEESE), "{kind}: {error}");
        }
        other => panic!("{kind}: expected Timeout, got {other:?}"),
    }
    // Every later call repeats why the connection ended, words included.
    let again = peer.call_f64(&[1.0; 4], &mut reply).expect_err("closed after the timeout");
    assert!(again.to_string().contains(common::OUT_OF_CHEESE), "{kind}: {again}");
    drop(peer);
    assert_eq!(child_processes(), [], "{kind}: the server was reaped");
}

fn a_death_after_an_error_reply_carries_the_servers_words(kind: TransportKind) {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(20));
    let mut peer = first_call_gets_the_servers_words(kind, "out-of-cheese-then-exit");
    let mut reply = [0.0; 4];
    let error = peer.call_f64(&[1.0; 4], &mut reply).expect_err("the server exits");
    match &error {
        Error::PeerExited { code: Some(3), context, .. } => {
            assert!(context.ends_with(common::OUT_OF_CHEESE), "{kind}: {error}");
        }
        other => panic!("{kind}: expected PeerExited with status 3, got {other:?}"),
    }
    drop(peer);
    assert_eq!(child_processes(), [], "{kind}: the server was reaped");
}

/// The report against a server that answers its first request with ERROR and then never
/// again: the skipped row says the server's words, the row whose probe then timed out says
/// them too, and so does the error line; the table and the JSON are written all the same.
#[test]
fn the_report_against_a_server_that_fails_then_falls_silent_shows_and_writes_its_words() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let json = std::env::temp_dir().join(format!("peerpipe-cheese-{}.json", std::process::id()));
    let output = Command::new(peer_exe())
        .args(["--role", "client", "--sizes", "500", "--timeout", "1s", "--wait", "hybrid"])
        .args(["--duration", "20ms", "--rounds", "2", "--generations", "1", "--json"])
        .arg(&json)
        .arg("--spawn")
        .arg(misbehaving_shell_line_on(TransportKind::Pipe, "out-of-cheese", None))
        .stdin(Stdio::null())
        .output()
        .expect("run peer --role client");
    let text = std::fs::read_to_string(&json);
    let _ = std::fs::remove_file(&json);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stdout.contains(common::OUT_OF_CHEESE), "the report shows the words:\n{stdout}");
    let error_line = stderr.lines().find(|l| l.starts_with("peer: error: ")).unwrap_or_default();
    assert!(error_line.contains(common::OUT_OF_CHEESE), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_str(&text.expect("the JSON is written")).expect("JSON");
    let skipped = report["skipped"].as_array().expect("skipped");
    let said = |failed: bool| {
        skipped.iter().any(|s| {
            s["failed"] == failed
                && s["reason"].as_str().is_some_and(|r| r.contains(common::OUT_OF_CHEESE))
        })
    };
    assert!(said(false), "a row skipped for the server's words: {skipped:?}");
    assert!(said(true), "a failed row whose timeout carries them: {skipped:?}");
    assert!(!report["baseline"].as_array().expect("baseline").is_empty(), "the floors");
    assert_eq!(child_processes(), []);
    assert!(!server_still_running("out-of-cheese"), "a server outlived the report");
}
