//! The `srun` route, run for real: each test starts its own two-node Slurm cluster on this
//! machine (`tests/common/slurm.rs`: node `n0` and node `n1` in network namespaces of their
//! own, joined by a veth pair) and starts servers on `n1` from a client on `n0`, as `peer
//! --spawn "srun -w NODE peer --role server" --transport tcp` does on a real cluster.
//!
//! Skipped, with `skipped: no Slurm cluster: …`, when Slurm, munge or the namespace tools are
//! missing or namespaces cannot be made, unless `PEERPIPE_REQUIRE_TOOLS=1` (set by `.ci/run`,
//! which installs them), which makes that a failure. Each test has a watchdog, every child
//! process a deadline, and the cluster with everything it started is stopped when the test
//! ends, passing or failing.

mod common;

use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::slurm::{Cluster, cluster_or_skip, netns_exists};
use common::{
    Watchdog, bits64, example_exe, peer_exe, pseudo_random_f64, read_on_thread, secs, serialize,
};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::fanout::Fanout;
use peerpipe::rhs::RemoteRhs;
use peerpipe::{ErrorKind, Options, Peer, TransportKind, lorenz96};

/// Environment variable that makes `slurm_fanout_client_entry` a fan-out client: `srun`'s
/// command prefix for the cluster (`env SLURM_CONF=… srun`).
const CLIENT_SRUN_VAR: &str = "PEERPIPE_SLURM_FANOUT_SRUN";

/// Environment variable naming the `peer` binary for that client.
const CLIENT_PEER_VAR: &str = "PEERPIPE_SLURM_FANOUT_PEER";

/// Environment variable naming a Python that has the `peerpipe` package installed: without
/// it the Python test here is skipped (`.ci/run` sets it to its venv's Python once it has
/// built the package, and runs that test again).
const PYTHON_VAR: &str = "PEERPIPE_PYTHON";

/// One cluster at a time: they share Slurm's ports inside their own namespaces, but two
/// would compete for this machine's two cores and slow each other's start.
static SLURM_LOCK: Mutex<()> = Mutex::new(());

/// Runs `command` (stdin closed) with a deadline; kills it past the deadline. Returns its
/// status (`None` when killed), stdout, stderr and how long it ran.
fn run(mut command: Command, limit: Duration) -> (Option<ExitStatus>, String, String, Duration) {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = read_on_thread(child.stdout.take().expect("stdout"));
    let stderr = read_on_thread(child.stderr.take().expect("stderr"));
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if started.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    (status, stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default(), took)
}

/// Runs `command` (made by [`Cluster::command_on_n0`]) with a deadline, prints how long it
/// took with the line of its output `shown` picks, and fails the test with its output and the
/// daemons' logs unless it exited 0. Returns its stdout.
fn run_to_success(
    cluster: &Cluster,
    command: Command,
    limit: Duration,
    what: &str,
    shown: impl Fn(&str) -> &str,
) -> String {
    let (status, stdout, stderr, took) = run(command, limit);
    println!("{what}, {took:?}: {}", shown(&stdout));
    assert!(
        status.is_some_and(|s| s.success()),
        "{what}: {status:?}\n{stdout}\n{stderr}\n{}",
        cluster.logs()
    );
    stdout
}

/// The last line of `text`.
fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or("")
}

