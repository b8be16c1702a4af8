//! No descriptor or child process outlives a peer: 200 spawn/call/close cycles, and 50 cycles
//! whose server is killed before the call.
//!
//! Its own test binary, with a single test, so nothing else opens descriptors or spawns
//! processes while it counts them.

mod common;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use common::{Watchdog, child_processes, describe_fds, open_fds, peer_exe, secs};
use peerpipe::{Error, Options, Peer};

fn options() -> Options {
    Options { timeout: Some(secs(10)), ..Options::default() }
}

fn spawn_call_close() {
    let mut peer = Peer::spawn_server(peer_exe(), "echo", options()).expect("spawn");
    let mut reply = [0.0; 3];
    peer.call_f64(&[1.0, -0.0, f64::NAN], &mut reply).expect("call");
    assert_eq!(reply[0], 1.0);
    let status = peer.close().expect("close").expect("status");
    assert!(status.success(), "{status:?}");
}

fn spawn_kill_call() {
    let mut peer = Peer::spawn_server(peer_exe(), "echo", options()).expect("spawn");
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
fn spawn_close_and_kill_cycles_leak_no_descriptors_or_children() {
    let _watchdog = Watchdog::new(secs(50));
    // One warm-up cycle of each kind, so lazily opened process-wide descriptors are counted in
    // the baseline.
    spawn_call_close();
    spawn_kill_call();
    let fds_before = describe_fds();
    let (fd_count, children) = (open_fds(), child_processes());
    assert_eq!(children, [], "children before the cycles");

    // The counters see what they are meant to: a live peer holds two pipe ends and a child.
    let peer = Peer::spawn_server(peer_exe(), "echo", options()).expect("spawn");
    let pid = peer.server_pid().expect("spawned") as i32;
    assert_eq!(open_fds(), fd_count + 2, "a live peer's descriptors: {:#?}", describe_fds());
    let live = child_processes();
    assert_eq!(live.iter().map(|c| c.pid).collect::<Vec<_>>(), [pid], "{live:?}");
    drop(peer);

    for _ in 0..200 {
        spawn_call_close();
    }
    assert_eq!(
        open_fds(),
        fd_count,
        "after 200 spawn/close cycles\nbefore: {fds_before:#?}\nafter: {:#?}",
        describe_fds()
    );
    assert_eq!(child_processes(), [], "after 200 spawn/close cycles");

    for _ in 0..50 {
        spawn_kill_call();
    }
    assert_eq!(
        open_fds(),
        fd_count,
        "after 50 kill cycles\nbefore: {fds_before:#?}\nafter: {:#?}",
        describe_fds()
    );
    assert_eq!(child_processes(), [], "after 50 kill cycles");
}
