//! Two models stepping together: a heat rod of `2 × --cells` cells (explicit Euler, the left
//! end held at 1, the right at 0), the left half in this process, the right half in a server
//! that is this program too (`--serve`, a [`Session`] loop). Each step both halves exchange
//! their edge cells — the client calls `exchange` with its last cell and gets the server's
//! first — and then both compute their step at the same time: the server replies before it
//! steps. At the end the client calls `state` with its half and gets the server's, and the
//! whole rod is checked bit for bit against the same rod stepped in one process.
//!
//! ```sh
//! cargo run --release --example heat_rod -- [--cells 100] [--steps 10000] [--placement free|same|split] [--wait auto]
//! ```
//!
//! Between blocks of steps (`--blocks`, 10) it times as many `ping` calls — the same exchange
//! with neither side computing — and as many steps of a copy of this half with the server idle,
//! so that a step, the bare round trip and the half alone are measured in the same machine
//! states. Printed, every figure a p50 over steps and each with what it is: the split step and
//! its exchange and compute parts on this side, this half computed alone, the server's half,
//! the bare round trip, what one process takes per step, whether the step stays within the
//! slower half's compute + 1.3 × the bare round trip, and the one-process step above which
//! splitting in two pays (2 × the exchange). One JSON line ends the output. `--placement same` pins both processes to CPU 0,
//! `split` this one to CPU 0 and the server to CPU 1, `free` (the default) leaves both to the
//! scheduler.

use std::process::Command;
use std::time::Instant;

use peerpipe::parts::{Part, PartMut};
use peerpipe::server::{Session, StdioOptions};
use peerpipe::{Options, Peer, Result, Wait};

/// The diffusion number: stable for explicit Euler below 0.5.
const R: f64 = 0.25;
const LEFT_END: f64 = 1.0;
const RIGHT_END: f64 = 0.0;

/// One explicit Euler step of the cells `u`, with `left` and `right` the cells beside them:
/// the same operations in the same order for a cell wherever the rod is split.
fn step(u: &[f64], left: f64, right: f64, out: &mut [f64]) {
    let n = u.len();
    for i in 0..n {
        let l = if i == 0 { left } else { u[i - 1] };
        let r = if i + 1 == n { right } else { u[i + 1] };
        out[i] = u[i] + R * (l - 2.0 * u[i] + r);
    }
}

/// The starting temperatures of cells `first..first + n`.
fn initial(first: usize, n: usize) -> Vec<f64> {
    (first..first + n).map(|i| (i as f64 * 0.37).sin().abs()).collect()
}

struct Args {
    cells: usize,
    steps: usize,
    blocks: usize,
    placement: String,
    wait: Wait,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args = Args {
        cells: 100,
        steps: 10_000,
        blocks: 10,
        placement: "free".into(),
        wait: Wait::auto(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--cells" => args.cells = number(value()?)?,
            "--steps" => args.steps = number(value()?)?,
            "--blocks" => args.blocks = number(value()?)?,
            "--placement" => args.placement = value()?,
            "--wait" => args.wait = value()?.parse().map_err(|e| format!("--wait: {e}"))?,
            "-h" | "--help" => {
                return Err("usage: heat_rod [--cells N] [--steps N] [--blocks N] \
                            [--placement free|same|split] [--wait WAIT]"
                    .into());
            }
            other => return Err(format!("unknown option {other:?} (see --help)")),
        }
    }
    if args.cells < 2 || args.steps == 0 || args.blocks == 0 || args.steps < args.blocks {
        return Err("--cells takes at least 2, --steps at least 1 and at least --blocks".into());
    }
    if !["free", "same", "split"].contains(&args.placement.as_str()) {
        return Err(format!("--placement takes free, same or split, not {:?}", args.placement));
    }
    Ok(args)
}

