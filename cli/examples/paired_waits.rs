//! Wait strategies compared in pairs: one server per strategy, all spawned up front, and in
//! every round each strategy gets one burst of calls, in a fresh random order — so that a
//! change of the machine's speed during the run hits every strategy alike. Prints, per
//! strategy, the median over rounds of its burst p50 (and p99), and its ratio to the first
//! strategy's p50 in the same round: the median ratio with its smallest and largest.
//!
//! ```sh
//! cargo run --release --example paired_waits -- --pin split            # client CPU 0, servers CPU 1
//! cargo run --release --example paired_waits -- --pin same             # everything on CPU 0
//! cargo run --release --example paired_waits -- --waits auto,hybrid,spin --rounds 40
//! ```
//!
//! `--pin free` leaves placement to the scheduler. The servers are `peer --role server
//! --handler echo` next to this example (after `cargo build --release`), 500 f64 each way.
//! Every server runs for the whole program: an idle `spin` server keeps a core busy while the
//! others are measured (the report stops idle servers; this program does not), so leave
//! `spin` out of `--waits` at `--pin same` and `--pin free`.

use std::process::Command;
use std::time::Instant;

use clap::Parser;
use peerpipe::{Error, Options, Peer, Result, Wait, peer::find_peer_binary};
use peerpipe_cli::report::Placement;
use peerpipe_cli::report::placement::Placer;
use peerpipe_cli::soak::seed_from_clock;

#[derive(Debug, Parser)]
struct Args {
    /// Wait strategies, the first the reference of the ratios.
    #[arg(long, value_delimiter = ',', default_value = "hybrid,auto,spin,block")]
    waits: Vec<Wait>,
    /// Placement: split (client and servers on two cores), same (one core) or free.
    #[arg(long, default_value = "split")]
    pin: Placement,
    /// Rounds.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Calls per burst.
    #[arg(long, default_value_t = 1000)]
    calls: usize,
    /// Elements per call.
    #[arg(long, default_value_t = 500)]
    n: usize,
}

fn main() {
    if let Err(e) = run(&Args::parse()) {
        eprintln!("paired_waits: {e}");
        std::process::exit(2);
    }
}

fn run(args: &Args) -> Result<()> {
    if args.waits.is_empty() || args.rounds == 0 || args.calls == 0 || args.n == 0 {
        return Err(Error::InvalidArgument {
            what: "arguments",
            reason: "--waits, --rounds, --calls and --n need at least one each".into(),
        });
    }
    // target/release/examples/paired_waits -> target/release/peer, else PEERPIPE_PEER or PATH.
    let beside = std::env::current_exe()?.parent().and_then(|d| d.parent()).map(|d| d.join("peer"));
    let exe = match beside.filter(|p| p.is_file()) {
        Some(exe) => exe,
        None => find_peer_binary(None)?,
    };
    let placer = Placer::new(args.pin)?;
    let mut peers = Vec::new();
    for &wait in &args.waits {
        let mut command = Command::new(&exe);
        command.args(["--role", "server", "--handler", "echo", "--wait", &wait.to_string()]);
        let options = Options { wait, ..Options::default() };
        peers.push(placer.spawn(|| Peer::spawn(command, options))?);
    }
    let x: Vec<f64> = (0..args.n).map(|i| i as f64).collect();
    let mut y = vec![0.0; args.n];
    let mut rng = seed_from_clock() | 1;
    // p50 and p99 per round and strategy, in nanoseconds.
    let mut p50s = vec![Vec::new(); peers.len()];
    let mut p99s = vec![Vec::new(); peers.len()];
    let mut times = Vec::with_capacity(args.calls);
    for _ in 0..args.rounds {
        let mut order: Vec<usize> = (0..peers.len()).collect();
        for i in (1..order.len()).rev() {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            order.swap(i, (rng % (i as u64 + 1)) as usize);
        }
        for &index in &order {
            times.clear();
            for _ in 0..args.calls {
                let started = Instant::now();
                peers[index].call_f64(&x, &mut y)?;
                times.push(started.elapsed().as_nanos() as u64);
            }
            times.sort_unstable();
            p50s[index].push(times[times.len() / 2]);
            p99s[index].push(times[times.len() * 99 / 100]);
        }
    }
    println!(
        "{} rounds x {} calls of {} f64, pin {}; ratio = p50 / {}'s p50 in the same round",
        args.rounds, args.calls, args.n, args.pin, args.waits[0]
    );
    println!("{:<14} {:>9} {:>9} {:>8} {:>16}", "wait", "p50 us", "p99 us", "ratio", "[min-max]");
    for (index, wait) in args.waits.iter().enumerate() {
        let mut ratios: Vec<f64> =
            p50s[index].iter().zip(&p50s[0]).map(|(&a, &b)| a as f64 / b as f64).collect();
        ratios.sort_by(f64::total_cmp);
        let median = |v: &[u64]| {
            let mut v = v.to_vec();
            v.sort_unstable();
            v[v.len() / 2] as f64 / 1e3
        };
        println!(
            "{:<14} {:>9.2} {:>9.2} {:>8.3} {:>16}",
            wait.to_string(),
            median(&p50s[index]),
            median(&p99s[index]),
            ratios[ratios.len() / 2],
            format!("[{:.3}-{:.3}]", ratios[0], ratios[ratios.len() - 1])
        );
    }
    for peer in peers {
        peer.close()?;
    }
    Ok(())
}
