//! Steady state allocates nothing: once buffers are warm, a round trip — `Peer::call` on both
//! paths and every dtype, and PARTS calls, over every transport (tcp on loopback included),
//! and `RemoteRhs::eval` and `eval_at` — makes zero heap allocations in this process.
//!
//! The counting allocator is process-wide, so this file holds one test and the measured loops
//! run on the test's own thread with nothing else active in the process.

mod common;

use std::time::Duration;

use peerpipe::codec::{Values, ValuesMut};
use peerpipe::parts::{Part, PartMut};
use peerpipe::peer::PartsReply;
use peerpipe::rhs::{Exchange, RemoteRhs};
use peerpipe::{DataPath, Options, Peer, TransportKind, Wait};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

const WARM: usize = 50;
const MEASURED: usize = 1000;

fn options(path: DataPath, transport: TransportKind) -> Options {
    Options {
        wait: Wait::default(),
        timeout: Some(Duration::from_secs(10)),
        path,
        transport,
        ..Options::default()
    }
}

/// Runs `call` WARM times, then MEASURED times inside a counting region; returns the number of
/// allocations and reallocations the measured calls made.
fn allocations_in_steady_state(mut call: impl FnMut()) -> (usize, usize) {
    for _ in 0..WARM {
        call();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..MEASURED {
        call();
    }
    let change = region.change();
    (change.allocations, change.reallocations)
}

#[test]
fn round_trips_allocate_nothing_once_warm() {
    let exe = common::peer_exe();
    let state: Vec<f64> = (0..500).map(|i| i as f64 * 0.01 - 2.0).collect();
    let state32: Vec<f32> = state.iter().map(|&x| x as f32).collect();
    let mut out = vec![0.0f64; 500];
    let mut out32 = vec![0.0f32; 500];

    let cases = TransportKind::EVERY
        .into_iter()
        .flat_map(|t| [DataPath::ZeroCopy, DataPath::Codec].map(move |p| (t, p)));
    for (transport, path) in cases {
        let mut peer =
            Peer::spawn_server(exe, "echo", options(path, transport)).expect("spawn echo server");
        let path = format!("{path} over {transport}");
        let counts = allocations_in_steady_state(|| {
            peer.call(Values::F64(&state), ValuesMut::F64(&mut out)).expect("f64 call");
        });
        assert_eq!(counts, (0, 0), "f64 {path}: (allocations, reallocations) per {MEASURED} calls");
        let counts = allocations_in_steady_state(|| {
            peer.call(Values::F32(&state32), ValuesMut::F32(&mut out32)).expect("f32 call");
        });
        assert_eq!(counts, (0, 0), "f32 {path}");
        let counts = allocations_in_steady_state(|| {
            peer.call(Values::F64AsF32(&state), ValuesMut::F64FromF32(&mut out))
                .expect("f64-as-f32 call");
        });
        assert_eq!(counts, (0, 0), "f64-as-f32 {path}");
        let counts = allocations_in_steady_state(|| {
            let seq = peer.send(Values::F64(&state)).expect("send");
            let reply = peer.recv(ValuesMut::F64(&mut out)).expect("recv");
            assert_eq!(reply.seq, seq);
        });
        assert_eq!(counts, (0, 0), "send/recv {path}");
        // PARTS: t, a state and parameters out, the echo's three parts back (the server's
        // default function), and a reply of any shape into a reused PartsReply.
        let (t, params) = ([0.5], [1.0; 8]);
        let (mut t_out, mut params_out) = ([0.0], [0.0; 8]);
        let counts = allocations_in_steady_state(|| {
            let inputs = [Part::f64(&t), Part::f64(&state), Part::f64(&params)];
            let mut outputs =
                [PartMut::f64(&mut t_out), PartMut::f64(&mut out), PartMut::f64(&mut params_out)];
            peer.call_parts("", &inputs, &mut outputs).expect("parts call");
        });
        assert_eq!(counts, (0, 0), "call_parts {path}");
        let mut reply = PartsReply::new();
        let counts = allocations_in_steady_state(|| {
            let inputs = [Part::f64(&t), Part::f64(&state), Part::f64(&params)];
            peer.call_parts_any("", &inputs, &mut reply).expect("parts call, any shape");
        });
        assert_eq!(counts, (0, 0), "call_parts_any {path}");
        peer.close().expect("close");
    }

    for exchange in [Exchange::F64, Exchange::F64AsF32] {
        let handler = if exchange == Exchange::F64 { "lorenz96" } else { "lorenz96-f32" };
        let options = options(DataPath::ZeroCopy, TransportKind::Pipe);
        let mut rhs = RemoteRhs::spawn_server(exe, handler, options)
            .expect("spawn lorenz96 server")
            .with_exchange(exchange);
        let counts = allocations_in_steady_state(|| {
            rhs.eval(&state, &mut out).expect("eval");
        });
        assert_eq!(counts, (0, 0), "RemoteRhs::eval {exchange:?}");
        assert_eq!(rhs.stats().calls, (WARM + MEASURED) as u64);
        if exchange == Exchange::F64 {
            let counts = allocations_in_steady_state(|| {
                rhs.eval_at(1.5, &state, &[8.5], &mut out).expect("eval_at");
            });
            assert_eq!(counts, (0, 0), "RemoteRhs::eval_at");
        }
        rhs.close().expect("close");
    }
}
