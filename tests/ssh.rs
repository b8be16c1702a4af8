//! The `ssh` route, run for real: every test starts its own `sshd` on 127.0.0.1 (see
//! `tests/common/sshd.rs`) and spawns `peer --role server` through `ssh root@127.0.0.1`, as
//! the README's `--spawn "ssh host peer --role server"` does on two machines.
//!
//! Skipped, with `skipped: sshd not installed (bash .ci/run installs it)`, when sshd is
//! missing, unless `PEERPIPE_REQUIRE_TOOLS=1` (set by `.ci/run`), which makes that a failure.
//! Each test has a watchdog, every child process a deadline, and the daemon with everything
//! it started is stopped when the test ends, passing or failing.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::sshd::sshd_or_skip;
use common::{Watchdog, is_our_child, leftovers, peer_exe, secs, serialize};
use peerpipe::rhs::RemoteRhs;
use peerpipe::{Error, Options, Peer, TransportKind, lorenz96};

/// One test at a time: each logs in several times, and the fault tests look for their own
/// remote processes.
static SSH_LOCK: Mutex<()> = Mutex::new(());

/// Runs `command` with a deadline; kills it past the deadline. Returns its status (`None`
/// when killed), stdout and stderr.
fn run_with_deadline(
    mut command: Command,
    limit: Duration,
) -> (Option<ExitStatus>, String, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let collect = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("stdout")));
    let stderr = collect(Box::new(child.stderr.take().expect("stderr")));
    let until = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if Instant::now() >= until {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    (status, stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default())
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("peerpipe-ssh-{}-{name}", std::process::id()))
}

fn options(timeout: Duration) -> Options {
    Options { timeout: Some(timeout), ..Options::default() }
}

#[test]
fn remote_rhs_over_ssh_matches_the_local_lorenz96_bit_for_bit() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let Some(sshd) = sshd_or_skip() else { return };
    let line = sshd.ssh_line(&format!("{} --role server --handler lorenz96", peer_exe()));
    let peer = Peer::spawn_shell(&line, options(secs(20)))
        .unwrap_or_else(|e| panic!("spawn over ssh: {e}\nsshd log:\n{}", sshd.log()));
    let mut rhs = RemoteRhs::new(peer);
    let n = 500;
    let mut start = vec![lorenz96::FORCING; n];
    start[0] += 0.01;
    let (mut remote, mut local) = (start.clone(), start);
    let (mut d_remote, mut d_local) = (vec![0.0; n], vec![0.0; n]);
    for step in 0..200 {
        rhs.eval(&remote, &mut d_remote).expect("eval over ssh");
        lorenz96::rhs(&local, lorenz96::FORCING, &mut d_local).expect("local rhs");
        for i in 0..n {
            remote[i] += 0.01 * d_remote[i];
            local[i] += 0.01 * d_local[i];
        }
        let same = remote.iter().zip(&local).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "trajectories differ at step {step}");
    }
    assert_eq!(rhs.stats().calls, 200);
    rhs.close().expect("close over ssh");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote server left");
}

#[test]
fn the_stdlib_python_client_runs_lorenz96_over_ssh_bit_for_bit() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(90));
    let Some(sshd) = sshd_or_skip() else { return };
    if Command::new("python3").arg("--version").stdout(Stdio::null()).status().is_err() {
        println!("skipped: python3 not found");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/python/python_client.py");
    let mut command = Command::new("python3");
    command.arg(script).arg("--").args(sshd.ssh_prefix().split_whitespace());
    command
        .args(sshd.remote(&format!("{} --role server --handler lorenz96", peer_exe())).split(' '));
    command.env("PYTHONDONTWRITEBYTECODE", "1");
    let (status, stdout, stderr) = run_with_deadline(command, secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "python_client.py over ssh: {status:?}\n{stdout}\n{stderr}\nsshd log:\n{}",
        sshd.log()
    );
    assert!(stdout.starts_with("ok: lorenz96 n=500"), "unexpected summary: {stdout}");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote server left");
}

