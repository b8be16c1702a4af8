//! `Fanout`: many servers called together — every reply bit for bit in its own buffer, one
//! server's failure an error naming it while the others' replies stand, one deadline for the
//! whole gather, and servers that sleep answering together rather than one after another.

mod common;

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::{
    Watchdog, bits64, example_exe, f64_edges, is_our_child, peer_exe, pseudo_random_f64, secs,
    wait_or_kill,
};
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::fanout::Fanout;
use peerpipe::{Error, ErrorKind, Options, TransportKind};

/// One test at a time: each starts several servers, and the timing test wants the cores.
static FANOUT_LOCK: Mutex<()> = Mutex::new(());

fn lines(n: usize, kind: TransportKind, extra: &str) -> Vec<String> {
    let transport = if kind == TransportKind::Tcp { " --transport tcp" } else { "" };
    (0..n).map(|_| format!("{} --role server{transport}{extra}", peer_exe())).collect()
}

fn options(kind: TransportKind, timeout: Duration) -> Options {
    Options { transport: kind, timeout: Some(timeout), ..Options::default() }
}

fn outs(buffers: &mut [Vec<f64>]) -> Vec<ValuesMut<'_>> {
    buffers.iter_mut().map(|b| ValuesMut::F64(b)).collect()
}

fn server_pids(fanout: &Fanout) -> Vec<u32> {
    (0..fanout.len())
        .map(|i| fanout.peer(i).and_then(|p| p.spawned_pid()).expect("a pid"))
        .collect()
}

#[test]
fn a_scatter_reaches_every_server_and_each_reply_lands_in_its_own_buffer() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    for kind in [TransportKind::Pipe, TransportKind::Tcp] {
        let mut fanout = Fanout::spawn_shell(&lines(4, kind, ""), options(kind, secs(10)))
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(fanout.len(), 4);
        let mut request = f64_edges();
        request.extend(pseudo_random_f64(500, 7));
        let mut buffers = vec![vec![0.0; request.len()]; 4];
        let gathered = fanout.scatter(Values::F64(&request), &mut outs(&mut buffers)).unwrap();
        assert_eq!(gathered.failures().count(), 0, "{kind}: {gathered:?}");
        for buffer in &buffers {
            assert_eq!(bits64(buffer), bits64(&request), "{kind}");
        }
        // One array per server, each answered into its own buffer.
        let requests: Vec<Vec<f64>> =
            (0..4).map(|i| pseudo_random_f64(300 + i, i as u64)).collect();
        let mut buffers: Vec<Vec<f64>> = requests.iter().map(|r| vec![0.0; r.len()]).collect();
        let values: Vec<Values<'_>> = requests.iter().map(|r| Values::F64(r)).collect();
        let timings = fanout.call_each(&values, &mut outs(&mut buffers)).unwrap().into_result();
        assert_eq!(timings.expect("every server answers").len(), 4);
        for (request, buffer) in requests.iter().zip(&buffers) {
            assert_eq!(bits64(buffer), bits64(request), "{kind}");
        }
        let pids = server_pids(&fanout);
        fanout.close().unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert!(pids.iter().all(|&pid| !is_our_child(pid)), "{kind}: servers reaped");
    }
}

#[test]
fn one_killed_server_is_an_error_naming_it_and_the_others_replies_stand() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    for kind in [TransportKind::Pipe, TransportKind::Tcp] {
        let server_lines = lines(4, kind, "");
        let mut fanout = Fanout::spawn_shell(&server_lines, options(kind, secs(10))).unwrap();
        let pids = server_pids(&fanout);
        kill(Pid::from_raw(pids[2] as i32), Signal::SIGKILL).expect("kill server 2");
        let request = pseudo_random_f64(500, 3);
        for attempt in 0..2 {
            let mut buffers = vec![vec![0.0; 500]; 4];
            let gathered = fanout.scatter(Values::F64(&request), &mut outs(&mut buffers)).unwrap();
            for (i, result) in gathered.results.iter().enumerate() {
                match (i, result) {
                    (2, Err(failed)) => {
                        assert_eq!(failed.index, 2);
                        assert_eq!(failed.server, server_lines[2]);
                        let text = failed.to_string();
                        assert!(text.starts_with(&format!("server 2 (`{}`): ", server_lines[2])));
                        if attempt == 0 {
                            assert_eq!(failed.error.kind(), ErrorKind::PeerExited, "{text}");
                            assert!(text.contains("killed by signal 9"), "{kind}: {text}");
                        }
                    }
                    (2, Ok(_)) => panic!("{kind}: the killed server answered"),
                    (_, Ok(_)) => assert_eq!(bits64(&buffers[i]), bits64(&request), "{kind}"),
                    (_, Err(e)) => panic!("{kind}: server {i} failed: {e}"),
                }
            }
        }
        let others = [pids[0], pids[1], pids[3]];
        let closed = fanout.close();
        assert!(closed.as_ref().err().is_none_or(|e| e.index == 2), "{kind}: {closed:?}");
        assert!(pids.iter().all(|&pid| !is_our_child(pid)), "{kind}: {others:?} reaped");
    }
}