/// Nothing of a run is left: no job or step in the queue, no `peer` on either node.
fn assert_nothing_left(cluster: &Cluster) {
    assert_eq!(cluster.wait_queue_empty(secs(10)), "", "jobs left in squeue");
    let until = Instant::now() + secs(5);
    loop {
        let left: Vec<u32> =
            (0..2).flat_map(|node| cluster.processes_on(node, peer_exe())).collect();
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < until, "peer processes left on the nodes: {left:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_client_refuses_a_pipe_through_srun_before_starting_anything() {
    // A path that does not exist: the refusal comes first, so nothing is even tried.
    for kind in [TransportKind::Pipe, TransportKind::ShmRing] {
        let mut srun = Command::new("/nonexistent/bin/srun");
        srun.args(["-w", "n1", "peer", "--role", "server"]);
        let options = Options { transport: kind, ..Options::default() };
        let err = Peer::spawn(srun, options).expect_err("a pipe through srun");
        let text = err.to_string();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{text}");
        assert!(text.contains(&format!("{kind} through `srun`")), "{text}");
        assert!(text.contains("use --transport tcp"), "{text}");
    }
}

/// The server on the other node, started by `srun` with no `--listen`: it announces the
/// address that routes to the launching node, and a Lorenz-96 trajectory computed there
/// equals the local one bit for bit; the report runs through the same route, its floors
/// through tcp too; nothing is left in the queue or on the nodes.
#[test]
fn tcp_through_srun_reaches_a_server_on_the_other_node_without_listen_bit_for_bit() {
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(240));
    let Some(cluster) = cluster_or_skip() else { return };
    let peer = peer_exe();
    let line = format!(
        "{} -w n1 -N1 -n1 {peer} --role server --handler lorenz96 --transport tcp",
        cluster.srun()
    );
    let (on_n1, calls) = cluster.on_n0(|| {
        let options = Options {
            transport: TransportKind::Tcp,
            timeout: Some(secs(20)),
            ..Options::default()
        };
        let peer = Peer::spawn_shell(&line, options)
            .unwrap_or_else(|e| panic!("spawn through srun: {e}\n{}", cluster.logs()));
        let pid = peer.server_hello().pid.expect("the server's pid in its HELLO");
        let on_n1 = cluster.runs_on(pid, 1);
        let mut rhs = RemoteRhs::new(peer);
        let n = 500;
        let mut remote = vec![lorenz96::FORCING; n];
        remote[0] += 0.01;
        let mut local = remote.clone();
        let (mut d_remote, mut d_local) = (vec![0.0; n], vec![0.0; n]);
        for step in 0..200 {
            rhs.eval(&remote, &mut d_remote).expect("eval across the nodes");
            lorenz96::rhs(&local, lorenz96::FORCING, &mut d_local).expect("local rhs");
            for i in 0..n {
                remote[i] += 0.01 * d_remote[i];
                local[i] += 0.01 * d_local[i];
            }
            let same = remote.iter().zip(&local).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "trajectories differ at step {step}");
        }
        let calls = rhs.stats().calls;
        rhs.close().expect("close across the nodes");
        (on_n1, calls)
    });
    assert!(on_n1, "the server ran on n1");
    assert_eq!(calls, 200);
    assert_nothing_left(&cluster);

    // The report, through the same route, from n0.
    let json = cluster.dir().join("report.json");
    let mut command = cluster.command_on_n0(peer);
    command
        .args(["--spawn", &format!("srun -w n1 -N1 -n1 {peer} --role server")])
        .args(["--transport", "tcp", "--sizes", "500", "--dtype", "f64", "--path", "zero-copy"])
        .args(["--wait", "hybrid", "--rounds", "6", "--generations", "1"])
        .args(["--duration", "60ms", "--warmup", "5ms", "--json"])
        .arg(&json);
    let (status, stdout, stderr, took) = run(command, secs(120));
    assert!(
        status.is_some_and(|s| s.success()),
        "report through srun: {status:?} after {took:?}\n{stdout}\n{stderr}\n{}",
        cluster.logs()
    );
    let text = std::fs::read_to_string(&json).expect("the JSON report");
    let report: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{text}");
    assert_eq!(rows[0]["transport"], "tcp", "{}", rows[0]);
    for floor in report["baseline"].as_array().expect("baseline") {
        let route = floor["route"].as_str().unwrap_or_default();
        assert!(route.starts_with("srun -w n1") && route.ends_with(" --transport tcp"), "{floor}");
    }
    // The launchers are not stopped between bursts (that would not stop the servers).
    assert!(!stderr.contains("got SIGCONT"), "srun was stopped and continued:\n{stderr}");
    let row = stdout.lines().find(|l| l.contains("echo") && l.contains("zero-copy"));
    println!("report through srun, {took:?}: {}", row.unwrap_or("(no row line)"));
    assert_nothing_left(&cluster);
    let namespaces = cluster.namespaces().clone();
    drop(cluster);
    for ns in &namespaces {
        assert!(!netns_exists(ns), "namespace {ns} left behind");
    }
}