/// The right half: a session loop that replies first and steps after.
fn serve(cells: usize, wait: Wait) -> Result<()> {
    let options = StdioOptions { wait, ..StdioOptions::default() };
    let mut session = Session::stdio("heat-rod-right", &["exchange", "ping", "state"], &options)?;
    let (mut u, mut next) = (initial(cells, cells), vec![0.0; cells]);
    let mut computes: Vec<u64> = Vec::new();
    while let Some(call) = session.recv()? {
        match call.function {
            "exchange" => {
                let left = match call.f64(0) {
                    Ok(&[left]) => left,
                    Ok(other) => {
                        let message = format!("exchange: expected 1 f64, found {}", other.len());
                        session.reject(&message)?;
                        continue;
                    }
                    Err(message) => {
                        session.reject(&message)?;
                        continue;
                    }
                };
                session.reply(&[Part::f64(&u[..1])])?;
                let started = Instant::now();
                step(&u, left, RIGHT_END, &mut next);
                std::mem::swap(&mut u, &mut next);
                computes.push(started.elapsed().as_nanos() as u64);
            }
            "ping" => session.reply(&[Part::f64(&u[..1])])?,
            // "state": the client's half comes with it; ours and what our steps took go back.
            _ => {
                let steps = computes.len() as i64;
                let compute_p50 = if computes.is_empty() { 0 } else { p50(&mut computes) as i64 };
                session.reply(&[Part::f64(&u), Part::i64(&[compute_p50, steps])])?;
            }
        }
    }
    Ok(())
}

fn pin_self(cpu: usize) -> Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(peerpipe::Error::Sys)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)?;
    Ok(())
}