#[test]
fn killing_the_local_ssh_client_is_peer_exited_and_the_remote_server_exits_by_itself() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let Some(sshd) = sshd_or_skip() else { return };
    let line = sshd.ssh_line(&format!("{} --role server --handler echo", peer_exe()));
    let mut peer = Peer::spawn_shell(&line, options(secs(20))).expect("spawn over ssh");
    let state = vec![0.25; 500];
    let mut reply = vec![0.0; 500];
    peer.call_f64(&state, &mut reply).expect("a first call");
    assert_eq!(reply, state);
    let remote = sshd.remote_pids();
    assert_eq!(remote.len(), 1, "one remote server: {remote:?}");
    let ssh = peer.spawned_pid().expect("the ssh client's pid");
    kill(Pid::from_raw(ssh as i32), Signal::SIGKILL).expect("kill the ssh client");
    let mut error = None;
    for _ in 0..10_000 {
        if let Err(e) = peer.call_f64(&state, &mut reply) {
            error = Some(e);
            break;
        }
    }
    match error.expect("calls fail once the ssh client is killed") {
        Error::PeerExited { status, context, .. } => {
            assert_eq!(status, "was killed by signal 9 (SIGKILL)", "{context}")
        }
        other => panic!("expected PeerExited, got {other:?}"),
    }
    assert!(!is_our_child(ssh), "the ssh client was reaped");
    // The remote server sees its input end and exits on its own.
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote server left");
    drop(peer);
}

#[test]
fn a_stopped_remote_server_is_a_timeout_and_the_ssh_client_is_reaped() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let Some(sshd) = sshd_or_skip() else { return };
    let line = sshd.ssh_line(&format!("{} --role server --handler echo", peer_exe()));
    let mut peer = Peer::spawn_shell(&line, options(secs(20))).expect("spawn over ssh");
    let mut reply = [0.0; 8];
    peer.call_f64(&[1.5; 8], &mut reply).expect("a first call");
    let remote = sshd.remote_pids();
    assert_eq!(remote.len(), 1, "one remote server: {remote:?}");
    let server = Pid::from_raw(remote[0] as i32);
    kill(server, Signal::SIGSTOP).expect("stop the remote server");
    peer.set_timeout(Some(Duration::from_millis(300)));
    let ssh = peer.spawned_pid().expect("the ssh client's pid");
    let error = peer.call_f64(&[2.5; 8], &mut reply).expect_err("a stopped server cannot answer");
    match &error {
        Error::Timeout { waiting_for, .. } => {
            assert_eq!(waiting_for, "waiting for the reply to seq 2", "{error}")
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert!(!is_our_child(ssh), "the ssh client was terminated and reaped");
    // Continued, the remote server finds its input closed and exits by itself.
    kill(server, Signal::SIGCONT).expect("continue the remote server");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote server left");
    drop(peer);
}

/// The report over ssh: it runs, its floors go through the same route (the remote `peer
/// --raw-echo`), and the server's CPU time, which it cannot measure, is `-` / `null`.
#[test]
fn the_report_over_ssh_measures_floors_through_the_route_and_leaves_remote_cpu_unknown() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(120));
    let Some(sshd) = sshd_or_skip() else { return };
    let json = temp_path("report.json");
    let spawn = sshd.ssh_line(&format!("{} --role server", peer_exe()));
    let mut command = Command::new(peer_exe());
    command
        .args(["--spawn", &spawn])
        .args(["--sizes", "500", "--dtype", "f64", "--path", "zero-copy", "--wait", "hybrid"])
        .args(["--rounds", "6", "--generations", "2", "--duration", "30ms", "--warmup", "5ms"])
        .arg("--json")
        .arg(&json);
    let (status, stdout, stderr) = run_with_deadline(command, secs(100));
    assert!(
        status.is_some_and(|s| s.success()),
        "report over ssh: {status:?}\n{stdout}\n{stderr}\nsshd log:\n{}",
        sshd.log()
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report");
    let _ = std::fs::remove_file(&json);
    let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{text}");
    assert!(rows[0]["server_cpu_ns"].is_null(), "remote CPU is unknown: {}", rows[0]);
    assert!(rows[0]["client_cpu_ns"].is_number(), "{}", rows[0]);
    for floor in report["baseline"].as_array().expect("baseline") {
        let route = floor["route"].as_str().unwrap_or_default();
        let bytes = floor["bytes"].as_u64().expect("bytes");
        assert!(
            route.contains("ssh ") && route.ends_with(&format!("--raw-echo {bytes}")),
            "{floor}"
        );
    }
    let line = stdout.lines().find(|l| l.contains("echo") && l.contains("zero-copy"));
    let line = line.unwrap_or_else(|| panic!("no row in the table:\n{stdout}"));
    assert!(!line.contains(" 0ns "), "no made-up zero CPU: {line}");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote servers left");
}

