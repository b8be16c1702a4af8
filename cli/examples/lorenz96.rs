//! Lorenz-96 integrated with classic RK4 twice: once with the derivative computed in this
//! process, once with it computed by a server process over pipes — and the two trajectories
//! compared bit for bit.
//!
//! ```sh
//! cargo run --release --example lorenz96                       # n = 500, 2000 steps, auto wait
//! cargo run --release --example lorenz96 -- --dtype f64-as-f32 # narrowed: reports the deviation
//! cargo run --release --example lorenz96 -- --transport shm-ring # over shared memory
//! ```
//!
//! The server is `peer --role server --handler lorenz96` when the `peer` binary sits next to
//! this example's directory (after `cargo build --release`), or `--peer PATH`; otherwise this
//! example serves itself, running the library's same `lorenz96` handler (it accepts the server
//! flags of `peer`). The last line printed is one JSON object.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use peerpipe::rhs::{Exchange, RemoteRhs};
use peerpipe::server::{self, ServeOptions};
use peerpipe::units::format_nanos;
use peerpipe::{Error, Options, Result, TransportKind, Wait, handlers, lorenz96};
use peerpipe_cli::baseline::RawEcho;
use peerpipe_cli::paired_rhs::PairedRhs;
use peerpipe_cli::report::Placement;
use peerpipe_cli::report::placement::{Placer, default_placement};

#[derive(Debug, Parser)]
struct Args {
    /// State size.
    #[arg(long, default_value_t = 500)]
    n: usize,
    /// RK4 steps.
    #[arg(long, default_value_t = 2000)]
    steps: usize,
    /// Step size.
    #[arg(long, default_value_t = 0.01)]
    dt: f64,
    /// Wait strategy of both processes: auto, block, spin, hybrid or hybrid:DUR.
    #[arg(long, default_value = "auto", value_parser = parse_wait)]
    wait: Wait,
    /// Placement of this process and the servers: free, same or split [default: split on two
    /// cores or more, as `peer` does: with free, a loaded machine can leave the server waiting
    /// for a core at every call].
    #[arg(long, value_parser = parse_pin)]
    pin: Option<Placement>,
    /// Transport of the exchange (and of the raw floor): pipe, shm-sem or shm-ring.
    #[arg(long, default_value = "pipe", value_parser = parse_transport)]
    transport: TransportKind,
    /// f64 (bit-exact) or f64-as-f32 (narrowed on the wire; the deviation is reported).
    #[arg(long, default_value = "f64")]
    dtype: String,
    /// The `peer` binary to use as the server.
    #[arg(long)]
    peer: Option<PathBuf>,
    /// Steps per segment: after each, a burst of the raw floor is measured, and the overhead
    /// ratio is the median over segments of (segment overhead p50 / floor p50).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    floor_every: u64,
    /// Server mode (used when this example serves itself): same flags as `peer`.
    #[arg(long, hide = true)]
    role: Option<String>,
    #[arg(long, hide = true)]
    handler: Option<String>,
    #[arg(long, hide = true)]
    raw_echo: Option<usize>,
    #[arg(long, hide = true)]
    max_frame_bytes: Option<u64>,
}

/// Right-hand-side evaluations per RK4 step.
const CALLS_PER_STEP: usize = 4;
/// Timed round trips per floor burst.
const FLOOR_BURST: usize = 200;

fn parse_wait(text: &str) -> std::result::Result<Wait, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn parse_pin(text: &str) -> std::result::Result<Placement, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn parse_transport(text: &str) -> std::result::Result<TransportKind, String> {
    text.parse().map_err(|e: Error| e.to_string())
}

fn main() {
    let args = Args::parse();
    let result = if args.role.as_deref() == Some("server") { serve(&args) } else { run(&args) };
    if let Err(e) = result {
        eprintln!("lorenz96: error: {e}");
        std::process::exit(2);
    }
}

/// This example as a server: the library's own handlers, exactly as `peer --role server`.
fn serve(args: &Args) -> Result<()> {
    let mut transport = server::stdio_transport_of(args.transport, args.wait)?;
    if let Some(bytes) = args.raw_echo {
        peerpipe_cli::baseline::serve_raw_echo(&mut transport, bytes)?;
        return Ok(());
    }
    let name = args.handler.as_deref().unwrap_or("lorenz96");
    let mut handler = handlers::by_name(name).ok_or(Error::InvalidArgument {
        what: "handler",
        reason: format!("unknown handler {name:?}"),
    })?;
    let options = ServeOptions {
        max_frame_bytes: args.max_frame_bytes.unwrap_or(ServeOptions::default().max_frame_bytes),
        ..ServeOptions::default()
    };
    server::serve(&mut transport, &mut handler, &options)?;
    Ok(())
}

