//! What several parts cost beside one array, paired: over one connection, rounds alternate a
//! burst of DATA calls of 509 f64 each way with a burst of PARTS calls sending t (1 f64), a
//! state (500 f64) and parameters (8 f64) to a function that answers 500 f64 — the same
//! bytes out, 72 fewer back, plus the part table both ways. The two calls alternate in runs of
//! `--burst` calls (1: call by call), so that both meet the same machine state; with longer
//! runs each request mostly follows one of its own kind, as in a program that repeats a call.
//!
//! ```sh
//! cargo run --release --example parts_cost -- [--rounds 40] [--calls 2000] [--burst 1] [--placement free|same|split] [--wait auto]
//! ```
//!
//! The server is this program (`--serve WAIT`, waiting as the client does): DATA is answered
//! with a copy of the request's values, and the function `rhs` with a copy of its part 1 (the
//! state): the same work on both sides, as a model writing its answer into a buffer. What the
//! server does for the protocol (checking the part table, writing the reply's) is in its time
//! (`server_ns`) and so in the round trip, not in the overhead (round trip − server time): the
//! round trip is the figure to judge. A round is `--calls` pairs, after untimed warm-up calls;
//! its figures are the p50 of each kind. Printed: per-round lines, then the median and range over rounds of PARTS − DATA, for the round trip and for the
//! overhead (round trip − server time), and as a ratio. One JSON line ends the output.
//!
//! `--placement same` pins both processes to CPU 0, `split` the client to CPU 0 and the server
//! to CPU 1 (with `taskset`), `free` (the default) leaves both to the scheduler.

use std::process::Command;

use peerpipe::parts::{Part, PartMut, PartsOut};
use peerpipe::server::{Functions, Handler, Request, Response, StdioOptions, serve_stdio};
use peerpipe::{Options, Peer, Result, Wait};

const STATE: usize = 500;
const PARAMS: usize = 8;
const WARMUP: usize = 200;

/// DATA: answers a copy of the request's values; PARTS: `rhs` answers a copy of part 1. The
/// same work on both sides — a model writing its answer into a buffer of its own — so that
/// what differs is what the protocol does.
struct Server {
    functions: Functions,
    copy: Vec<f64>,
}

impl Handler for Server {
    fn name(&self) -> &str {
        "parts-cost"
    }
    fn functions(&self) -> Vec<String> {
        self.functions.functions()
    }
    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> std::result::Result<Response<'a>, String> {
        if !request.function.is_empty() {
            return self.functions.handle(request, out);
        }
        let values = request.array()?.f64_view().ok_or("expected f64 values")?;
        self.copy.clear();
        self.copy.extend_from_slice(values);
        Ok(Response::F64(&self.copy))
    }
}

/// The server, waiting as the client does (`--serve WAIT`, given by the client).
fn serve(wait: Wait) -> Result<()> {
    let functions = Functions::new("parts-cost")
        .with("rhs", |call, reply| reply.push(Part::f64(call.f64(1)?)))?;
    let options = StdioOptions { wait, ..StdioOptions::default() };
    serve_stdio(&mut Server { functions, copy: Vec::new() }, &options)?;
    Ok(())
}

struct Args {
    rounds: usize,
    calls: usize,
    burst: usize,
    placement: String,
    wait: Wait,
}

fn parse_args() -> std::result::Result<Args, String> {
    let mut args =
        Args { rounds: 40, calls: 2000, burst: 1, placement: "free".into(), wait: Wait::auto() };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--rounds" => args.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--calls" => args.calls = value()?.parse().map_err(|e| format!("--calls: {e}"))?,
            "--burst" => args.burst = value()?.parse().map_err(|e| format!("--burst: {e}"))?,
            "--placement" => args.placement = value()?,
            "--wait" => args.wait = value()?.parse().map_err(|e| format!("--wait: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if args.rounds == 0 || args.calls == 0 || args.burst == 0 {
        return Err("--rounds, --calls and --burst take a number of at least 1".into());
    }
    if !["free", "same", "split"].contains(&args.placement.as_str()) {
        return Err(format!(
            "--placement: expected free, same or split, found {:?}",
            args.placement
        ));
    }
    Ok(args)
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        let wait = std::env::args().nth(2).map_or(Ok(Wait::default()), |w| w.parse());
        if let Err(e) = wait.and_then(serve) {
            eprintln!("parts_cost --serve: error: {e}");
            std::process::exit(2);
        }
        return;
    }
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("parts_cost: {e}");
        std::process::exit(2);
    });
    if let Err(e) = run(&args) {
        eprintln!("parts_cost: error: {e}");
        std::process::exit(2);
    }
}