#[test]
fn a_stopped_server_times_out_within_the_gathers_deadline_and_the_others_reply() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let kind = TransportKind::Pipe;
    let limit = Duration::from_millis(400);
    let mut fanout = Fanout::spawn_shell(&lines(3, kind, ""), options(kind, limit)).unwrap();
    let pids = server_pids(&fanout);
    kill(Pid::from_raw(pids[0] as i32), Signal::SIGSTOP).expect("stop server 0");
    let request = pseudo_random_f64(500, 5);
    let mut buffers = vec![vec![0.0; 500]; 3];
    let gathered = fanout.scatter(Values::F64(&request), &mut outs(&mut buffers)).unwrap();
    let failed = gathered.results[0].as_ref().expect_err("a stopped server cannot answer");
    assert!(matches!(failed.error, Error::Timeout { .. }), "{failed}");
    for (result, buffer) in gathered.results.iter().zip(&buffers).skip(1) {
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(bits64(buffer), bits64(&request));
    }
    // One deadline for the gather, not one per server in turn.
    let elapsed = Duration::from_nanos(gathered.elapsed_ns);
    assert!(elapsed < limit + secs(2), "the gather took {elapsed:?}");
    let _ = fanout.close();
    assert!(pids.iter().all(|&pid| !is_our_child(pid)), "servers reaped");
}

/// Eight servers that each sleep 1 ms before answering: a gather waits for the slowest, not
/// for the sum (8 ms one after another).
#[test]
fn sleeping_servers_answer_a_gather_together_not_one_after_another() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let kind = TransportKind::Pipe;
    let server_lines = lines(8, kind, " --server-sleep 1ms");
    let mut fanout = Fanout::spawn_shell(&server_lines, options(kind, secs(10))).unwrap();
    let request = pseudo_random_f64(500, 11);
    let mut buffers = vec![vec![0.0; 500]; 8];
    let mut elapsed = Vec::new();
    for _ in 0..40 {
        let gathered = fanout.scatter(Values::F64(&request), &mut outs(&mut buffers)).unwrap();
        let timings = gathered.results.iter().map(|r| r.as_ref().expect("a reply"));
        assert!(timings.clone().all(|t| t.server_ns >= 1_000_000), "each server slept 1 ms");
        elapsed.push(gathered.elapsed_ns);
        assert!(buffers.iter().all(|b| bits64(b) == bits64(&request)));
    }
    elapsed.sort_unstable();
    let p50 = Duration::from_nanos(elapsed[elapsed.len() / 2]);
    println!("8 servers sleeping 1 ms each, 500 f64 scattered: gather p50 {p50:?}");
    assert!(p50 < Duration::from_millis(8), "the gathers took {p50:?}: one after another");
    fanout.close().expect("close");
}

#[test]
fn buffers_that_do_not_match_the_servers_are_refused_before_anything_is_sent() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    let kind = TransportKind::Pipe;
    let mut fanout = Fanout::spawn_shell(&lines(2, kind, ""), options(kind, secs(10))).unwrap();
    let request = [1.5; 8];
    let mut one = vec![vec![0.0; 8]];
    let err = fanout.scatter(Values::F64(&request), &mut outs(&mut one)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("2 servers need 2 requests and 2 reply buffers"), "{err}");
    // Nothing was sent: the next gather is answered in step.
    let mut two = vec![vec![0.0; 8]; 2];
    let gathered = fanout.scatter(Values::F64(&request), &mut outs(&mut two)).unwrap();
    assert!(gathered.into_result().is_ok());
    assert_eq!(two, vec![vec![1.5; 8]; 2]);
    fanout.close().expect("close");
}

#[test]
fn a_server_that_cannot_start_fails_the_spawn_naming_it_and_the_others_are_reaped() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(30));
    let mut server_lines = lines(2, TransportKind::Pipe, "");
    server_lines.insert(1, "/nonexistent/peer --role server".to_owned());
    let options = options(TransportKind::Pipe, secs(10));
    let err = Fanout::spawn_shell(&server_lines, options).expect_err("server 1 cannot start");
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    assert!(err.to_string().contains("/nonexistent/peer"), "{err}");
}

#[test]
fn server_sleep_is_a_server_flag_and_the_report_refuses_it() {
    let out = Command::new(peer_exe()).args(["--server-sleep", "1ms"]).output().expect("run peer");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("invalid --server-sleep: applies to a server"), "{stderr}");
}

/// `examples/ensemble.rs`: eight Lorenz-96 members with forcings 8.0 to 8.7, each on a server
/// of its own (`--forcing`), called together every step, equal their local solves bit for bit.
#[test]
fn the_ensemble_example_matches_eight_local_solves_bit_for_bit() {
    let _lock = common::serialize(&FANOUT_LOCK);
    let _watchdog = Watchdog::new(secs(300));
    let mut child = Command::new(example_exe("ensemble"))
        .arg(peer_exe())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the ensemble example");
    let stdout = common::read_on_thread(child.stdout.take().expect("stdout"));
    let status = wait_or_kill(&mut child, secs(120), "the ensemble example");
    let said = stdout.join().unwrap_or_default();
    assert!(status.success(), "{status}\n{said}");
    assert!(said.contains("\"identical\":true"), "{said}");
}

#[test]
fn forcing_is_a_lorenz96_server_flag_and_is_refused_elsewhere() {
    let run = |args: &[&str]| {
        let out = Command::new(peer_exe()).args(args).output().expect("run peer");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stderr) = run(&["--role", "server", "--handler", "echo", "--forcing", "8.5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--forcing: applies to --handler lorenz96, not \"echo\""), "{stderr}");
    let (code, stderr) = run(&["--role", "server", "--handler", "lorenz96", "--forcing", "inf"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("must be a finite number"), "{stderr}");
    let (code, stderr) = run(&["--forcing", "8.5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--forcing: applies to a server"), "{stderr}");
}
