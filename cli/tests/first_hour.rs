//! The first hour: what a new user runs into, tried as they would try it.
//!
//! - `cat` is not a server: its HELLO is our own, and the handshake says so;
//! - a reply buffer of the wrong length or dtype is refused before anything is sent, and the
//!   peer stays usable; an error that ends the connection is named by every later call;
//! - a handler that cannot serve some rows (`lorenz96` with f32, or fewer than 4 elements)
//!   skips them with a note instead of ending the run;
//! - the report answers "what overhead will my callback cost?" in its first lines;
//! - a missing `peer` binary names every place it was looked for;
//! - a server that dies during the handshake is quoted from its stderr;
//! - a program that is no server is told what a server is, and shown what it printed;
//! - a frame too large names the limit to raise, on the side that refused it.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};

use common::{Watchdog, peer_exe, read_on_thread, secs, wait_or_kill};
use peerpipe::peer::OWN_HELLO_ECHOED;
use peerpipe::{Error, Options, Peer, TransportKind};

/// Runs `peer ARGS` with a deadline; returns (status, stdout, stderr).
fn run_peer(args: &[&str], limit_secs: u64) -> (ExitStatus, String, String) {
    run(Command::new(peer_exe()).args(args), limit_secs)
}

fn run(command: &mut Command, limit_secs: u64) -> (ExitStatus, String, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let out = read_on_thread(child.stdout.take().expect("stdout"));
    let err = read_on_thread(child.stderr.take().expect("stderr"));
    let status = wait_or_kill(&mut child, secs(limit_secs), "the command");
    (status, out.join().expect("stdout reader"), err.join().expect("stderr reader"))
}

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("peerpipe-first-hour", name)
}

fn quick_options() -> Options {
    Options { timeout: Some(secs(10)), ..Options::default() }
}

// ---- 4. A HELLO is a server's HELLO ----------------------------------------------------------

#[test]
fn cat_as_a_server_fails_the_handshake_naming_the_echo() {
    let _watchdog = Watchdog::new(secs(60));
    let err = Peer::spawn_shell("cat", quick_options()).expect_err("cat is not a server");
    assert!(matches!(err, Error::BadHello { .. }), "{err:?}");
    assert!(err.to_string().contains(OWN_HELLO_ECHOED), "{err}");
}

#[test]
fn peer_spawn_cat_exits_2_with_the_echo_message_at_the_handshake() {
    let _watchdog = Watchdog::new(secs(120));
    let (status, stdout, stderr) =
        run_peer(&["--spawn", "cat", "--sizes", "8", "--dtype", "f64", "--wait", "block"], 60);
    assert_eq!(status.code(), Some(2), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains(
            "the peer sent back our own HELLO: is the command echoing its input, like cat?"
        ),
        "{stderr}"
    );
}

#[test]
fn a_hello_without_role_server_is_refused_with_what_was_found() {
    let _watchdog = Watchdog::new(secs(60));
    // A "server" that answers with a HELLO of its own that lacks role=server.
    let line = r#"printf 'PEER\001\001\000\000\000\000\000\000\000\000\000\000\035\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000version=1\nmax_frame_bytes=64\n\000\000\000'; cat >/dev/null"#;
    let err = Peer::spawn_shell(line, quick_options()).expect_err("no role=server");
    let text = err.to_string();
    assert!(text.contains("expected role=server"), "{text}");
    assert!(text.contains("found no role"), "{text}");
}

#[test]
fn the_server_hello_says_role_server_and_its_pid() {
    let _watchdog = Watchdog::new(secs(60));
    let peer = Peer::spawn_server(peer_exe(), "echo", quick_options()).expect("spawn");
    let hello = peer.server_hello().clone();
    assert!(hello.is_server(), "{hello:?}");
    assert_eq!(hello.pid, peer.server_pid(), "{hello:?}");
    peer.close().expect("close");
}

// ---- 5. Validate before sending, keep the peer usable ----------------------------------------

#[test]
fn a_499_slot_reply_buffer_for_500_values_is_refused_before_sending_and_the_next_call_works() {
    let _watchdog = Watchdog::new(secs(60));
    let mut peer = Peer::spawn_server(peer_exe(), "echo", quick_options()).expect("spawn");
    let state: Vec<f64> = (0..500).map(f64::from).collect();
    let mut short = vec![0.0; 499];
    let err = peer.call_f64(&state, &mut short).expect_err("a 499-slot buffer");
    assert_eq!(
        err.to_string(),
        "length mismatch for the reply buffer (a call's reply has the request's length): \
         expected 500, found 499"
    );
    assert_eq!(peer.in_flight(), 0);
    let mut reply = vec![0.0; 500];
    peer.call_f64(&state, &mut reply).expect("the next good call");
    assert_eq!(reply, state);
    peer.close().expect("close");
}