fn p50(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn run(args: &Args) -> Result<bool> {
    let exe = std::env::current_exe()?;
    let mut command = match args.placement.as_str() {
        "split" => {
            pin_self(0)?;
            let mut c = Command::new("taskset");
            c.args(["-c", "1"]).arg(&exe);
            c
        }
        "same" => {
            pin_self(0)?;
            Command::new(&exe)
        }
        _ => Command::new(&exe),
    };
    command.args(["--serve", &args.cells.to_string(), &args.wait.to_string()]);
    let mut peer = Peer::spawn(command, Options { wait: args.wait, ..Options::default() })?;
    let n = args.cells;
    let (mut u, mut next, mut theirs) = (initial(0, n), vec![0.0; n], [0.0]);
    // This half stepped alone between blocks, the server idle; the rod itself is not touched.
    let (mut copy, mut copy_next, mut alone_half) = (u.clone(), vec![0.0; n], Vec::new());
    let per_block = args.steps / args.blocks;
    let (mut steps, mut exchanges, mut computes) = (Vec::new(), Vec::new(), Vec::new());
    let mut pings = Vec::new();
    let mut done = 0;
    for block in 0..args.blocks {
        let count = if block + 1 == args.blocks { args.steps - done } else { per_block };
        for _ in 0..count {
            let started = Instant::now();
            peer.call_parts(
                "exchange",
                &[Part::f64(&u[n - 1..])],
                &mut [PartMut::f64(&mut theirs)],
            )?;
            let exchanged = Instant::now();
            step(&u, LEFT_END, theirs[0], &mut next);
            std::mem::swap(&mut u, &mut next);
            let stepped = Instant::now();
            steps.push((stepped - started).as_nanos() as u64);
            exchanges.push((exchanged - started).as_nanos() as u64);
            computes.push((stepped - exchanged).as_nanos() as u64);
        }
        done += count;
        for _ in 0..count {
            let mut edge = [0.0];
            let started = Instant::now();
            peer.call_parts("ping", &[Part::f64(&u[n - 1..])], &mut [PartMut::f64(&mut edge)])?;
            pings.push(started.elapsed().as_nanos() as u64);
        }
        for _ in 0..count {
            let started = Instant::now();
            step(&copy, LEFT_END, theirs[0], &mut copy_next);
            std::mem::swap(&mut copy, &mut copy_next);
            alone_half.push(started.elapsed().as_nanos() as u64);
        }
    }
    let (mut right, mut server) = (vec![0.0; n], [0i64; 2]);
    peer.call_parts(
        "state",
        &[Part::f64(&u)],
        &mut [PartMut::f64(&mut right), PartMut::i64(&mut server)],
    )?;
    peer.close()?;

    // The same rod in one process.
    let (mut whole, mut scratch) = (initial(0, 2 * n), vec![0.0; 2 * n]);
    let mut alone = Vec::with_capacity(args.steps);
    for _ in 0..args.steps {
        let started = Instant::now();
        step(&whole, LEFT_END, RIGHT_END, &mut scratch);
        std::mem::swap(&mut whole, &mut scratch);
        alone.push(started.elapsed().as_nanos() as u64);
    }
    let identical =
        whole.iter().zip(u.iter().chain(&right)).all(|(a, b)| a.to_bits() == b.to_bits());
    if server[1] != args.steps as i64 {
        eprintln!("heat_rod: the server stepped {} times, not {}", server[1], args.steps);
        return Ok(false);
    }

    let (step_p50, exchange_p50, compute_p50) =
        (p50(&mut steps), p50(&mut exchanges), p50(&mut computes));
    let (ping_p50, alone_p50, half_p50) = (p50(&mut pings), p50(&mut alone), p50(&mut alone_half));
    let server_compute = server[0] as u64;
    let bound = compute_p50.max(server_compute) as f64 + 1.3 * ping_p50 as f64;
    let within = (step_p50 as f64) <= bound;
    // A split step costs the exchange and half the compute, one process the whole compute:
    // with the halves computing at once, splitting pays once one process's step exceeds 2 x
    // the exchange.
    let (split_pays_above, split_pays) = (2 * exchange_p50, step_p50 < alone_p50);
    let us = |ns: u64| format!("{:7.2} us", ns as f64 / 1000.0);
    let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
    println!(
        "heat rod, 2 x {n} cells, {} steps ({}, wait {}), p50s over steps: \
         bit-identical to one process: {identical}",
        args.steps, args.placement, args.wait
    );
    println!("  split step            {}  = exchange + this half's compute:", us(step_p50));
    println!(
        "    exchange            {}  the call: send our edge, get theirs (the server replies \
         first, then steps)",
        us(exchange_p50)
    );
    println!(
        "    compute here        {}  this half's step, right after the exchange, while the \
         server steps its half",
        us(compute_p50)
    );
    println!(
        "  this half alone       {}  the same step with the server idle: beside the server's \
         step it took {:.1}x as long",
        us(half_p50),
        ratio(compute_p50, half_p50)
    );
    println!(
        "  server's half         {}  its step, hidden while this side computes too",
        us(server_compute)
    );
    println!("  bare round trip       {}  the same call, neither side computing", us(ping_p50));
    println!(
        "  slower half + 1.3 x bare round trip {:.2} us: the split step is {}",
        bound / 1000.0,
        if within { "within it" } else { "over it" }
    );
    println!(
        "  one process           {}  the whole rod's step (half the cells alone took {:.0} % of it)",
        us(alone_p50),
        100.0 * ratio(half_p50, alone_p50)
    );
    println!(
        "  splitting pays above  {}  of one process's step: 2 x the exchange, if each half \
         computes as fast beside the other as alone",
        us(split_pays_above)
    );
    println!(
        "  here                  {}  {}",
        us(alone_p50),
        if split_pays { "the split is faster" } else { "one process is faster" }
    );
    println!(
        "{{\"cells\":{n},\"steps\":{},\"placement\":\"{}\",\"wait\":\"{}\",\"identical\":{identical},\
         \"step_p50_ns\":{step_p50},\"exchange_p50_ns\":{exchange_p50},\"compute_p50_ns\":{compute_p50},\
         \"compute_alone_p50_ns\":{half_p50},\"server_compute_p50_ns\":{server_compute},\
         \"ping_p50_ns\":{ping_p50},\"one_process_p50_ns\":{alone_p50},\"within\":{within},\
         \"split_pays_above_ns\":{split_pays_above},\"split_pays\":{split_pays}}}",
        args.steps, args.placement, args.wait
    );
    Ok(identical)
}

fn main() {
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some("--serve") {
        let cells = argv.next().and_then(|c| c.parse().ok()).unwrap_or(100);
        let wait = argv.next().map_or(Ok(Wait::default()), |w| w.parse());
        if let Err(e) = wait.and_then(|wait| serve(cells, wait)) {
            eprintln!("heat_rod --serve: error: {e}");
            std::process::exit(2);
        }
        return;
    }
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("heat_rod: {e}");
            std::process::exit(2);
        }
    };
    match run(&args) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("heat_rod: error: {e}");
            std::process::exit(1);
        }
    }
}