/// Over the default pipe transport, `srun` is refused within 2 s with a message that says to
/// use tcp: by the client when it sees `srun` in the command, by the server (a task of the
/// step, its parent slurmstepd) when a wrapper hides it; and a client that itself runs as a
/// Slurm task still spawns a local pipe server.
#[test]
fn the_pipe_transport_through_srun_fails_within_2s_saying_to_use_tcp() {
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(180));
    let Some(cluster) = cluster_or_skip() else { return };
    let peer = peer_exe();
    // The client sees `srun`: refused before anything starts.
    let mut command = cluster.command_on_n0(peer);
    command
        .args(["--spawn", &format!("srun -w n1 -N1 -n1 {peer} --role server")])
        .args(["--sizes", "500", "--dtype", "f64"]);
    let (status, stdout, stderr, took) = run(command, secs(30));
    println!("peer --spawn \"srun …\" over pipes: {status:?} after {took:?}");
    assert_eq!(status.and_then(|s| s.code()), Some(2), "{stdout}\n{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("peer: error: ")).unwrap_or("");
    assert!(error.contains("pipe through `srun`"), "{stderr}");
    assert!(error.contains("use --transport tcp"), "{stderr}");
    assert!(took < secs(2), "failed only after {took:?}\n{stderr}");
    assert_eq!(cluster.squeue(), "", "nothing was submitted");

    // A wrapper hides `srun` from the client: the server, a task of the step, refuses, and
    // the client's error carries its words. (The first job of this cluster: no earlier job
    // still completing on n1 delays its allocation.)
    let line = format!("cd / && {} -w n1 -N1 -n1 {peer} --role server", cluster.srun());
    let (error, took) = cluster.on_n0(|| {
        let started = Instant::now();
        let options = Options { timeout: Some(secs(20)), ..Options::default() };
        let error = Peer::spawn_shell(&line, options).expect_err("a pipe server under srun");
        (error, started.elapsed())
    });
    println!("Peer::spawn_shell({line:?}) over pipes: after {took:?}: {error}");
    let text = error.to_string();
    assert_eq!(error.kind(), ErrorKind::PeerExited, "{text}");
    assert!(text.contains("its stdin and stdout relayed by srun"), "{text}");
    assert!(text.contains("start it with --transport tcp"), "{text}");
    assert!(took < secs(2), "failed only after {took:?}: {text}");
    assert_nothing_left(&cluster);

    // A client running as a task of a step spawns its own pipe server, on its node.
    let mut command = cluster.command_on_n0("srun");
    command
        .args(["-w", "n1", "-N1", "-n1", peer, "--spawn", &format!("{peer} --role server")])
        .args(["--sizes", "8", "--dtype", "f64", "--path", "codec", "--handler", "echo"])
        .args(["--wait", "block", "--rounds", "2", "--generations", "1"])
        .args(["--duration", "20ms", "--warmup", "5ms"]);
    let (status, stdout, stderr, took) = run(command, secs(120));
    assert!(
        status.is_some_and(|s| s.success()),
        "a client inside a step with a local pipe server: {status:?} after {took:?}\n{stdout}\n\
         {stderr}\n{}",
        cluster.logs()
    );
    assert_nothing_left(&cluster);
}

