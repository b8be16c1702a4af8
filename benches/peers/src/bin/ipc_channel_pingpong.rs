//! Round-trip latency of the `ipc-channel` crate (servo/ipc-channel), for comparison with
//! peerpipe: the parent sends N `f64` (500 by default) to a child process, the child sends them
//! back.
//!
//! ```sh
//! cd benches/peers   # its own workspace: the main crate's `cargo test` never builds ipc-channel
//! cargo run --release --bin ipc_channel_pingpong
//! cargo run --release --bin ipc_channel_pingpong -- --pin split --warmup 2000 --iterations 20000 --elements 500
//! ```
//!
//! `run.sh` beside this workspace runs it interleaved with iceoryx2, the C ping-pong and peer.
//!
//! The child is this same binary re-executed as `ipc_channel_pingpong --child <server-name>`: it
//! connects to the parent's `IpcOneShotServer` and hands over the four channel ends of the two
//! variants, which run one after the other:
//!
//! - `serde-vec`: `IpcSender<Vec<f64>>` both ways (serialized by ipc-channel); the child echoes
//!   the `Vec<f64>` it received.
//! - `bytes-le`: `IpcBytesSender` both ways; the parent encodes with `f64::to_le_bytes`, the
//!   child decodes with `f64::from_le_bytes` and encodes again (like peer's `echo` handler), the
//!   parent decodes the reply. Conversion on both sides is inside the timed round trip.
//!
//! One line per variant on stdout:
//! `ipc-channel <variant>: elements=N iterations=N p50_ns=.. p99_ns=.. min_ns=..`.
//! Every echoed array is checked bit for bit against the one sent. `--pin free|same|split`
//! places the two processes as peer's `--pin` does (default `free`). The child is killed and
//! reaped on every error path, and exits by itself when the parent goes away.
//!
//! ipc-channel always waits in a blocking `recvmsg` (it has no spinning wait), so its figures are
//! closest to `peer --wait block`; `peer --wait hybrid` spins first and avoids the wake-up cost.

use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use ipc_channel::ipc::{
    self, IpcBytesReceiver, IpcBytesSender, IpcOneShotServer, IpcReceiver, IpcSender,
};
use peerpipe::stats::nearest_rank;
use peerpipe_cli::report::cpu::Pinned;
use peerpipe_peers::{BoxResult, ChildGuard, elapsed_ns, initial_values, same_bits, update};
use serde::{Deserialize, Serialize};

/// How long the parent waits for the child to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the child sends through the one-shot server: the ends the parent keeps.
#[derive(Serialize, Deserialize)]
struct Bootstrap {
    to_child: IpcSender<Vec<f64>>,
    from_child: IpcReceiver<Vec<f64>>,
    to_child_bytes: IpcBytesSender,
    from_child_bytes: IpcBytesReceiver,
}

fn main() -> BoxResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, server_name] if flag == "--child" => child(server_name.clone()),
        _ => parent(&Config::parse(&args)?),
    }
}

// ---------------------------------------------------------------------------------------------
// Child

fn child(server_name: String) -> BoxResult<()> {
    let (to_child, rx) = ipc::channel::<Vec<f64>>()?;
    let (tx, from_child) = ipc::channel::<Vec<f64>>()?;
    let (to_child_bytes, rx_bytes) = ipc::bytes_channel()?;
    let (tx_bytes, from_child_bytes) = ipc::bytes_channel()?;
    IpcSender::<Bootstrap>::connect(server_name)?.send(Bootstrap {
        to_child,
        from_child,
        to_child_bytes,
        from_child_bytes,
    })?;

    // An empty message ends a variant; a parent that went away ends the child with an error.
    loop {
        let values = rx.recv()?;
        if values.is_empty() {
            break;
        }
        tx.send(values)?;
    }

    let mut values = Vec::new();
    let mut encoded = Vec::new();
    loop {
        let bytes = rx_bytes.recv()?;
        if bytes.is_empty() {
            break;
        }
        decode_le(&bytes, &mut values)?;
        encode_le(&values, &mut encoded);
        tx_bytes.send(&encoded)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Parent

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pin {
    Free,
    Same,
    Split,
}

struct Config {
    elements: usize,
    warmup: usize,
    iterations: usize,
    pin: Pin,
}

impl Config {
    fn parse(args: &[String]) -> BoxResult<Config> {
        let mut config =
            Config { elements: 500, warmup: 2_000, iterations: 20_000, pin: Pin::Free };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--elements" => config.elements = value()?.parse()?,
                "--warmup" => config.warmup = value()?.parse()?,
                "--iterations" => config.iterations = value()?.parse()?,
                "--pin" => {
                    config.pin = match value()?.as_str() {
                        "free" => Pin::Free,
                        "same" => Pin::Same,
                        "split" => Pin::Split,
                        other => return Err(format!("--pin {other:?}: not free|same|split").into()),
                    }
                }
                other => {
                    return Err(format!(
                        "unknown argument {other:?}; usage: ipc_channel_pingpong \
                         [--elements N] [--warmup N] [--iterations N] [--pin free|same|split]"
                    )
                    .into());
                }
            }
        }
        if config.iterations == 0 || config.elements == 0 {
            return Err("--iterations and --elements must be at least 1".into());
        }
        Ok(config)
    }
}

