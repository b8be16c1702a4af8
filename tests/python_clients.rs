//! Runs the Python clients of `clients/python/` against the real `peer` binary:
//! the stdlib example client (Lorenz-96 bit for bit), the numpy variant (which
//! skips itself when numpy is missing), the protocol conformance check, and the
//! stdlib shared-memory client (`--transport shm-ring`, Linux x86-64 only).
//!
//! They are skipped, with a printed reason, only when no `python3` is on PATH.

mod common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Longest a script may run. The conformance check starts about a hundred
/// servers and takes a few seconds with a debug build.
const TIMEOUT: Duration = Duration::from_secs(60);

fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("python3")).find(|candidate| {
        candidate.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients").join("python").join(name)
}

/// Read a pipe to the end on a thread; the text arrives on the returned channel.
fn collect(mut pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    rx
}

struct Run {
    status: Option<ExitStatus>, // None: killed after TIMEOUT
    stdout: String,
    stderr: String,
}

/// Run `python3 clients/python/NAME --peer PEER ARGS...` with a deadline.
/// Returns None when python3 is not on PATH.
fn run_python(name: &str, args: &[&str]) -> Option<Run> {
    let Some(python) = python3() else {
        println!("skipping: python3 not found");
        return None;
    };
    let mut child = Command::new(python)
        .arg(script(name))
        .arg("--peer")
        .arg(common::peer_exe())
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1") // no __pycache__ in the source tree
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0) // so a timeout can kill the servers the script started too
        .spawn()
        .expect("spawn python3");
    let stdout = collect(child.stdout.take().expect("stdout"));
    let stderr = collect(child.stderr.take().expect("stderr"));

    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if start.elapsed() > TIMEOUT {
            let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    // Grandchildren could keep the pipes open; never wait for them forever.
    let grace = Duration::from_secs(5);
    Some(Run {
        status,
        stdout: stdout.recv_timeout(grace).unwrap_or_default(),
        stderr: stderr.recv_timeout(grace).unwrap_or_default(),
    })
}

fn assert_success(name: &str, run: &Run) {
    let report = format!(
        "--- stdout of {name} ---\n{}\n--- stderr of {name} ---\n{}",
        run.stdout, run.stderr
    );
    match run.status {
        None => panic!("{name} still running after {TIMEOUT:?}; killed\n{report}"),
        Some(status) => assert!(status.success(), "{name} exited with {status}\n{report}"),
    }
    print!("{}", run.stdout);
}

#[test]
fn stdlib_client_matches_local_lorenz96_bit_for_bit() {
    let Some(run) = run_python("python_client.py", &[]) else {
        return;
    };
    assert_success("python_client.py", &run);
    assert!(run.stdout.starts_with("ok: lorenz96 n=500"), "unexpected summary: {}", run.stdout);
}

#[test]
fn numpy_client_matches_or_skips() {
    let Some(run) = run_python("python_numpy_client.py", &[]) else {
        return;
    };
    assert_success("python_numpy_client.py", &run);
    let line = run.stdout.trim();
    assert!(
        line == "numpy not installed; skipping" || line.starts_with("ok: numpy"),
        "unexpected output: {line}"
    );
}

#[test]
fn conformance_check_passes() {
    let Some(run) = run_python("conformance.py", &[]) else {
        return;
    };
    assert_success("conformance.py", &run);
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(
        last.ends_with(" passed, 0 failed") && !last.starts_with("0 passed"),
        "unexpected last line: {last:?}\n{}",
        run.stdout
    );
}

/// The stdlib `shm-ring` client, written from PROTOCOL.md §13 alone: memfd region, echo
/// round trips bit for bit (including frames larger than the ring), BYE, exit status 0.
/// Run with the default 64 KiB ring and with the smallest ring §13 allows.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn shm_ring_client_round_trips_bit_for_bit() {
    for args in [&[][..], &["--capacity", "4096"][..]] {
        let Some(run) = run_python("python_shm_client.py", args) else {
            return;
        };
        assert_success("python_shm_client.py", &run);
        assert!(run.stdout.starts_with("ok: shm-ring"), "unexpected summary: {}", run.stdout);
    }
}

/// The stdlib reference client and server (`python_client.py`, `python_server.py`), both
/// written from PROTOCOL.md alone, with PARTS (§15): against each other, against `peer`, and
/// the v1-only server refusing PARTS as the client expects.
#[test]
fn reference_parts_client_and_server_agree_with_each_other_and_with_peer() {
    let Some(run) = run_python("test_parts.py", &[]) else {
        return;
    };
    assert_success("test_parts.py", &run);
}

/// The conformance check against the stdlib reference server: the v1 rules and PARTS.
#[test]
fn the_reference_server_passes_the_conformance_check() {
    let server = format!("python3 {}", script("python_server.py").display());
    let Some(run) = run_python("conformance.py", &["--server", &server]) else {
        return;
    };
    assert_success("conformance.py --server python_server.py", &run);
    let last = run.stdout.lines().last().unwrap_or_default();
    assert!(last.ends_with(" passed, 0 failed"), "unexpected last line: {last:?}");
}