/// Run by Python on `n0` with a `srun` line and `n1`'s namespace: `Peer.spawn` over tcp, no
/// `--listen`; the server's HELLO pid is a process in `n1`'s namespace, and 500 and 65,536
/// f64 come back bit for bit.
const PYTHON_SPAWN: &str = r#"
import os, sys
import numpy as np
import peerpipe
line, n1 = sys.argv[1], sys.argv[2]
with peerpipe.Peer.spawn(line, transport="tcp", timeout=20.0) as peer:
    pid = peer.server_hello["pid"]
    on_n1 = os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(n1).st_ino
    for n in (500, 65536):
        x = np.random.default_rng(n).standard_normal(n)
        out = np.empty(n)
        for _ in range(20):
            peer.call(x, out)
            assert out.tobytes() == x.tobytes(), f"{n} f64 differ"
print(f"server on n1: {on_n1}; bit for bit")
"#;

/// From Python on `n0`: `Peer.spawn` of a tcp server through `srun` on `n1`, bit for bit, and
/// `python/examples/ensemble.py` with its servers spread over both nodes, matching its eight
/// local solves bit for bit; nothing left in the queue or on the nodes.
#[test]
fn python_spawns_through_srun_over_tcp_and_its_ensemble_runs_over_both_nodes() {
    let Ok(python) = std::env::var(PYTHON_VAR) else {
        println!("skipped: {PYTHON_VAR} is not set (.ci/run sets it once the package is built)");
        return;
    };
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(300));
    let Some(cluster) = cluster_or_skip() else { return };
    let peer = peer_exe();
    let line = format!("{} -w n1 -N1 -n1 {peer} --role server --transport tcp", cluster.srun());
    let mut command = cluster.command_on_n0(&python);
    command.args(["-c", PYTHON_SPAWN, &line]).arg(cluster.netns_path(1));
    let stdout = run_to_success(&cluster, command, secs(120), "Peer.spawn through srun", last_line);
    assert!(stdout.contains("server on n1: True; bit for bit"), "{stdout}");
    assert_nothing_left(&cluster);

    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/python/examples/ensemble.py");
    let mut command = cluster.command_on_n0(&python);
    command.args([example, "--launcher", &format!("{} -w n{{node}} -N1 -n1", cluster.srun())]);
    command.env("PEERPIPE_PEER", peer);
    let stdout =
        run_to_success(&cluster, command, secs(180), "ensemble.py over both nodes", last_line);
    assert!(stdout.contains("\"identical\": true"), "{stdout}");
    assert_nothing_left(&cluster);
}

/// Eight tcp servers started by `srun`, four on each node, each sleeping 1 ms per request (as
/// if it computed elsewhere): `prefix` is `srun`'s command (`env SLURM_CONF=… srun`).
fn eight_servers(prefix: &str, peer: &str) -> Vec<String> {
    (0..8)
        .map(|i| {
            format!(
                "{prefix} -w n{} -N1 -n1 {peer} --role server --transport tcp --server-sleep 1ms",
                i / 4
            )
        })
        .collect()
}

fn tcp_options(timeout: Duration) -> Options {
    Options { transport: TransportKind::Tcp, timeout: Some(timeout), ..Options::default() }
}

