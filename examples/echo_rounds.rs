//! The Rust side of paired latency measurements (`python/bench/paired.py`): one persistent
//! `Peer` that runs a round of N calls of 500 f64 whenever asked, so a benchmark in another
//! language can interleave its own rounds with these, A B A B, in the same minutes.
//!
//! ```sh
//! echo 300 | cargo run --release --example echo_rounds -- "target/release/peer --role server --handler echo"
//! ```
//!
//! Argument: the server command (run with `sh -c`; default: `peer --role server --handler
//! echo` beside this example). With a second argument `--parts`, each call is a PARTS call
//! instead: t (1 f64), the 500 f64 and 8 parameters to the server's function `rhs`, 500 f64
//! back (`examples/parts_cost --serve` serves it). Each line on stdin is a number of calls N (500 f64 each, with
//! the reply written into a warm buffer, auto wait, timed around each `call_f64` as a
//! Python caller would time `peer.call`); each answer is one line `p50_ns min_ns`. End of
//! input closes the peer.

use std::io::{BufRead, Write};
use std::time::Instant;

use peerpipe::parts::{Part, PartMut};
use peerpipe::{Options, Peer, Result};

fn main() {
    if let Err(e) = run() {
        eprintln!("echo_rounds: error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<()> {
    let command = match std::env::args().nth(1) {
        Some(command) => command,
        None => {
            let exe = std::env::current_exe()?;
            let peer = exe.parent().and_then(|d| d.parent()).map(|d| d.join("peer"));
            let peer = peer.map(|p| p.display().to_string()).unwrap_or_else(|| "peer".into());
            format!("{peer} --role server --handler echo")
        }
    };
    let parts = std::env::args().nth(2).as_deref() == Some("--parts");
    let mut peer = Peer::spawn_shell(&command, Options::default())?;
    let x: Vec<f64> = (0..500).map(|i| f64::from(i) * 0.5).collect();
    let (t, p) = ([0.25], [1.5; 8]);
    let mut out = vec![0.0; 500];
    let mut samples = Vec::new();
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let n: usize = line?.trim().parse().unwrap_or(0);
        samples.clear();
        for _ in 0..n {
            let started = Instant::now();
            if parts {
                let inputs = [Part::f64(&t), Part::f64(&x), Part::f64(&p)];
                peer.call_parts("rhs", &inputs, &mut [PartMut::f64(&mut out)])?;
            } else {
                peer.call_f64(&x, &mut out)?;
            }
            samples.push(started.elapsed().as_nanos() as u64);
        }
        samples.sort_unstable();
        let (p50, min) = match samples.as_slice() {
            [] => (0, 0),
            s => (s[s.len() / 2], s[0]),
        };
        let mut stdout = stdout.lock();
        writeln!(stdout, "{p50} {min}")?;
        stdout.flush()?;
    }
    peer.close()?;
    Ok(())
}
