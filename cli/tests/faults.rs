//! Faults injected under load, on every transport (tcp on loopback included): a server killed with SIGKILL in the middle
//! of a soak, a client dying in the middle of a frame, and a server stopped with SIGSTOP. Each
//! ends in a specific, prompt outcome, and no process is left behind. On shared memory nothing
//! in the region tells a side that its peer died, so these are the tests of liveness checking.
//!
//! The tests count child processes, so they take `FORK_LOCK` and never run concurrently; each
//! has a `Watchdog`. Random delays come from a seed printed by the test, to replay a failure.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fs;
use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use common::{
    TransportReader, Watchdog, child_processes, client_hello, data_frame, is_our_child, peer_exe,
    read_frame, secs, serialize, wait_or_kill,
};
use peerpipe::frame::{DEFAULT_MAX_FRAME_BYTES, Dtype, HEADER_LEN, Header, Kind};
use peerpipe::process::{Spawn, spawn_connected};
use peerpipe::transport::Deadline;
use peerpipe::{Error, Options, Peer, TransportKind};
use peerpipe_cli::soak::{self, Client, HANDLERS};

static FORK_LOCK: Mutex<()> = Mutex::new(());

/// A delay in `lo..=hi` milliseconds drawn from a fresh seed, which is printed (libtest shows
/// it when the test fails).
fn random_delay(what: &str, lo: u64, hi: u64) -> Duration {
    let seed = soak::seed_from_clock();
    let ms = lo + soak::pair_seed(seed, 0) % (hi - lo + 1);
    eprintln!("{what}: seed {seed} gives a delay of {ms} ms");
    Duration::from_millis(ms)
}

/// Starts a thread that sleeps `delay`, sends `signal` to `pid`, and reports when it did.
fn signal_later(pid: u32, signal: Signal, delay: Duration) -> mpsc::Receiver<Instant> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        thread::sleep(delay);
        kill(Pid::from_raw(pid as i32), signal).expect("signal the server");
        let _ = tx.send(Instant::now());
    });
    rx
}

// ---------------------------------------------------------------------------------------------
// (a) A server killed with SIGKILL during a soak
// ---------------------------------------------------------------------------------------------

const KILL_TIMEOUT: Duration = secs(5);

#[test]
fn a_server_killed_mid_soak_is_reported_as_killed_by_signal_9_well_within_the_timeout() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(90));
    assert_eq!(child_processes(), [], "children before the test");
    for (transport, handler) in TransportKind::EVERY.iter().flat_map(|t| HANDLERS.map(|h| (*t, h)))
    {
        let options = Options { timeout: Some(KILL_TIMEOUT), transport, ..Options::default() };
        let peer = Peer::spawn_server(peer_exe(), handler, options).expect("spawn");
        let handler = format!("{handler} over {transport}");
        let pid = peer.server_pid().expect("spawned");
        let mut client = Client::new(peer, soak::seed_from_clock(), 262_144);
        client.warm_up().expect("warm up");
        let killed = signal_later(pid, Signal::SIGKILL, random_delay(&handler, 50, 500));

        let error = client
            .run_until(Instant::now() + secs(30))
            .expect_err("the exchange must fail when the server is killed");
        let noticed = Instant::now();
        let killed_at = killed.recv().expect("the killer thread reports");
        let delay = noticed.saturating_duration_since(killed_at);

        match &error {
            Error::PeerExited { status, context, .. } => {
                assert_eq!(status, "was killed by signal 9 (SIGKILL)", "{handler}: {context}");
            }
            other => panic!("{handler}: expected PeerExited, got {other:?}"),
        }
        assert!(delay < KILL_TIMEOUT, "{handler}: noticed {delay:?} after the kill");
        if transport.is_shared_memory() {
            // A sleeping side checks its peer every LIVENESS_INTERVAL (10 ms).
            assert!(delay < secs(1), "{handler}: noticed {delay:?} after the kill");
        }
        let stats = client.stats().clone();
        assert_eq!((stats.corrupted, stats.reordered), (0, 0), "{handler}: {stats:?}");
        assert_eq!(stats.unaccounted(), 0, "{handler}: every request accounted for: {stats:?}");
        assert_eq!(stats.errors.len(), 1, "{handler}: {:?}", stats.errors);
        assert!(stats.verified > 0, "{handler}: the soak was under way: {stats:?}");
        // The peer reaped the server when it noticed; dropping the client changes nothing.
        assert!(!is_our_child(pid), "{handler}: server {pid} reaped before drop");
        drop(client);
        assert_eq!(child_processes(), [], "{handler}: no orphan or zombie");
        eprintln!(
            "{handler}: killed after {} verified requests, noticed in {delay:?}: {error}",
            stats.verified
        );
    }
}

