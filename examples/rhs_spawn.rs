//! A `RemoteRhs` whose server is any command — a Python model served by `peerpipe.serve`, say —
//! checked bit for bit against the library's own Lorenz-96 right-hand side.
//!
//! ```sh
//! cargo run --example rhs_spawn -- "python3 python/tests/servers/lorenz96_server.py" [steps] [n]
//! ```
//!
//! Integrates Lorenz-96 (forward Euler, dt = 0.01) twice from the same nudged state, once
//! with the derivative from the server, once with `peerpipe::lorenz96::rhs`, and exits 0 only
//! when both trajectories are identical bit for bit. The last line printed is one JSON object.

use peerpipe::rhs::RemoteRhs;
use peerpipe::{Options, Peer, Result, lorenz96};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(command) = args.next() else {
        eprintln!("usage: rhs_spawn COMMAND [steps] [n]");
        std::process::exit(2);
    };
    let steps = args.next().and_then(|s| s.parse().ok()).unwrap_or(200usize);
    let n = args.next().and_then(|s| s.parse().ok()).unwrap_or(500usize);
    match run(&command, steps, n) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("rhs_spawn: error: {e}");
            std::process::exit(2);
        }
    }
}

fn run(command: &str, steps: usize, n: usize) -> Result<bool> {
    let mut rhs = RemoteRhs::new(Peer::spawn_shell(command, Options::default())?);
    let handler = rhs.peer().server_hello().handler.clone().unwrap_or_default();
    let mut start = vec![lorenz96::FORCING; n];
    start[0] += 0.01;
    let (mut remote, mut local) = (start.clone(), start);
    let (mut d_remote, mut d_local) = (vec![0.0; n], vec![0.0; n]);
    let mut first_difference = None;
    for step in 0..steps {
        rhs.eval(&remote, &mut d_remote)?;
        lorenz96::rhs(&local, lorenz96::FORCING, &mut d_local)?;
        for i in 0..n {
            remote[i] += 0.01 * d_remote[i];
            local[i] += 0.01 * d_local[i];
        }
        let same = remote.iter().zip(&local).all(|(a, b)| a.to_bits() == b.to_bits());
        if !same && first_difference.is_none() {
            first_difference = Some(step);
        }
    }
    let stats = rhs.stats();
    let identical = first_difference.is_none();
    println!(
        "{{\"handler\": \"{handler}\", \"steps\": {steps}, \"n\": {n}, \"bit_identical\": {identical}, \
         \"first_difference_step\": {}, \"calls\": {}, \"overhead_p50_ns\": {}, \"round_trip_p50_ns\": {}}}",
        first_difference.map_or("null".to_owned(), |s| s.to_string()),
        stats.calls,
        stats.overhead_quantile_ns(0.5),
        stats.round_trip_quantile_ns(0.5),
    );
    rhs.close()?;
    Ok(identical)
}
