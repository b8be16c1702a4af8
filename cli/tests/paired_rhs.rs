//! `RemoteRhs` with a paired floor (`PairedRhs`): segments of calls, each followed by a burst
//! of the raw floor, give an overhead ratio with its interval, and nothing outlives `close`.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Mutex;

use common::{Watchdog, child_processes, leftovers, peer_exe, secs, serialize};
use peerpipe::rhs::RemoteRhs;
use peerpipe::{Options, TransportKind, Wait, lorenz96};
use peerpipe_cli::baseline::RawEcho;
use peerpipe_cli::paired_rhs::PairedRhs;

/// Both tests spawn servers; one asserts that no child of this process is left, so they take
/// turns (the other test's live servers would otherwise be counted as leaks).
static FORK_LOCK: Mutex<()> = Mutex::new(());

#[test]
fn a_paired_floor_records_one_segment_per_n_calls_and_gives_an_overhead_ratio() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    assert_eq!(child_processes(), [], "children before the test");
    for transport in TransportKind::EVERY {
        let options = Options { transport, wait: Wait::default(), ..Options::default() };
        let n = 64;
        let echo = RawEcho::spawn(
            peer_exe().as_ref(),
            n * 8,
            options.wait,
            transport,
            options.pipe_capacity,
            options.timeout,
        )
        .unwrap();
        let mut rhs =
            PairedRhs::new(RemoteRhs::spawn_server(peer_exe(), "lorenz96", options).unwrap());
        rhs.pair_with_floor(echo, 10, 20).unwrap();
        let mut x = vec![lorenz96::FORCING; n];
        x[0] += 0.01;
        let (mut got, mut want) = (vec![0.0; n], vec![0.0; n]);
        for _ in 0..65 {
            rhs.eval(&x, &mut got).unwrap();
            lorenz96::rhs(&x, lorenz96::FORCING, &mut want).unwrap();
            assert!(got.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()));
            x.iter_mut().zip(&got).for_each(|(xi, di)| *xi += 1e-3 * di);
        }
        let (stats, floor) = (rhs.stats(), rhs.floor());
        assert_eq!(stats.calls, 65);
        assert_eq!(floor.segments.len(), 6, "{transport}: one segment per 10 calls");
        assert!(floor.segments.iter().all(|s| s.overhead_p50_ns > 0 && s.floor_p50_ns > 0));
        assert!(floor.floor_wall_ns > 0);
        let ratio = floor.overhead_ratio().expect("a ratio once segments exist");
        assert!(ratio.ci[0] <= ratio.median && ratio.median <= ratio.ci[1], "{ratio:?}");
        assert!(floor.floor_p50_ns().is_some());
        rhs.close().unwrap();
        assert_eq!(child_processes(), [], "{transport}: close reaps the server and the floor");
    }
}

#[test]
fn a_paired_floor_needs_calls_and_round_trips_and_a_refusal_loses_nothing() {
    let _lock = serialize(&FORK_LOCK);
    let echo = RawEcho::spawn(
        peer_exe().as_ref(),
        8,
        Wait::Block,
        TransportKind::Pipe,
        None,
        Some(secs(5)),
    )
    .unwrap();
    let mut rhs =
        PairedRhs::new(RemoteRhs::spawn_server(peer_exe(), "echo", Options::default()).unwrap());
    let err = rhs.pair_with_floor(echo, 0, 20).unwrap_err().to_string();
    assert!(err.contains("at least 1 call per segment") && err.contains("found 0 and 20"), "{err}");
    // The refusal loses nothing: the derivative server still answers, and no floor was kept.
    let mut out = [0.0; 4];
    rhs.eval(&[1.0, 2.0, 3.0, 4.0], &mut out).unwrap();
    assert_eq!(out, [1.0, 2.0, 3.0, 4.0]);
    assert!(rhs.floor().segments.is_empty());
    rhs.close().unwrap();
}

