//! Descriptor and child-process counts stay flat across 1,000 spawn/call/close cycles.
//!
//! Its own test binary, with a single test, so nothing else opens descriptors or spawns
//! processes while it counts them (`tests/leaks.rs` covers killed servers as well).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{Watchdog, child_processes, describe_fds, open_fds, peer_exe, secs};
use peerpipe::{Options, Peer};
use peerpipe_cli::soak::HANDLERS;

const CYCLES: usize = 1000;
const CHECK_EVERY: usize = 100;

fn spawn_call_close(handler: &str) {
    let options = Options { timeout: Some(secs(10)), ..Options::default() };
    let mut peer = Peer::spawn_server(peer_exe(), handler, options).expect("spawn");
    let mut reply = [0.0; 3];
    peer.call_f64(&[1.0, -0.0, f64::NAN], &mut reply).expect("call");
    assert_eq!(reply.map(f64::to_bits), [1.0, -0.0, f64::NAN].map(f64::to_bits));
    let status = peer.close().expect("close").expect("status");
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_thousand_spawn_call_close_cycles_leave_descriptor_and_child_counts_flat() {
    let _watchdog = Watchdog::new(secs(120));
    // Warm-up cycles, so lazily opened process-wide descriptors are in the baseline.
    for handler in HANDLERS {
        spawn_call_close(handler);
    }
    let fds_before = describe_fds();
    let fd_count = open_fds();
    assert_eq!(child_processes(), [], "children before the cycles");

    let started = Instant::now();
    for cycle in 1..=CYCLES {
        spawn_call_close(HANDLERS[cycle % HANDLERS.len()]);
        if cycle % CHECK_EVERY == 0 {
            assert_eq!(
                open_fds(),
                fd_count,
                "after {cycle} cycles\nbefore: {fds_before:#?}\nafter: {:#?}",
                describe_fds()
            );
            assert_eq!(child_processes(), [], "after {cycle} cycles");
        }
    }
    let elapsed = started.elapsed();
    eprintln!(
        "{CYCLES} spawn/call/close cycles in {elapsed:?} ({:?} each)",
        elapsed / CYCLES as u32
    );
}