/// The `peer` binary beside this example's directory, or this example itself.
fn server_exe(args: &Args) -> Result<(PathBuf, &'static str)> {
    if let Some(path) = &args.peer {
        return Ok((path.clone(), "peer"));
    }
    let me = std::env::current_exe()?;
    let beside = me.parent().and_then(|examples| examples.parent()).map(|dir| dir.join("peer"));
    match beside {
        Some(peer) if peer.is_file() => Ok((peer, "peer")),
        _ => Ok((me, "this example (same lorenz96 handler)")),
    }
}

/// One RK4 step of `x` in place, with `f(x, dxdt)` the derivative; `k` holds 4 stage buffers and
/// `tmp` the stage state.
fn rk4_step(
    x: &mut [f64],
    dt: f64,
    k: &mut [Vec<f64>; 4],
    tmp: &mut [f64],
    f: &mut impl FnMut(&[f64], &mut [f64]) -> Result<()>,
) -> Result<()> {
    let [k1, k2, k3, k4] = k;
    f(x, k1)?;
    for i in 0..x.len() {
        tmp[i] = x[i] + 0.5 * dt * k1[i];
    }
    f(tmp, k2)?;
    for i in 0..x.len() {
        tmp[i] = x[i] + 0.5 * dt * k2[i];
    }
    f(tmp, k3)?;
    for i in 0..x.len() {
        tmp[i] = x[i] + dt * k3[i];
    }
    f(tmp, k4)?;
    for i in 0..x.len() {
        x[i] += dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
    Ok(())
}

/// Integrates from the standard initial state (F everywhere, the first element nudged), and
/// returns the trajectory (every step's state, concatenated) and the seconds it took.
fn integrate(
    args: &Args,
    mut f: impl FnMut(&[f64], &mut [f64]) -> Result<()>,
) -> Result<(Vec<f64>, f64)> {
    let n = args.n;
    let mut x = vec![lorenz96::FORCING; n];
    x[0] += 0.01;
    let mut k = [vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]];
    let mut tmp = vec![0.0; n];
    let mut trajectory = Vec::with_capacity(n * args.steps);
    let started = Instant::now();
    for _ in 0..args.steps {
        rk4_step(&mut x, args.dt, &mut k, &mut tmp, &mut f)?;
        trajectory.extend_from_slice(&x);
    }
    Ok((trajectory, started.elapsed().as_secs_f64()))
}

