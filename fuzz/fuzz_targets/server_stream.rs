//! Fuzzes the server loop: `peerpipe::server::serve` on a thread, over two pipes, fed the
//! input as its client's byte stream, which then closes.
//!
//! The first input byte picks the handler (`echo`, `echo-raw`, `lorenz96`: byte % 3) and the
//! server's `max_frame_bytes` (1 MiB, 4096 or 100: byte / 3 % 3); the rest is the stream.
//! `serve` must return and never panic; its output must be a sequence of valid frames
//! beginning with its HELLO and match, frame by frame, what the reference model in
//! `tests/stream_model/mod.rs` (shared with `tests/stream_fuzz.rs`) predicts from the pure
//! decoder: in particular a stream that is not a clean conversation ends with an ERROR.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/stream_model/mod.rs"]
mod stream_model;

use stream_model::{HANDLERS, check, options, run_server};

const LIMITS: [u64; 3] = [1 << 20, 4096, 100];

fuzz_target!(
    init: {
        // A Rust binary ignores SIGPIPE before main; libFuzzer's main does not. Without this a
        // server that stops reading kills the fuzzer when the writer thread hits EPIPE.
        // SAFETY: SIG_IGN installs no handler, so there is no signal-safety obligation, and
        // this runs once, before any thread of this target exists.
        unsafe {
            nix::sys::signal::signal(
                nix::sys::signal::Signal::SIGPIPE,
                nix::sys::signal::SigHandler::SigIgn,
            )
        }
        .expect("ignore SIGPIPE");
    },
    |data: &[u8]| {
        let Some((&selector, stream)) = data.split_first() else { return };
        let handler = HANDLERS[usize::from(selector) % HANDLERS.len()];
        let max = LIMITS[usize::from(selector) / HANDLERS.len() % LIMITS.len()];
        let run = run_server(handler, stream, &options(max));
        if let Err(why) = check(handler, stream, max, &run) {
            panic!("handler {handler}, max_frame_bytes {max}: {why}");
        }
    }
);