fn parent(config: &Config) -> BoxResult<()> {
    // Placement as in peer: pin to the first allowed CPU; for `split`, spawn the child from
    // the second one so that it inherits that CPU, then move back.
    let pinned = match config.pin {
        Pin::Free => None,
        Pin::Same | Pin::Split => Some(Pinned::to_first_allowed_cpu()?),
    };
    if config.pin == Pin::Split && pinned.as_ref().is_some_and(|p| p.allowed_cpus() < 2) {
        return Err("--pin split needs two CPUs".into());
    }

    let (server, server_name) = IpcOneShotServer::<Bootstrap>::new()?;
    if let (Some(pinned), Pin::Split) = (&pinned, config.pin) {
        pinned.to_nth_allowed(1)?;
    }
    let spawned = Command::new(std::env::current_exe()?).arg("--child").arg(&server_name).spawn();
    if let (Some(pinned), Pin::Split) = (&pinned, config.pin) {
        pinned.to_nth_allowed(0)?;
    }
    let mut guard = ChildGuard(Some(spawned?));

    let channels = accept(server, &mut guard)?;
    let serde_result = serde_variant(&channels, config)?;
    channels.to_child.send(Vec::new())?;
    let bytes_result = bytes_variant(&channels, config)?;
    channels.to_child_bytes.send(&[])?;
    guard.finish_within(CONNECT_TIMEOUT)?;

    for (variant, samples) in [("serde-vec", serde_result), ("bytes-le", bytes_result)] {
        println!(
            "ipc-channel {variant}: elements={} iterations={} p50_ns={} p99_ns={} min_ns={}",
            config.elements,
            samples.len(),
            nearest_rank(&samples, 0.50),
            nearest_rank(&samples, 0.99),
            samples[0],
        );
    }
    Ok(())
}

/// Accepts the child's connection, giving up if the child exits or does not connect in time
/// (`accept` itself has no timeout, so it runs on a thread of its own).
fn accept(server: IpcOneShotServer<Bootstrap>, guard: &mut ChildGuard) -> BoxResult<Bootstrap> {
    let (done, accepted) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(server.accept().map(|(_, bootstrap)| bootstrap));
    });
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        match accepted.recv_timeout(Duration::from_millis(10)) {
            Ok(result) => return Ok(result?),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err("accept thread died".into()),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(child) = guard.0.as_mut()
            && let Some(status) = child.try_wait()?
        {
            return Err(format!("child exited with {status} before connecting").into());
        }
        if Instant::now() > deadline {
            return Err("child did not connect within 10 s".into());
        }
    }
}

fn serde_variant(channels: &Bootstrap, config: &Config) -> BoxResult<Vec<u64>> {
    let mut expected = initial_values(config.elements);
    let mut values = expected.clone();
    let mut samples = Vec::with_capacity(config.iterations);
    for i in 0..config.warmup + config.iterations {
        update(&mut expected, i);
        update(&mut values, i);
        let start = Instant::now();
        channels.to_child.send(values)?;
        values = channels.from_child.recv()?;
        let ns = elapsed_ns(start);
        if !same_bits(&values, &expected) {
            return Err(format!("serde-vec: round trip {i} echoed different values").into());
        }
        if i >= config.warmup {
            samples.push(ns);
        }
    }
    samples.sort_unstable();
    Ok(samples)
}

fn bytes_variant(channels: &Bootstrap, config: &Config) -> BoxResult<Vec<u64>> {
    let mut values = initial_values(config.elements);
    let mut encoded = Vec::with_capacity(config.elements * 8);
    let mut echoed = Vec::with_capacity(config.elements);
    let mut samples = Vec::with_capacity(config.iterations);
    for i in 0..config.warmup + config.iterations {
        update(&mut values, i);
        let start = Instant::now();
        encode_le(&values, &mut encoded);
        channels.to_child_bytes.send(&encoded)?;
        let reply = channels.from_child_bytes.recv()?;
        decode_le(&reply, &mut echoed)?;
        let ns = elapsed_ns(start);
        if !same_bits(&echoed, &values) {
            return Err(format!("bytes-le: round trip {i} echoed different values").into());
        }
        if i >= config.warmup {
            samples.push(ns);
        }
    }
    samples.sort_unstable();
    Ok(samples)
}

fn encode_le(values: &[f64], out: &mut Vec<u8>) {
    out.clear();
    for x in values {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn decode_le(bytes: &[u8], out: &mut Vec<f64>) -> BoxResult<()> {
    let chunks = bytes.chunks_exact(8);
    if !chunks.remainder().is_empty() {
        return Err(format!("{} bytes is not a whole number of f64", bytes.len()).into());
    }
    out.clear();
    out.extend(chunks.map(|c| f64::from_le_bytes(c.try_into().expect("chunks of 8 bytes"))));
    Ok(())
}
