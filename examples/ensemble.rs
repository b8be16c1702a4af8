//! An ensemble: eight Lorenz-96 members, each with its own forcing and its own server, called
//! together at every step with one [`Fanout::call_each`] — and checked bit for bit against
//! eight solves in this process.
//!
//! ```sh
//! cargo run --example ensemble -- target/debug/peer                        # eight local servers
//! cargo run --example ensemble -- target/debug/peer "srun -w n{node} -N1 -n1"  # over a cluster
//! ```
//!
//! The second argument, when given, is put before each server's command line, with `{member}`
//! replaced by the member's index and `{node}` by the index modulo 2: a launcher such as
//! `srun`. The servers speak tcp (`peer --role server --handler lorenz96 --forcing F
//! --transport tcp`), so that the same program works with and without a launcher. Every member
//! takes 200 forward-Euler steps (dt = 0.01) of n = 500 from the same nudged state; forcing
//! 8.0, 8.1, …, 8.7. Exits 0 only when all eight trajectories match their local solves bit for
//! bit; the last line printed is one JSON object.

use peerpipe::codec::{Values, ValuesMut};
use peerpipe::fanout::Fanout;
use peerpipe::{Options, Result, TransportKind, lorenz96};

const MEMBERS: usize = 8;
const STEPS: usize = 200;
const N: usize = 500;
const DT: f64 = 0.01;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(peer) = args.next() else {
        eprintln!("usage: ensemble PEER [LAUNCHER-PREFIX]");
        std::process::exit(2);
    };
    let prefix = args.next().unwrap_or_default();
    match run(&peer, &prefix) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("ensemble: error: {e}");
            std::process::exit(2);
        }
    }
}

/// The forcing of member `m`: 8.0, 8.1, …
fn forcing(m: usize) -> f64 {
    lorenz96::FORCING + 0.1 * m as f64
}

fn run(peer: &str, prefix: &str) -> Result<bool> {
    let lines: Vec<String> = (0..MEMBERS)
        .map(|m| {
            let launcher = prefix.replace("{member}", &m.to_string());
            let launcher = launcher.replace("{node}", &(m % 2).to_string());
            format!(
                "{launcher} {peer} --role server --handler lorenz96 --forcing {} --transport tcp",
                forcing(m)
            )
            .trim_start()
            .to_owned()
        })
        .collect();
    let options = Options { transport: TransportKind::Tcp, ..Options::default() };
    let mut fanout = Fanout::spawn_shell(&lines, options)?;
    let mut start = vec![lorenz96::FORCING; N];
    start[0] += 0.01;
    let mut remote = vec![start.clone(); MEMBERS];
    let mut local = vec![start; MEMBERS];
    let mut d_remote = vec![vec![0.0; N]; MEMBERS];
    let mut d_local = vec![0.0; N];
    let mut first_difference = None;
    let mut gather_ns = Vec::with_capacity(STEPS);
    for step in 0..STEPS {
        let states: Vec<Values<'_>> = remote.iter().map(|x| Values::F64(x)).collect();
        let mut outs: Vec<ValuesMut<'_>> = d_remote.iter_mut().map(|d| ValuesMut::F64(d)).collect();
        let gathered = fanout.call_each(&states, &mut outs)?;
        gather_ns.push(gathered.elapsed_ns);
        if let Err(failed) = gathered.into_result() {
            eprintln!("ensemble: {failed}");
            let _ = fanout.close();
            return Ok(false);
        }
        for m in 0..MEMBERS {
            lorenz96::rhs(&local[m], forcing(m), &mut d_local)?;
            for i in 0..N {
                remote[m][i] += DT * d_remote[m][i];
                local[m][i] += DT * d_local[i];
            }
            let same = remote[m].iter().zip(&local[m]).all(|(a, b)| a.to_bits() == b.to_bits());
            if !same && first_difference.is_none() {
                first_difference = Some((m, step));
            }
        }
    }
    fanout.close().map_err(|failed| failed.error)?;
    gather_ns.sort_unstable();
    let p50 = gather_ns[gather_ns.len() / 2];
    let identical = first_difference.is_none();
    match first_difference {
        None => println!("all {MEMBERS} members match their local solves bit for bit"),
        Some((m, step)) => println!("member {m} first differs at step {step}"),
    }
    println!(
        "{{\"members\":{MEMBERS},\"steps\":{STEPS},\"n\":{N},\"identical\":{identical},\
         \"gather_p50_ns\":{p50}}}"
    );
    Ok(identical)
}