fn run(args: &Args) -> Result<()> {
    if args.n < lorenz96::MIN_LEN || args.steps == 0 {
        return Err(Error::InvalidArgument {
            what: "arguments",
            reason: format!("need --n >= {} and --steps >= 1", lorenz96::MIN_LEN),
        });
    }
    let (exchange, handler) = match args.dtype.as_str() {
        "f64" => (Exchange::F64, "lorenz96"),
        "f64-as-f32" => (Exchange::F64AsF32, "lorenz96-f32"),
        other => {
            return Err(Error::InvalidArgument {
                what: "dtype",
                reason: format!("expected f64 or f64-as-f32, found {other:?}"),
            });
        }
    };
    let (exe, server_name) = server_exe(args)?;
    let options = Options { wait: args.wait, transport: args.transport, ..Options::default() };

    let placer = Placer::new(args.pin.unwrap_or_else(default_placement))?;

    // Local: the derivative in this process (on the CPU the remote run will use).
    let (local, local_s) = integrate(args, |x, d| lorenz96::rhs(x, lorenz96::FORCING, d))?;

    // The floor: the same bytes moved by plain read/write with the same wait, measured in a
    // burst after every segment of steps, so that each segment's overhead is judged against
    // what moving its bytes cost at the same moment.
    let bytes = match exchange {
        Exchange::F64 => args.n * 8,
        Exchange::F64AsF32 => args.n * 4,
    };
    let echo = placer.spawn(|| {
        RawEcho::spawn(
            &exe,
            bytes,
            args.wait,
            args.transport,
            options.pipe_capacity,
            options.timeout,
        )
    })?;

    // Remote: the same formula in the server, one round trip per RK4 stage.
    let mut rhs = PairedRhs::new(
        placer
            .spawn(|| RemoteRhs::spawn_server(&exe, handler, options.clone()))?
            .with_exchange(exchange),
    );
    rhs.pair_with_floor(echo, CALLS_PER_STEP * args.floor_every as usize, FLOOR_BURST)?;
    let (remote, remote_s) = integrate(args, |x, d| rhs.eval(x, d).map(drop))?;
    let (stats, floor) = (rhs.stats().clone(), rhs.floor().clone());
    rhs.close()?;
    // The floor bursts ran inside the remote integration's wall time: take them out.
    let remote_s = remote_s - floor.floor_wall_ns as f64 * 1e-9;
    let floor_p50 = floor.floor_p50_ns().unwrap_or(0);
    let ratio = floor.overhead_ratio();

    let max_abs_diff =
        local.iter().zip(&remote).map(|(a, b)| (a - b).abs()).fold(0.0f64, |m, d| m.max(d));
    let identical = local.iter().zip(&remote).all(|(a, b)| a.to_bits() == b.to_bits());
    let callbacks = stats.calls;
    let overhead_ns = (remote_s - local_s) / callbacks as f64 * 1e9;
    let p50 = stats.round_trip_quantile_ns(0.5);
    let p99 = stats.round_trip_quantile_ns(0.99);
    let server_mean = stats.server_ns as f64 / callbacks as f64;
    let (overhead_p50, overhead_p99) =
        (stats.overhead_quantile_ns(0.5), stats.overhead_quantile_ns(0.99));

    println!(
        "Lorenz-96, n = {}, F = {}, RK4 dt = {}, {} steps",
        args.n,
        lorenz96::FORCING,
        args.dt,
        args.steps
    );
    println!(
        "server: {} ({}), transport {}, wait {}, pin {}, exchange {}",
        exe.display(),
        server_name,
        args.transport,
        args.wait,
        placer.placement(),
        args.dtype
    );
    println!("local:  {local_s:.4} s");
    println!("remote: {remote_s:.4} s for {callbacks} callbacks");
    println!(
        "overhead per callback: {} mean (remote - local); round trip p50 {}, p99 {}; server {} mean",
        format_nanos(overhead_ns),
        format_nanos(p50 as f64),
        format_nanos(p99 as f64),
        format_nanos(server_mean)
    );
    println!(
        "overhead per callback (round trip - server time): p50 {}, p99 {}",
        format_nanos(overhead_p50 as f64),
        format_nanos(overhead_p99 as f64)
    );
    match ratio {
        Some(r) => println!(
            "raw floor for {bytes} bytes, same transport and wait: p50 {}; overhead / floor \
             {:.2}x [95% {:.2}-{:.2}], paired over {} segments of {} steps",
            format_nanos(floor_p50 as f64),
            r.median,
            r.ci[0],
            r.ci[1],
            floor.segments.len(),
            args.floor_every
        ),
        None => println!(
            "raw floor: no segment of {} steps completed (fewer steps than that)",
            args.floor_every
        ),
    }
    match exchange {
        Exchange::F64 if identical => {
            println!("trajectories: bit-identical over {} steps", args.steps)
        }
        Exchange::F64 => println!("trajectories: DIFFER (max |diff| {max_abs_diff:e})"),
        Exchange::F64AsF32 => {
            println!("trajectories: max |diff| {max_abs_diff:e} (narrowed exchange)")
        }
    }
    println!(
        "{{\"n\":{},\"steps\":{},\"callbacks\":{},\"local_s\":{:.6},\"remote_s\":{:.6},\
         \"overhead_per_callback_ns\":{:.0},\"overhead_p50_ns\":{},\"overhead_p99_ns\":{},\
         \"p50_callback_ns\":{},\"p99_callback_ns\":{},\"baseline_p50_ns\":{},\
         \"overhead_ratio\":{},\"overhead_ratio_ci\":{},\"segments\":{},\
         \"max_abs_diff\":{:?},\"wait\":\"{}\",\"transport\":\"{}\",\"pin\":\"{}\",\"dtype\":\"{}\"}}",
        args.n,
        args.steps,
        callbacks,
        local_s,
        remote_s,
        overhead_ns,
        overhead_p50,
        overhead_p99,
        p50,
        p99,
        floor_p50,
        ratio.map_or("null".to_owned(), |r| format!("{:.4}", r.median)),
        ratio.map_or("null".to_owned(), |r| format!("[{:.4},{:.4}]", r.ci[0], r.ci[1])),
        floor.segments.len(),
        max_abs_diff,
        args.wait.name(),
        args.transport,
        placer.placement(),
        args.dtype
    );
    if exchange == Exchange::F64 && !identical {
        return Err(Error::Corrupted {
            what: "trajectory",
            detail: format!(
                "the remote trajectory differs from the local one (max |diff| {max_abs_diff:e})"
            ),
        });
    }
    Ok(())
}