// ---------------------------------------------------------------------------------------------
// (b) A client that dies in the middle of a frame
// ---------------------------------------------------------------------------------------------

/// Plays a client over `transport`: HELLO, 20 echoed requests, then `partial` (the start of
/// a frame) and end of stream, as when the client process dies mid-write. Returns the
/// server's exit status, its stderr, and the frames it wrote after the 20 replies.
fn die_mid_frame(
    transport: TransportKind,
    partial: &[u8],
) -> (ExitStatus, String, Vec<common::RawFrame>) {
    let mut command = Command::new(peer_exe());
    command
        .args(["--role", "server", "--handler", "echo", "--transport", transport.name()])
        .stderr(Stdio::piped());
    let spawn = Spawn { transport, ..Spawn::default() };
    let (mut link, mut server) = spawn_connected(command, &spawn).expect("spawn the server");
    let mut stderr = server.stderr.take().expect("stderr");
    let deadline = || Deadline::after(Some(secs(10)));
    link.send_bytes(&client_hello(DEFAULT_MAX_FRAME_BYTES), deadline()).expect("write HELLO");
    let hello = read_frame(&mut TransportReader(&mut link, secs(10)))
        .expect("read HELLO")
        .expect("a HELLO");
    assert_eq!(hello.header.kind, Kind::Hello);
    for seq in 1..=20u64 {
        let values: Vec<f64> = (0..seq * 50).map(|i| i as f64 * 0.5 - 3.0).collect();
        let payload: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let frame = data_frame(seq, Dtype::F64, values.len() as u64, &payload);
        link.send_bytes(&frame, deadline()).expect("write a request");
        let reply = read_frame(&mut TransportReader(&mut link, secs(10)))
            .expect("read a reply")
            .expect("a reply");
        assert_eq!((reply.header.kind, reply.header.seq), (Kind::Data, seq));
        assert_eq!(reply.payload, payload, "echo of seq {seq}");
    }
    // A large partial write: the server reads it while we write.
    link.send_bytes(partial, deadline()).expect("write the partial frame");
    link.shutdown_write().expect("end the stream");
    let status = wait_or_kill(&mut server, secs(10), "the server after its client died");
    let mut text = String::new();
    stderr.read_to_string(&mut text).expect("read stderr");
    let mut frames = Vec::new();
    while let Ok(Some(frame)) = read_frame(&mut TransportReader(&mut link, secs(10))) {
        frames.push(frame);
    }
    (status, text, frames)
}

#[test]
fn a_client_dying_mid_payload_makes_the_server_exit_2_naming_the_truncated_payload() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    // A header announcing 1,000,000 f64 (8,000,000 bytes), then 100,000 of them.
    let mut partial = Header::data(21, Dtype::F64, 1_000_000).to_bytes().to_vec();
    partial.extend(std::iter::repeat_n(0x3f, 100_000));
    for transport in TransportKind::EVERY {
        let (status, stderr, frames) = die_mid_frame(transport, &partial);
        assert_eq!(status.code(), Some(2), "{transport}: {status:?}; stderr: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            "peer: error: truncated payload: got 100000 of 8000000 bytes",
            "{transport}: one clear line"
        );
        // Best effort, the server also told the (gone) client, addressed to the cut frame.
        let [error] = &frames[..] else { panic!("{transport}: one ERROR frame: {frames:?}") };
        assert_eq!((error.header.kind, error.header.seq), (Kind::Error, 21), "{transport}");
        assert!(error.text().contains("truncated payload"), "{}", error.text());
        assert_eq!(child_processes(), [], "{transport}: the server was reaped");
    }
}