#[test]
fn every_call_after_a_fatal_error_says_what_closed_the_connection() {
    let _watchdog = Watchdog::new(secs(60));
    let mut peer = Peer::spawn_server(peer_exe(), "echo", quick_options()).expect("spawn");
    // A reply of another shape leaves the connection usable; a server that died does not.
    peer.send(peerpipe::Values::F64(&[1.0, 2.0])).expect("send");
    let shape = peer.recv(peerpipe::ValuesMut::F64(&mut [0.0])).expect_err("a short buffer");
    assert!(shape.is_recoverable(), "{shape}");
    let pid = peer.server_pid().expect("spawned").to_string();
    let killed = std::process::Command::new("kill").args(["-KILL", &pid]).status();
    assert!(killed.expect("run kill").success());
    let fatal = peer.call_f64(&[1.0], &mut [0.0]).expect_err("the server is dead");
    for _ in 0..3 {
        let later = peer.call_f64(&[1.0], &mut [0.0]).expect_err("closed");
        assert_eq!(later.to_string(), format!("peer connection closed after: {fatal}"));
    }
}

// ---- 3. A run survives what it cannot measure ------------------------------------------------

/// A report run short enough for a test: small bursts, few rounds, one generation.
const SHORT: [&str; 8] =
    ["--duration", "4ms", "--rounds", "2", "--generations", "1", "--warmup", "1ms"];