/// `--transport tcp` over ssh: ssh starts and authenticates, the frames go over TCP. A
/// Lorenz-96 trajectory bit for bit; a killed ssh client ends the conversation on both sides;
/// and the report measures both routes side by side, each against its own floor.
#[test]
fn tcp_over_ssh_matches_the_local_lorenz96_bit_for_bit_and_its_report_runs() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(150));
    let Some(sshd) = sshd_or_skip() else { return };
    let tcp = Options { transport: TransportKind::Tcp, ..options(secs(20)) };
    let line =
        sshd.ssh_line(&format!("{} --role server --handler lorenz96 --transport tcp", peer_exe()));
    let peer = Peer::spawn_shell(&line, tcp.clone())
        .unwrap_or_else(|e| panic!("spawn over ssh + tcp: {e}\nsshd log:\n{}", sshd.log()));
    assert_eq!(peer.transport_kind(), TransportKind::Tcp);
    let mut rhs = RemoteRhs::new(peer);
    let n = 500;
    let mut remote = vec![lorenz96::FORCING; n];
    remote[0] += 0.01;
    let mut local = remote.clone();
    let (mut d_remote, mut d_local) = (vec![0.0; n], vec![0.0; n]);
    for step in 0..200 {
        rhs.eval(&remote, &mut d_remote).expect("eval over tcp");
        lorenz96::rhs(&local, lorenz96::FORCING, &mut d_local).expect("local rhs");
        for i in 0..n {
            remote[i] += 0.01 * d_remote[i];
            local[i] += 0.01 * d_local[i];
        }
        let same = remote.iter().zip(&local).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same, "trajectories differ at step {step}");
    }
    rhs.close().expect("close over tcp");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote server left");

    // The ssh client killed: the remote server sees its control channel close and exits,
    // and the client gets a typed error naming the ssh client's death.
    let line = sshd.ssh_line(&format!("{} --role server --transport tcp", peer_exe()));
    let mut peer = Peer::spawn_shell(&line, tcp).expect("spawn over ssh + tcp");
    let state = vec![0.5; 500];
    let mut reply = vec![0.0; 500];
    peer.call_f64(&state, &mut reply).expect("a first call");
    let ssh = peer.spawned_pid().expect("the ssh client's pid");
    kill(Pid::from_raw(ssh as i32), Signal::SIGKILL).expect("kill the ssh client");
    let mut error = None;
    for _ in 0..100_000 {
        if let Err(e) = peer.call_f64(&state, &mut reply) {
            error = Some(e);
            break;
        }
    }
    match error.expect("calls fail once the ssh client is killed") {
        Error::PeerExited { status, context, .. } => {
            assert_eq!(status, "was killed by signal 9 (SIGKILL)", "{context}")
        }
        other => panic!("expected PeerExited, got {other:?}"),
    }
    assert!(!is_our_child(ssh), "the ssh client was reaped");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote server left");
    drop(peer);

    // Both routes in one report, each against its own floor.
    let json = temp_path("routes.json");
    let spawn = sshd.ssh_line(&format!("{} --role server", peer_exe()));
    let mut command = Command::new(peer_exe());
    command
        .args(["--spawn", &spawn, "--transport", "pipe,tcp"])
        .args(["--sizes", "500", "--dtype", "f64", "--path", "zero-copy", "--wait", "hybrid"])
        .args(["--rounds", "6", "--generations", "2", "--duration", "30ms", "--warmup", "5ms"])
        .arg("--json")
        .arg(&json);
    let (status, stdout, stderr) = run_with_deadline(command, secs(100));
    assert!(
        status.is_some_and(|s| s.success()),
        "report over ssh, pipe and tcp: {status:?}\n{stdout}\n{stderr}\nsshd log:\n{}",
        sshd.log()
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report");
    let _ = std::fs::remove_file(&json);
    let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let transports: Vec<&str> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["transport"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(transports, ["pipe", "tcp"], "{text}");
    for floor in report["baseline"].as_array().expect("baseline") {
        let route = floor["route"].as_str().unwrap_or_default();
        let suffix = match floor["transport"].as_str() {
            Some("tcp") => " --transport tcp",
            _ => "",
        };
        assert!(route.contains("ssh ") && route.ends_with(suffix), "{floor}");
    }
    assert!(stdout.contains("tcp against pipes"), "the verdict compares the routes:\n{stdout}");
    assert_eq!(sshd.wait_remote_gone(secs(10)), Vec::<u32>::new(), "remote servers left");
}

/// Every local `ssh` of a running report killed at once (the floor's and the row's, one
/// idle, one measured): the report ends within 5 s with an error naming the lost server,
/// and leaves no local process, no remote one, and its stderr closed.
#[test]
fn killing_every_local_ssh_of_a_running_report_ends_it_naming_the_lost_server() {
    let _lock = serialize(&SSH_LOCK);
    let _watchdog = Watchdog::new(secs(120));
    let Some(sshd) = sshd_or_skip() else { return };
    let spawn = sshd.ssh_line(&format!("{} --role server", peer_exe()));
    let mut command = Command::new(peer_exe());
    // One group (a single f64 is the 8-byte wake-up floor's size), one-second bursts.
    command
        .args(["--spawn", &spawn, "--sizes", "1", "--dtype", "f64", "--path", "zero-copy"])
        .args(["--wait", "hybrid", "--rounds", "20", "--generations", "1"])
        .args(["--duration", "20s", "--warmup", "5ms"]);
    let mut run = leftovers::launch(command, &leftovers::new_tag("ssh"));
    let local_ssh = |tag: &str| -> Vec<i32> {
        leftovers::tagged(tag)
            .iter()
            .filter(|p| p.cmdline.starts_with("ssh "))
            .map(|p| p.pid)
            .collect()
    };
    let until = Instant::now() + secs(60);
    while local_ssh(run.tag()).len() < 2 || sshd.remote_pids().len() < 2 {
        assert!(run.running() && Instant::now() < until, "the report never got its servers");
        thread::sleep(Duration::from_millis(20));
    }
    thread::sleep(Duration::from_millis(1500)); // into the rounds
    assert!(run.running(), "the report is still measuring");
    let killed = local_ssh(run.tag());
    for &pid in &killed {
        kill(Pid::from_raw(pid), Signal::SIGKILL).expect("kill a local ssh");
    }
    let killed_at = Instant::now();
    while run.running() && killed_at.elapsed() < secs(5) {
        thread::sleep(Duration::from_millis(10));
    }
    let ended_within = killed_at.elapsed();
    let ending = run.end(None);
    assert!(ended_within < secs(5), "the report ran on for {ended_within:?}: {ending:?}");
    assert!(ending.leftovers.is_empty(), "{:?}", ending.leftovers);
    assert_eq!(ending.status.and_then(|s| s.code()), Some(2), "{ending:?}");
    let error = ending.stderr.lines().find(|l| l.starts_with("peer: error: ")).unwrap_or("");
    assert!(
        error.contains("killed by signal 9") && error.contains("ssh -F /dev/null"),
        "the error names the lost server: {error:?}\n{}",
        ending.stderr
    );
    println!("{error}");
    assert!(
        killed.iter().any(|pid| error.contains(&format!("(pid {pid})"))),
        "{error:?} names one of {killed:?}"
    );
    assert_eq!(sshd.wait_remote_gone(secs(5)), Vec::<u32>::new(), "remote servers left");
}

#[test]
fn misbehaving_server_entry() {
    common::misbehaving_server_entry();
}