#[test]
fn a_client_dying_mid_header_makes_the_server_exit_2_naming_the_truncated_header() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    let header = Header::data(21, Dtype::F64, 1000).to_bytes();
    for transport in TransportKind::EVERY {
        let (status, stderr, _) = die_mid_frame(transport, &header[..10]);
        assert_eq!(status.code(), Some(2), "{transport}: {status:?}; stderr: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("peer: error: truncated header: got 10 of {HEADER_LEN} bytes"),
            "{transport}: one clear line"
        );
        assert_eq!(child_processes(), [], "{transport}: the server was reaped");
    }
}

/// Processes whose parent is `parent`, by scanning `/proc/*/stat`.
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else { return out };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The fields after the command name (which may contain spaces): state, ppid, …
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else { continue };
        if rest.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// Reaps `pid` (our child) when it exits within `limit`; otherwise kills and reaps it and
/// returns `None`.
fn reap_within(pid: u32, limit: Duration) -> Option<WaitStatus> {
    let pid = Pid::from_raw(pid as i32);
    let until = Instant::now() + limit;
    loop {
        match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) if Instant::now() < until => {
                thread::sleep(Duration::from_millis(10));
            }
            Ok(WaitStatus::StillAlive) => {
                let _ = kill(pid, Signal::SIGKILL);
                let _ = waitpid(pid, None);
                return None;
            }
            Ok(status) => return Some(status),
            Err(e) => panic!("waitpid({pid}): {e}"),
        }
    }
}

#[test]
fn servers_of_a_soak_client_killed_mid_run_exit_by_themselves() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(90));
    for transport in TransportKind::EVERY {
        servers_of_a_killed_soak_client_exit_by_themselves(transport);
    }
}