fn pin_self(cpu: usize) -> Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(peerpipe::Error::Sys)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)?;
    Ok(())
}

fn run(args: &Args) -> Result<()> {
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
    command.args(["--serve", &args.wait.to_string()]);
    let options = Options { wait: args.wait, ..Options::default() };
    let mut peer = Peer::spawn(command, options)?;
    let t = [0.25];
    let y: Vec<f64> = (0..STATE).map(|i| i as f64 * 0.001 - 0.2).collect();
    let p: Vec<f64> = (0..PARAMS).map(|i| i as f64 + 0.5).collect();
    let data: Vec<f64> = t.iter().chain(&y).chain(&p).copied().collect();
    let (mut data_out, mut parts_out) = (vec![0.0; data.len()], vec![0.0; STATE]);
    let mut data_call = |peer: &mut Peer| peer.call_f64(&data, &mut data_out);
    let parts_call = |peer: &mut Peer, out: &mut [f64]| {
        let inputs = [Part::f64(&t), Part::f64(&y), Part::f64(&p)];
        peer.call_parts("rhs", &inputs, &mut [PartMut::f64(out)])
    };
    for _ in 0..WARMUP {
        data_call(&mut peer)?;
        parts_call(&mut peer, &mut parts_out)?;
    }
    let (mut rt_diff, mut ov_diff, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    println!("round  data rt  parts rt  data ov  parts ov   (p50 ns of {} calls each)", args.calls);
    let (mut d_rts, mut d_ovs) = (vec![0u64; args.calls], vec![0u64; args.calls]);
    let (mut p_rts, mut p_ovs) = (vec![0u64; args.calls], vec![0u64; args.calls]);
    for round in 0..args.rounds {
        // DATA and PARTS in turn, `--burst` calls of each (which goes first alternates), so
        // that both sides of a pair meet the same machine state.
        for block in 0..args.calls.div_ceil(args.burst) {
            let range = block * args.burst..((block + 1) * args.burst).min(args.calls);
            for parts in [(round + block) % 2 == 1, (round + block) % 2 == 0] {
                for i in range.clone() {
                    if parts {
                        let t = parts_call(&mut peer, &mut parts_out)?;
                        p_rts[i] = t.round_trip_ns;
                        p_ovs[i] = t.round_trip_ns.saturating_sub(t.server_ns);
                    } else {
                        let t = data_call(&mut peer)?;
                        d_rts[i] = t.round_trip_ns;
                        d_ovs[i] = t.round_trip_ns.saturating_sub(t.server_ns);
                    }
                }
            }
        }
        let (d_rt, d_ov) = (median(&mut d_rts), median(&mut d_ovs));
        let (p_rt, p_ov) = (median(&mut p_rts), median(&mut p_ovs));
        println!("{round:5}  {d_rt:7}  {p_rt:8}  {d_ov:7}  {p_ov:8}");
        rt_diff.push(p_rt as i64 - d_rt as i64);
        ov_diff.push(p_ov as i64 - d_ov as i64);
        ratios.push(p_rt as f64 / d_rt as f64);
    }
    assert_eq!(parts_out, y, "the reply is the state, bit for bit");
    peer.close()?;
    let summary = |v: &mut Vec<i64>| {
        v.sort_unstable();
        (v[v.len() / 2], v[0], v[v.len() - 1])
    };
    let (rt_med, rt_lo, rt_hi) = summary(&mut rt_diff);
    let (ov_med, ov_lo, ov_hi) = summary(&mut ov_diff);
    ratios.sort_by(f64::total_cmp);
    let ratio = ratios[ratios.len() / 2];
    println!(
        "parts - data, median over {} rounds [range]: round trip {rt_med} ns [{rt_lo}..{rt_hi}], \
         overhead {ov_med} ns [{ov_lo}..{ov_hi}]; round-trip ratio {ratio:.3} [{:.3}..{:.3}] \
         ({}, wait {}, bursts of {})",
        args.rounds,
        ratios[0],
        ratios[ratios.len() - 1],
        args.placement,
        args.wait,
        args.burst
    );
    println!(
        "{{\"placement\":\"{}\",\"wait\":\"{}\",\"rounds\":{},\"calls\":{},\"burst\":{},\"rt_diff_ns\":{rt_med},\
         \"rt_diff_lo\":{rt_lo},\"rt_diff_hi\":{rt_hi},\"overhead_diff_ns\":{ov_med},\
         \"overhead_diff_lo\":{ov_lo},\"overhead_diff_hi\":{ov_hi},\"rt_ratio\":{ratio:.4}}}",
        args.placement, args.wait, args.rounds, args.calls, args.burst
    );
    Ok(())
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}