/// One client, eight servers over both nodes: every gather bit for bit and about as long as
/// the slowest server, not the sum; a server killed mid-run is an error naming it within the
/// gather's deadline while the seven other replies are delivered; nothing is left behind.
#[test]
fn eight_servers_over_two_nodes_answer_a_scatter_together_and_a_killed_one_is_named() {
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(180));
    let Some(cluster) = cluster_or_skip() else { return };
    let lines = eight_servers(&cluster.srun(), peer_exe());
    let timeout = secs(5);
    let (nodes, p50, failed, took) = cluster.on_n0(|| {
        let mut fanout = Fanout::spawn_shell(&lines, tcp_options(timeout))
            .unwrap_or_else(|e| panic!("eight servers through srun: {e}\n{}", cluster.logs()));
        let pids: Vec<u32> = (0..8)
            .map(|i| fanout.peer(i).and_then(|p| p.server_hello().pid).expect("a HELLO pid"))
            .collect();
        let nodes: Vec<usize> = pids
            .iter()
            .map(|&pid| (0..2).find(|&node| cluster.runs_on(pid, node)).unwrap_or(9))
            .collect();
        let request = pseudo_random_f64(500, 21);
        let mut buffers = vec![vec![0.0; 500]; 8];
        let mut elapsed = Vec::new();
        for _ in 0..50 {
            let mut outs: Vec<ValuesMut<'_>> =
                buffers.iter_mut().map(|b| ValuesMut::F64(b)).collect();
            let gathered = fanout.scatter(Values::F64(&request), &mut outs).expect("scatter");
            let failures: Vec<String> = gathered.failures().map(|f| f.to_string()).collect();
            assert!(failures.is_empty(), "{failures:?}");
            assert!(buffers.iter().all(|b| bits64(b) == bits64(&request)), "bit for bit");
            elapsed.push(gathered.elapsed_ns);
        }
        elapsed.sort_unstable();
        let p50 = Duration::from_nanos(elapsed[elapsed.len() / 2]);
        // Server 5, on n1, killed: the next gather names it and delivers the others.
        kill(Pid::from_raw(pids[5] as i32), Signal::SIGKILL).expect("kill server 5");
        let mut outs: Vec<ValuesMut<'_>> = buffers.iter_mut().map(|b| ValuesMut::F64(b)).collect();
        let started = Instant::now();
        let gathered = fanout.scatter(Values::F64(&request), &mut outs).expect("scatter");
        let took = started.elapsed();
        drop(outs);
        let mut failed = Vec::new();
        for (i, result) in gathered.results.iter().enumerate() {
            match result {
                Ok(_) => assert_eq!(bits64(&buffers[i]), bits64(&request), "server {i}"),
                Err(e) => failed.push((e.index, e.server.clone(), e.to_string())),
            }
        }
        let _ = fanout.close();
        (nodes, p50, failed, took)
    });
    assert_eq!(nodes, [0, 0, 0, 0, 1, 1, 1, 1], "where the servers ran");
    println!("8 servers over 2 nodes, 1 ms each, 500 f64 scattered: gather p50 {p50:?}");
    assert!(p50 < Duration::from_millis(8), "the gathers took {p50:?}: one after another");
    println!("the killed server: {failed:?} after {took:?}");
    assert_eq!(failed.len(), 1, "{failed:?}");
    let (index, server, text) = &failed[0];
    assert_eq!((*index, server), (5, &lines[5]), "{text}");
    assert!(text.starts_with("server 5 (`"), "{text}");
    assert!(took < timeout + secs(2), "the error came after {took:?}");
    assert_nothing_left(&cluster);
}

/// `examples/ensemble.rs` over the cluster: eight Lorenz-96 members with their own forcings,
/// on servers that `srun` starts on both nodes, match their local solves bit for bit.
#[test]
fn the_ensemble_example_over_both_nodes_matches_eight_local_solves_bit_for_bit() {
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(300));
    let example = example_exe("ensemble");
    let Some(cluster) = cluster_or_skip() else { return };
    let mut command = cluster.command_on_n0(&example);
    command.args([peer_exe(), "srun -w n{node} -N1 -n1"]);
    let stdout =
        run_to_success(&cluster, command, secs(120), "ensemble over both nodes", last_line);
    assert!(stdout.contains("\"identical\":true"), "{stdout}");
    assert_nothing_left(&cluster);
}