fn servers_of_a_killed_soak_client_exit_by_themselves(transport: TransportKind) {
    // Orphans are re-parented to this process instead of init, so they can be waited for and
    // cannot linger unseen as zombies of an init that does not reap.
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    let log = std::env::temp_dir().join(format!("peerpipe-faults-{}.log", std::process::id()));
    let mut client = Command::new(peer_exe())
        .args(["soak", "--duration", "60s", "--peers", "2", "--max-elements", "262144"])
        .args(["--transport", transport.name()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(fs::File::create(&log).expect("create the log")))
        .spawn()
        .expect("spawn peer soak");
    let client_pid = client.id();

    let until = Instant::now() + secs(10);
    let servers = loop {
        let servers = children_of(client_pid);
        if servers.len() == 2 {
            break servers;
        }
        if Instant::now() >= until {
            let _ = client.kill();
            let _ = client.wait();
            panic!("{transport}: peer soak did not start its 2 servers: {servers:?}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    // Warm-up, then exchanges of up to 2 MiB: most moments are mid-frame.
    thread::sleep(random_delay("client kill", 300, 1500));
    kill(Pid::from_raw(client_pid as i32), Signal::SIGKILL).expect("kill the client");
    let status = client.wait().expect("reap the client");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "the client was killed: {status:?}"
    );

    let mut endings = Vec::new();
    for server in &servers {
        let ending = reap_within(*server, secs(5));
        endings.push((*server, ending));
    }
    let stderr = fs::read_to_string(&log).unwrap_or_default();
    let _ = fs::remove_file(&log);
    for (server, ending) in &endings {
        match ending {
            Some(WaitStatus::Exited(_, 0)) => {}
            Some(WaitStatus::Exited(_, 2)) => assert!(
                stderr.contains("peer: error:"),
                "server {server} exited with 2 without saying why: {stderr}"
            ),
            other => {
                panic!(
                    "{transport}: server {server} of the killed client ended {other:?}; {stderr}"
                )
            }
        }
    }
    eprintln!("{transport}: servers ended {endings:?}; their stderr: {stderr}");
    assert_eq!(child_processes(), [], "nothing left");
}

// ---------------------------------------------------------------------------------------------
// (c) A server stopped with SIGSTOP
// ---------------------------------------------------------------------------------------------

const STOP_TIMEOUT: Duration = secs(1);

/// Continues `pid` if it is still our child (so a failed test leaves no stopped process).
struct ContinueOnDrop(u32);

impl Drop for ContinueOnDrop {
    fn drop(&mut self) {
        if is_our_child(self.0) {
            let _ = kill(Pid::from_raw(self.0 as i32), Signal::SIGCONT);
        }
    }
}

#[test]
fn a_stopped_server_makes_the_client_time_out_cleanly_and_is_reaped() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    for transport in TransportKind::EVERY {
        a_stopped_server_times_out_cleanly(transport);
    }
}

fn a_stopped_server_times_out_cleanly(transport: TransportKind) {
    assert_eq!(child_processes(), [], "children before the test");
    let options = Options { timeout: Some(STOP_TIMEOUT), transport, ..Options::default() };
    let peer = Peer::spawn_server(peer_exe(), "echo", options).expect("spawn");
    let pid = peer.server_pid().expect("spawned");
    let _continue = ContinueOnDrop(pid);
    let mut client = Client::new(peer, soak::seed_from_clock(), 262_144);
    client.warm_up().expect("warm up");
    let stopped = signal_later(pid, Signal::SIGSTOP, random_delay("stop", 50, 300));

    let error = client
        .run_until(Instant::now() + secs(20))
        .expect_err("the exchange must time out when the server is stopped");
    let noticed = Instant::now();
    let stopped_at = stopped.recv().expect("the stopper thread reports");
    let delay = noticed.saturating_duration_since(stopped_at);

    match &error {
        Error::Timeout { after, waiting_for } => {
            assert_eq!(*after, STOP_TIMEOUT, "{waiting_for}");
            assert!(
                waiting_for.contains("reply to seq") || waiting_for.contains("room to send seq"),
                "{waiting_for}"
            );
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    // The deadline of the call under way when the server stopped: at most one timeout after
    // the stop, plus scheduling slack.
    assert!(delay <= STOP_TIMEOUT + secs(1), "timed out {delay:?} after the stop");
    let stats = client.stats().clone();
    assert_eq!((stats.corrupted, stats.reordered), (0, 0), "{stats:?}");
    assert_eq!(stats.unaccounted(), 0, "{stats:?}");
    // The peer terminated (SIGTERM, then SIGKILL, which ends even a stopped process) and
    // reaped the server when it gave up.
    assert!(!is_our_child(pid), "server {pid} reaped");
    drop(client);
    assert_eq!(child_processes(), [], "no orphan or zombie");
    eprintln!("{transport}: timed out {delay:?} after the stop: {error}");
}

#[test]
fn peer_soak_with_a_stopped_server_exits_1_naming_the_timeout_and_reaps_the_server() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(40));
    let mut soak = Command::new(peer_exe())
        .args(["soak", "--duration", "3s", "--timeout", "500ms", "--max-elements", "65536"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn peer soak");
    let stdout = soak.stdout.take().expect("stdout");
    let stderr = soak.stderr.take().expect("stderr");
    let out = common::read_on_thread(stdout);
    let err = common::read_on_thread(stderr);
    let until = Instant::now() + secs(10);
    let server = loop {
        if let [server] = children_of(soak.id())[..] {
            break server;
        }
        assert!(Instant::now() < until, "peer soak did not start its server");
        thread::sleep(Duration::from_millis(5));
    };
    let _cleanup = KillIfLeft { pid: server, parent: soak.id() };
    thread::sleep(random_delay("soak stop", 200, 1000));
    kill(Pid::from_raw(server as i32), Signal::SIGSTOP).expect("stop the server");
    let status = wait_or_kill(&mut soak, secs(20), "peer soak with a stopped server");
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let context = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(status.code(), Some(1), "{context}");
    let line =
        stderr.lines().find(|l| l.starts_with("peer: error: soak failed: ")).expect(&context);
    assert!(line.contains("pair 1: timed out after 500ms waiting for"), "{context}");
    assert!(stdout.contains("verdict: FAIL") && stdout.contains("replay: peer soak --seed "));
    // The soak terminated and reaped its server: it is neither running nor left to us.
    assert!(
        !is_our_child(server) && kill(Pid::from_raw(server as i32), None).is_err(),
        "server {server} is gone"
    );
}

/// Kills `pid` if a failed test leaves it behind: still a child of `parent`, or re-parented
/// to this process (then also reaped).
struct KillIfLeft {
    pid: u32,
    parent: u32,
}

impl Drop for KillIfLeft {
    fn drop(&mut self) {
        let pid = Pid::from_raw(self.pid as i32);
        if is_our_child(self.pid) {
            let _ = kill(pid, Signal::SIGKILL);
            let _ = waitpid(pid, None);
        } else if children_of(self.parent).contains(&self.pid) {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }
}