#[test]
fn peer_handler_lorenz96_measures_what_it_can_and_notes_the_rest() {
    let _watchdog = Watchdog::new(secs(240));
    let dir = temp_dir("lorenz96");
    let json = dir.join("run.json");
    let csv = dir.join("run.csv");
    let mut args = vec!["--handler", "lorenz96", "--sizes", "1,500", "--wait", "block"];
    args.extend(SHORT);
    args.extend(["--json", json.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    let (status, stdout, stderr) = run_peer(&args, 200);
    assert!(status.success(), "{status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("skipped:"), "{stdout}");
    assert!(stdout.contains("wrong dtype"), "{stdout}");
    assert!(stdout.contains("needs at least 4 elements"), "{stdout}");
    let report = peerpipe_cli::report::export::read_json(&json).expect("read the JSON");
    let measured: Vec<(&str, u64)> =
        report.rows.iter().map(|r| (r.id.dtype.name(), r.id.elements)).collect();
    assert!(measured.iter().all(|&m| m == ("f64", 500)), "{measured:?}");
    assert!(!measured.is_empty());
    assert!(report.skipped.iter().all(|s| !s.failed && s.id.handler.name() == "lorenz96"));
    assert!(
        report
            .skipped
            .iter()
            .any(|s| s.id.dtype.name() == "f32" && s.reason.contains("wrong dtype"))
    );
    assert!(report.skipped.iter().any(|s| s.id.elements == 1 && s.reason.contains("at least 4")));
    let csv = std::fs::read_to_string(&csv).expect("read the CSV");
    let rows_in_csv = csv.lines().filter(|l| l.contains(",lorenz96,")).count();
    assert_eq!(rows_in_csv, report.rows.len(), "{csv}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_quick_lorenz96_run_completes_with_size_1_noted() {
    let _watchdog = Watchdog::new(secs(240));
    let mut args = vec!["--quick", "--handler", "lorenz96", "--sizes", "1,500"];
    args.extend(SHORT);
    let (status, stdout, stderr) = run_peer(&args, 200);
    assert!(status.success(), "{status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let answer: Vec<&str> = stdout.lines().take(8).collect();
    assert!(
        answer.iter().any(|l| l.contains("f64 x 1 ") && l.contains("not measured")),
        "{stdout}"
    );
    assert!(answer.iter().any(|l| l.contains("f64 x 500") && l.contains("lorenz96")), "{stdout}");
}

// ---- 1. The answer first ---------------------------------------------------------------------

#[test]
fn the_500_double_answer_is_in_the_first_15_lines_of_a_full_size_run() {
    let _watchdog = Watchdog::new(secs(280));
    // Every dtype and the default small sizes, as `peer` with no flags measures them (the
    // two large sizes only add lines further down the answer).
    let mut args = vec!["--sizes", "1,8,500,1000", "--wait", "block"];
    args.extend(SHORT);
    let (status, stdout, stderr) = run_peer(&args, 240);
    assert!(status.success(), "{status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let first: Vec<&str> = stdout.lines().take(15).collect();
    assert!(first[0].starts_with("answer:"), "{stdout}");
    let line = first
        .iter()
        .find(|l| l.trim_start().starts_with("f64 x 500 "))
        .unwrap_or_else(|| panic!("no f64 x 500 answer in the first 15 lines:\n{stdout}"));
    // overhead p50, p99, paired ratio with interval (or unresolved, a run this short may not
    // resolve it), budget, and the realistic row (echo).
    assert!(line.contains("x [") || line.contains("unresolved"), "{line}");
    assert!(line.contains("met") || line.contains("MISSED"), "{line}");
    assert!(line.contains("echo ") && !line.contains("echo-raw"), "{line}");
    assert!(first.iter().any(|l| l.contains("overhead = round trip - server time")), "{stdout}");
    // The summary names the realistic row and, apart, the floor and echo-raw.
    assert!(stdout.contains("  your case's round trip p50 "), "{stdout}");
    assert!(stdout.contains("not your case: raw floor p50"), "{stdout}");
}

// ---- 2. Finding `peer` -----------------------------------------------------------------------

#[test]
fn a_missing_peer_binary_names_every_place_it_looked() {
    let name = std::path::Path::new("peerpipe-no-such-peer");
    let env_set = std::env::var_os(peerpipe::peer::PEER_ENV).is_some_and(|v| !v.is_empty());
    match peerpipe::peer::find_peer_binary(Some(name)) {
        Err(e @ Error::PeerNotFound { .. }) => {
            assert_eq!(e.kind(), peerpipe::ErrorKind::NotFound);
            let text = e.to_string();
            if !env_set {
                assert!(text.contains("PEERPIPE_PEER (not set)"), "{text}");
            }
            assert!(text.contains("peerpipe-no-such-peer on PATH (not in "), "{text}");
            assert!(text.contains("cargo install --path cli"), "{text}");
        }
        Ok(found) => assert!(env_set, "found {found:?} without PEERPIPE_PEER"),
        Err(other) => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_peer_path_is_an_error_naming_it_and_never_another_binary() {
    let _watchdog = Watchdog::new(secs(30));
    let missing = std::path::Path::new("/nonexistent/peerpipe-no-such-peer");
    // Whatever PEERPIPE_PEER and PATH hold: a path is used as given or refused.
    let err = Peer::spawn_server(missing, "echo", quick_options()).expect_err("no such binary");
    assert_eq!(err.kind(), peerpipe::ErrorKind::NotFound);
    assert_eq!(
        err.to_string(),
        "cannot start \"/nonexistent/peerpipe-no-such-peer\": No such file or directory (os \
         error 2)"
    );
}

#[test]
fn a_program_that_cannot_be_started_is_an_error_naming_it_on_every_spawn() {
    let _watchdog = Watchdog::new(secs(30));
    let expected = "cannot start \"target/release/pear\": No such file or directory (os error 2)";
    let by_argv = Peer::spawn_argv(&["target/release/pear", "--role", "server"], quick_options());
    let by_shell = Peer::spawn_shell("target/release/pear --role server", quick_options());
    let by_name = Peer::spawn_shell("peerpipe-no-such-program --role server", quick_options());
    for (how, result) in [("argv", by_argv), ("shell", by_shell)] {
        let err = result.expect_err(how);
        assert_eq!(err.kind(), peerpipe::ErrorKind::NotFound, "{how}: {err}");
        assert_eq!(err.to_string(), expected, "{how}");
    }
    let err = by_name.expect_err("a name on no directory of PATH");
    assert!(err.to_string().starts_with("cannot start \"peerpipe-no-such-program\": "), "{err}");
    let err = Peer::spawn_argv(&["/etc/passwd"], quick_options()).expect_err("not executable");
    assert_eq!(err.kind(), peerpipe::ErrorKind::Io);
    assert_eq!(err.to_string(), "cannot start \"/etc/passwd\": Permission denied (os error 13)");
}

#[test]
fn a_server_spawned_from_a_shell_line_is_the_spawned_process_itself() {
    let _watchdog = Watchdog::new(secs(30));
    let line = format!("{} --role server --handler echo", peer_exe());
    let peer = Peer::spawn_shell(&line, quick_options()).expect("spawn");
    let pid = peer.spawned_pid().expect("a spawned pid");
    assert_eq!(peer.server_pid(), Some(pid));
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("/proc/PID/exe");
    assert_eq!(exe.file_name().and_then(|n| n.to_str()), Some("peer"), "{exe:?}");
    peer.close().expect("close");
}

#[test]
fn an_existing_explicit_path_is_used_as_given() {
    let exe = std::path::Path::new(peer_exe());
    assert_eq!(peerpipe::peer::find_peer_binary(Some(exe)).expect("explicit"), exe);
}

// ---- 6. Errors carry their cause -------------------------------------------------------------

#[test]
fn a_server_that_exits_during_the_handshake_is_quoted_from_its_stderr() {
    let _watchdog = Watchdog::new(secs(60));
    let err = Peer::spawn_server(peer_exe(), "doubler", quick_options()).expect_err("no doubler");
    let text = err.to_string();
    assert!(text.contains("exited with status 2"), "{text}");
    assert!(text.contains("its stderr ended with:"), "{text}");
    assert!(text.contains("doubler"), "{text}");
}

#[test]
fn a_server_behind_a_shell_is_measured_by_its_own_pid() {
    let _watchdog = Watchdog::new(secs(60));
    // A simple command replaces the shell: the spawned process is the server.
    let simple = format!("{} --role server --handler echo", peer_exe());
    let peer = Peer::spawn_shell(&simple, quick_options()).expect("spawn");
    assert_eq!(peer.server_pid(), peer.server_hello().pid, "exec'd");
    peer.close().expect("close");
    // A compound command keeps its shell; the HELLO's pid names the server below it.
    let compound = format!("true && {simple}");
    let peer = Peer::spawn_shell(&compound, quick_options()).expect("spawn");
    let hello_pid = peer.server_hello().pid.expect("pid=");
    assert_eq!(peer.server_pid(), Some(hello_pid));
    peer.close().expect("close");
}

#[test]
fn srv_cpu_is_measured_under_spawn() {
    let _watchdog = Watchdog::new(secs(200));
    let dir = temp_dir("spawn-cpu");
    let json = dir.join("run.json");
    let spawn = format!("{} --role server --handler echo", peer_exe());
    let mut args = vec!["--spawn", &spawn, "--sizes", "8", "--dtype", "f64", "--wait", "block"];
    args.extend(SHORT);
    args.extend(["--json", json.to_str().unwrap()]);
    let (status, stdout, stderr) = run_peer(&args, 180);
    assert!(status.success(), "{status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let report = peerpipe_cli::report::export::read_json(&json).expect("read the JSON");
    assert!(!report.rows.is_empty());
    for row in &report.rows {
        assert!(row.server_cpu_ns.is_finite() && row.server_cpu_ns > 0.0, "{row:?}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

// ---- 7. An error names the way out -----------------------------------------------------------

#[test]
fn peer_spawn_of_a_program_that_is_no_server_says_what_a_server_is_and_shows_what_it_printed() {
    let _watchdog = Watchdog::new(secs(60));
    let (status, stdout, stderr) = run_peer(&["--spawn", "python3 -c 'print(1)'"], 40);
    assert_eq!(status.code(), Some(2), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for said in [
        "it sent \"1\\n\" first, where a HELLO frame was due",
        "the spawned program must speak peerpipe: `peer --role server`, a Python script \
         calling `peerpipe.serve`, or a C program calling `pp_serve_stdio_f64`",
    ] {
        assert!(stderr.contains(said), "no `{said}` in:\n{stderr}");
    }
}

#[test]
fn a_program_that_is_no_server_is_told_what_a_server_is_over_every_transport() {
    let _watchdog = Watchdog::new(secs(60));
    for transport in [TransportKind::Pipe, TransportKind::ShmRing, TransportKind::Tcp] {
        for line in ["printf 'hello, world\\n'", "true"] {
            let options = Options { transport, ..quick_options() };
            let err = Peer::spawn_shell(line, options).expect_err("not a server");
            let text = err.to_string();
            assert!(text.contains(peerpipe::peer::SPEAK_PEERPIPE), "{transport} {line}: {text}");
            if transport == TransportKind::Pipe && line != "true" {
                assert!(text.contains("sent \"hello, world\\n\" first"), "{text}");
            }
        }
    }
    // What is printed is shown up to a header's length, and said to go on.
    let long = "printf 'NOT A PEERPIPE HEADER, JUST TEXT AND MORE'; exec sleep 5";
    let err = Peer::spawn_shell(long, quick_options()).expect_err("not a server");
    let text = err.to_string();
    assert!(text.contains("sent \"NOT A PEERPIPE HEADER, JUST TEXT\"… first"), "{text}");
    assert!(text.contains("bad magic: expected \"PEER\""), "{text}");
    assert_eq!(err.kind(), peerpipe::ErrorKind::Protocol, "{text}");
}

/// A report of 1000 doubles per request, short enough for a test, with `extra` flags.
fn report_of_1000_doubles(extra: &[&str]) -> (ExitStatus, String, String) {
    let mut args = vec!["--sizes", "1000", "--dtype", "f64", "--path", "codec"];
    args.extend(["--handler", "echo", "--wait", "block"]);
    args.extend(SHORT);
    args.extend(extra);
    run_peer(&args, 120)
}

#[test]
fn a_request_above_max_frame_bytes_names_the_flag_that_lets_it_through() {
    let _watchdog = Watchdog::new(secs(240));
    // 1000 doubles are 8000 bytes: above a limit of 4096, and through with 8000.
    let (status, stdout, stderr) = report_of_1000_doubles(&["--max-frame-bytes", "4096"]);
    assert_eq!(status.code(), Some(2), "stdout:\n{stdout}\nstderr:\n{stderr}");
    for said in [
        "frame too large: payload of 8000 bytes exceeds max_frame_bytes 4096, the server's \
         limit (from its HELLO); nothing was sent.",
        "`--max-frame-bytes` for `peer`",
        "`Options::max_frame_bytes` in Rust",
        "`max_frame_bytes=` in Python",
        "`pp_options_set_max_frame_bytes` in C",
    ] {
        assert!(stderr.contains(said), "no `{said}` in:\n{stderr}");
    }
    let (status, stdout, stderr) = report_of_1000_doubles(&["--max-frame-bytes", "8000"]);
    assert!(status.success(), "{status:?}\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.lines().any(|l| l.trim_start().starts_with("f64 x 1000 ")), "{stdout}");
}

#[test]
fn a_request_above_the_limit_of_a_server_started_by_a_command_names_the_servers_flag() {
    let _watchdog = Watchdog::new(secs(60));
    // The client accepts more than the server: the limit to raise is the server's.
    let small_server = format!("{} --role server --handler echo --max-frame-bytes 64", peer_exe());
    let mut peer = Peer::spawn_shell(&small_server, quick_options()).expect("spawn");
    let err = peer.call_f64(&[1.0; 9], &mut [0.0; 9]).expect_err("72 bytes > 64");
    let text = err.to_string();
    assert!(
        text.starts_with(
            "frame too large: payload of 72 bytes exceeds max_frame_bytes 64, the server's limit"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "a server started by a command of yours needs its own (`peer --role server \
             --max-frame-bytes N`, `peerpipe.serve(..., max_frame_bytes=N)`)"
        ),
        "{text}"
    );
    assert_eq!(err.kind(), peerpipe::ErrorKind::TooLarge);
    peer.call_f64(&[1.0; 8], &mut [0.0; 8]).expect("usable after a refusal before sending");
    peer.close().expect("close");
}

/// A server whose every reply is 100 doubles, whatever the request.
struct HundredDoubles([f64; 100]);

impl peerpipe::server::Handler for HundredDoubles {
    fn name(&self) -> &str {
        "hundred"
    }

    fn handle<'a>(
        &'a mut self,
        _request: peerpipe::server::Request<'a>,
        _: &mut peerpipe::parts::PartsOut,
    ) -> Result<peerpipe::server::Response<'a>, String> {
        Ok(peerpipe::server::Response::F64(&self.0))
    }
}

#[test]
fn a_reply_above_the_clients_limit_is_an_error_reply_naming_the_clients_option() {
    use peerpipe::server::{ServeOptions, serve};
    let _watchdog = Watchdog::new(secs(60));
    let (client, mut server) =
        peerpipe::transport::Transport::pipe_pair(peerpipe::Wait::Block).expect("pipes");
    let thread = std::thread::spawn(move || {
        serve(&mut server, &mut HundredDoubles([0.5; 100]), &ServeOptions::default())
    });
    let mut peer =
        Peer::connect(client, Options { max_frame_bytes: 400, ..quick_options() }).expect("HELLO");
    let err = peer
        .send(peerpipe::Values::F64(&[1.0]))
        .and_then(|_| peer.recv(peerpipe::ValuesMut::F64(&mut [0.0; 100])).map(|_| ()));
    let err = err.expect_err("800 bytes > 400");
    assert_eq!(err.kind(), peerpipe::ErrorKind::Remote, "{err}");
    assert!(
        err.to_string().ends_with(
            "reply of 800 bytes exceeds the client's max_frame_bytes 400; raise the client's \
             limit: `Options::max_frame_bytes` in Rust, `max_frame_bytes=` in Python, \
             `pp_options_set_max_frame_bytes` in C or `--max-frame-bytes` for `peer`"
        ),
        "{err}"
    );
    peer.close().expect("an ERROR reply leaves the peer usable");
    thread.join().expect("server thread").expect("served");
}
