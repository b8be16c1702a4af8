//! No descriptor, shared mapping or child process outlives a peer, on every transport: 200
//! spawn/call/close cycles over pipes and 100 over each shared-memory transport, and 50 cycles
//! each whose server is killed before the call.
//!
//! Its own test binary, with a single test, so nothing else opens descriptors or spawns
//! processes while it counts them.

mod common;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::{Watchdog, child_processes, describe_fds, open_fds, peer_exe, secs};
use peerpipe::{Error, Options, Peer, TransportKind};

fn options(transport: TransportKind) -> Options {
    Options { timeout: Some(secs(10)), transport, ..Options::default() }
}

/// Mappings of shared-memory regions in this process (`/memfd:peerpipe-shm (deleted)`).
fn shm_mappings() -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    maps.lines().filter(|line| line.contains("peerpipe-shm")).count()
}

fn spawn_call_close(transport: TransportKind) {
    let mut peer = Peer::spawn_server(peer_exe(), "echo", options(transport)).expect("spawn");
    let mut reply = [0.0; 3];
    peer.call_f64(&[1.0, -0.0, f64::NAN], &mut reply).expect("call");
    assert_eq!(reply[0], 1.0);
    let status = peer.close().expect("close").expect("status");
    assert!(status.success(), "{status:?}");
}

fn spawn_kill_call(transport: TransportKind) {
    let mut peer = Peer::spawn_server(peer_exe(), "echo", options(transport)).expect("spawn");
    let pid = peer.server_pid().expect("spawned") as i32;
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("kill the server");
    let result = peer.call_f64(&[1.0], &mut [0.0]);
    match result {
        Err(Error::PeerExited { .. } | Error::PeerClosed { .. }) => {}
        other => panic!("a call to a killed server: {other:?}"),
    }
    drop(peer);
}

#[test]
fn spawn_close_and_kill_cycles_leak_no_descriptors_mappings_or_children() {
    let _watchdog = Watchdog::new(secs(120));
    for (transport, cycles) in
        [(TransportKind::Pipe, 200), (TransportKind::ShmSem, 100), (TransportKind::ShmRing, 100)]
    {
        leak_no_descriptors_mappings_or_children(transport, cycles);
    }
}

fn leak_no_descriptors_mappings_or_children(transport: TransportKind, cycles: usize) {
    // One warm-up cycle of each kind, so lazily opened process-wide descriptors are counted in
    // the baseline.
    spawn_call_close(transport);
    spawn_kill_call(transport);
    let fds_before = describe_fds();
    let (fd_count, children) = (open_fds(), child_processes());
    assert_eq!(children, [], "{transport}: children before the cycles");
    assert_eq!(shm_mappings(), 0, "{transport}: mappings before the cycles");

    // The counters see what they are meant to: a live peer holds two pipe ends and a child,
    // or one pipe end (the liveness pipe; the memfd is closed once mapped), a mapping and a
    // child; the read end of the server's stderr (Options::capture_stderr); and, under the
    // default wait (auto), the server's /proc/PID/stat.
    let peer = Peer::spawn_server(peer_exe(), "echo", options(transport)).expect("spawn");
    let pid = peer.server_pid().expect("spawned") as i32;
    let stat = format!("/proc/{pid}/stat");
    assert!(
        describe_fds().iter().any(|fd| fd.ends_with(&format!(" -> {stat}"))),
        "{transport}: the auto wait keeps {stat} open: {:#?}",
        describe_fds()
    );
    let (fds, mappings) = if transport.is_shared_memory() { (3, 1) } else { (4, 0) };
    assert_eq!(
        open_fds(),
        fd_count + fds,
        "{transport}: a live peer's descriptors: {:#?}",
        describe_fds()
    );
    assert_eq!(shm_mappings(), mappings, "{transport}: a live peer's mappings");
    let live = child_processes();
    assert_eq!(live.iter().map(|c| c.pid).collect::<Vec<_>>(), [pid], "{live:?}");
    drop(peer);

    for _ in 0..cycles {
        spawn_call_close(transport);
    }
    assert_eq!(
        open_fds(),
        fd_count,
        "{transport}: after {cycles} spawn/close cycles\nbefore: {fds_before:#?}\nafter: {:#?}",
        describe_fds()
    );
    assert_eq!(shm_mappings(), 0, "{transport}: mappings after {cycles} spawn/close cycles");
    assert_eq!(child_processes(), [], "{transport}: after {cycles} spawn/close cycles");

    for _ in 0..50 {
        spawn_kill_call(transport);
    }
    assert_eq!(
        open_fds(),
        fd_count,
        "{transport}: after 50 kill cycles\nbefore: {fds_before:#?}\nafter: {:#?}",
        describe_fds()
    );
    assert_eq!(shm_mappings(), 0, "{transport}: mappings after 50 kill cycles");
    assert_eq!(child_processes(), [], "{transport}: after 50 kill cycles");
}