/// `examples/gather.rs` over the cluster, for each wait: eight servers sleeping 1 ms, four on
/// each node, gathered together and in turn with the same gather between threads of the
/// client (the machine's floor); every reply bit for bit, the figures printed (`cargo test
/// --release --test slurm gather -- --nocapture` for those of a release build).
#[test]
fn the_gather_example_over_both_nodes_measures_a_gather_beside_its_floor() {
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(300));
    let example = example_exe("gather");
    let Some(cluster) = cluster_or_skip() else { return };
    for wait in ["block", "auto"] {
        let mut command = cluster.command_on_n0(&example);
        let launcher = format!("{} -w n{{node}} -N1 -n1", cluster.srun());
        command.args([peer_exe(), "--rounds", "5", "--wait", wait, "--launcher", &launcher]);
        let what = format!("gather over both nodes, wait {wait}");
        let stdout = run_to_success(&cluster, command, secs(120), &what, |out| {
            out.lines().rev().nth(1).unwrap_or("")
        });
        assert!(stdout.contains("\"servers\":8,\"sleep_ns\":1000000"), "{stdout}");
        assert_nothing_left(&cluster);
    }
}

/// A fan-out client killed with SIGKILL mid-run (no code of it runs): its srun steps end and
/// within 5 s no `peer` is left on either node and `squeue` is empty.
#[test]
fn a_fanout_client_killed_with_sigkill_leaves_nothing_on_the_nodes_or_in_the_queue() {
    let _lock = serialize(&SLURM_LOCK);
    let _watchdog = Watchdog::new(secs(180));
    let Some(cluster) = cluster_or_skip() else { return };
    let exe = std::env::current_exe().expect("current_exe");
    let mut command = cluster.command_on_n0(exe.to_str().expect("a UTF-8 path"));
    command
        .args(["slurm_fanout_client_entry", "--exact", "--nocapture", "-q"])
        .env(CLIENT_SRUN_VAR, cluster.srun())
        .env(CLIENT_PEER_VAR, peer_exe())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut client = command.spawn().expect("start the fan-out client");
    let stderr = read_on_thread(client.stderr.take().expect("stderr"));
    let stdout = read_on_thread(client.stdout.take().expect("stdout"));
    let servers =
        || -> usize { (0..2).map(|node| cluster.processes_on(node, "--role server").len()).sum() };
    let until = Instant::now() + secs(60);
    while servers() < 8 {
        if let Ok(Some(status)) = client.try_wait() {
            let err = stderr.join().unwrap_or_default();
            panic!("the client ended ({status}) before its servers ran:\n{err}");
        }
        assert!(Instant::now() < until, "the eight servers never ran\n{}", cluster.logs());
        thread::sleep(Duration::from_millis(50));
    }
    thread::sleep(Duration::from_millis(500)); // into the gathers
    assert!(client.try_wait().expect("try_wait").is_none(), "the client is gathering");
    client.kill().expect("SIGKILL the client");
    let status = client.wait().expect("reap the client");
    let killed_at = Instant::now();
    let left = cluster.wait_nothing_left(peer_exe(), secs(5));
    let gone_after = killed_at.elapsed();
    println!("client {status}; its servers and steps gone after {gone_after:?}");
    let said = stdout.join().unwrap_or_default();
    assert_eq!(left, (Vec::new(), String::new()), "left after 5 s\n{said}\n{}", cluster.logs());
}

/// Body of the fan-out client of the test above: returns at once in a normal test run; when
/// started with [`CLIENT_SRUN_VAR`], spawns the eight servers and gathers until it is killed.
#[test]
fn slurm_fanout_client_entry() {
    let Ok(srun) = std::env::var(CLIENT_SRUN_VAR) else { return };
    let peer = std::env::var(CLIENT_PEER_VAR).expect("the peer binary");
    let mut fanout =
        Fanout::spawn_shell(&eight_servers(&srun, &peer), tcp_options(secs(10))).expect("spawn");
    let request = pseudo_random_f64(500, 1);
    let mut buffers = vec![vec![0.0; 500]; 8];
    println!("gathering");
    loop {
        let mut outs: Vec<ValuesMut<'_>> = buffers.iter_mut().map(|b| ValuesMut::F64(b)).collect();
        let gathered = fanout.scatter(Values::F64(&request), &mut outs).expect("scatter");
        gathered.into_result().expect("every server answers");
    }
}