#[test]
fn reset_stats_counts_only_the_calls_after_it_and_drops_the_segment_under_way() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    let options = Options::default();
    let echo = RawEcho::spawn(
        peer_exe().as_ref(),
        8 * 8,
        options.wait,
        options.transport,
        options.pipe_capacity,
        options.timeout,
    )
    .unwrap();
    let mut rhs = PairedRhs::new(RemoteRhs::spawn_server(peer_exe(), "echo", options).unwrap());
    rhs.pair_with_floor(echo, 10, 5).unwrap();
    let (x, mut out) = ([0.5; 8], [0.0; 8]);
    let mut calls = |rhs: &mut PairedRhs, n: usize| {
        for _ in 0..n {
            rhs.eval(&x, &mut out).unwrap();
        }
    };
    calls(&mut rhs, 25); // two segments, and 5 calls of a third
    assert_eq!((rhs.stats().calls, rhs.floor().segments.len()), (25, 2));
    rhs.reset_stats();
    let stats = rhs.stats();
    assert_eq!(
        (stats.calls, stats.round_trip_ns, stats.server_ns, rhs.floor().floor_wall_ns),
        (0, 0, 0, 0)
    );
    assert_eq!(
        (stats.round_trips.len(), stats.overheads.len(), rhs.floor().segments.len()),
        (0, 0, 0)
    );
    assert_eq!(stats.mean_round_trip_ns(), 0);
    // The 5 calls before the reset do not complete a segment with the 8 after it.
    calls(&mut rhs, 8);
    assert_eq!((rhs.stats().calls, rhs.floor().segments.len()), (8, 0));
    calls(&mut rhs, 12);
    let stats = rhs.stats();
    assert_eq!((stats.calls, stats.round_trips.len(), rhs.floor().segments.len()), (20, 20, 2));
    assert!(stats.round_trip_ns > 0 && rhs.floor().floor_wall_ns > 0);
    rhs.close().unwrap();
}

/// The environment variable that turns `paired_floor_client_entry` into a client.
const PAIRED_CLIENT_VAR: &str = "PEERPIPE_PAIRED_FLOOR_CLIENT";

/// When started by the test below: a library client whose derivative server runs and whose
/// paired floor is stopped (`SIGSTOP`) between bursts, spawned from a short-lived thread; it
/// prints the floor's pid and waits to be killed. Returns at once in a normal test run.
#[test]
fn paired_floor_client_entry() {
    let Ok(transport) = std::env::var(PAIRED_CLIENT_VAR) else { return };
    let transport: TransportKind = transport.parse().expect("a transport");
    let options = Options { transport, ..Options::default() };
    let rhs = std::thread::spawn(move || {
        let echo = RawEcho::spawn(peer_exe().as_ref(), 64 * 8, options.wait, transport, None, None)
            .expect("spawn the floor");
        let mut rhs = PairedRhs::new(
            RemoteRhs::spawn_server(peer_exe(), "lorenz96", options).expect("spawn"),
        );
        let floor = echo.server_pid();
        rhs.pair_with_floor(echo, 1000, 10).expect("pair");
        (rhs, floor)
    })
    .join()
    .expect("the spawning thread");
    println!("floor {}", rhs.1);
    std::thread::sleep(secs(60));
    drop(rhs);
}

/// A library client killed (SIGKILL) while its paired floor is stopped: the floor, in a
/// process group of its own, is orphaned, continued and hung up by the kernel, and the
/// derivative server sees its input end; within a second nothing of the client is left.
#[test]
fn a_client_killed_while_its_paired_floor_is_stopped_leaves_nothing_behind() {
    let _lock = serialize(&FORK_LOCK);
    let _watchdog = Watchdog::new(secs(60));
    for transport in TransportKind::EVERY {
        let mut command = std::process::Command::new(std::env::current_exe().expect("exe"));
        command.args(["paired_floor_client_entry", "--exact", "--nocapture", "-q"]);
        command.env(PAIRED_CLIENT_VAR, transport.name());
        let mut run = leftovers::launch(command, &leftovers::new_tag("paired"));
        let until = std::time::Instant::now() + secs(20);
        let stopped = |tag: &str| leftovers::tagged(tag).iter().any(|p| p.state == 'T');
        while !stopped(run.tag()) {
            assert!(run.running() && std::time::Instant::now() < until, "no floor was stopped");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let ending = run.end(Some(nix::sys::signal::Signal::SIGKILL));
        assert!(ending.leftovers.is_empty(), "{transport}: {:?}", ending.leftovers);
    }
}
