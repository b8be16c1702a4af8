//! The run: pairs spawned, warmed up, exchanging on their threads, measured, closed.

use std::thread;
use std::time::{Duration, Instant};

use super::client::{Client, MAX_PIPELINE_DEPTH};
use super::config::{Config, HANDLERS, pair_seed};
use super::gate::{AbortOnPanic, Gate};
use super::render::{PairReport, SoakReport};
use super::stats::Stats;
use super::usage::{ProcessUsage, usage_of};
use peerpipe::error::{Error, Result};
use peerpipe::peer::{Options, Peer, describe_status};

/// Runs a soak: spawns `config.peers` servers, warms each pair up on its own thread, measures
/// every process, lets the pairs exchange for `config.duration`, measures again, and closes
/// the pairs.
///
/// A failure during the exchange (lost, reordered or corrupted frames, a dead server, resources
/// not flat) is not an error of this function: it is in the report, see
/// [`SoakReport::failures`].
///
/// # Errors
/// [`Error::InvalidArgument`] for an invalid configuration; the errors of [`Peer::spawn_server`]
/// when a server cannot be started, and [`Error::Io`] when a thread cannot be (the servers
/// already started are closed).
///
/// # Panics
/// Re-raises the panic of a pair's thread (a bug), after the other pairs have been closed.
pub fn run(config: &Config) -> Result<SoakReport> {
    config.validate()?;
    // The servers are not tied to this thread (`process::TiedSpawns`): none is ever stopped,
    // so a killed soak leaves them to see their input end and exit by themselves — the path
    // every library client relies on, which the soak's fault tests prove on every transport.
    let mut peers = Vec::with_capacity(config.peers);
    for i in 0..config.peers {
        let handler = HANDLERS[i % HANDLERS.len()];
        let options = Options { transport: config.transport, ..config.options.clone() };
        peers.push(match &config.spawn {
            Some(line) => Peer::spawn_shell(line, options)?,
            None => Peer::spawn_server(&config.peer_exe, handler, options)?,
        });
    }
    let pipe_capacity = peers.iter().filter_map(Peer::capacity).min();
    let max_depth = peers
        .iter()
        .filter_map(Peer::max_in_flight)
        .min()
        .unwrap_or(MAX_PIPELINE_DEPTH)
        .min(MAX_PIPELINE_DEPTH);
    let server_pids: Vec<Option<u32>> = peers.iter().map(Peer::server_pid).collect();
    // The workers and this thread meet four times: warm, go, done, measured.
    let gate = Gate::new(config.peers + 1);

    let outcome =
        thread::scope(|scope| -> Result<_> {
            let started = Instant::now();
            let mut workers = Vec::with_capacity(config.peers);
            for (i, peer) in peers.into_iter().enumerate() {
                let gate = &gate;
                let spawned = thread::Builder::new()
                    .name(format!("soak pair {}", i + 1))
                    .spawn_scoped(scope, move || {
                        let _abort = AbortOnPanic(gate);
                        pair_worker(i, peer, config, gate)
                    });
                match spawned {
                    Ok(worker) => workers.push(worker),
                    Err(e) => {
                        // The peers not yet moved into a thread are dropped (closed) on return.
                        gate.abort();
                        for worker in workers {
                            let _ = worker.join();
                        }
                        return Err(Error::Io(e));
                    }
                }
            }
            let me = std::process::id();
            let roles = std::iter::once(("peer soak (this process)".to_owned(), Some(me))).chain(
                server_pids.iter().enumerate().map(|(i, &pid)| {
                    (format!("server {} ({})", i + 1, config.server_label(i)), pid)
                }),
            );
            let mut processes: Vec<ProcessUsage> = roles
                .filter_map(|(role, pid)| {
                    let pid = pid?;
                    let unmeasured = Err("not measured".to_owned());
                    Some(ProcessUsage { role, pid, start: unmeasured.clone(), end: unmeasured })
                })
                .collect();
            let mut warm_up = Duration::ZERO;
            let mut elapsed = Duration::ZERO;
            if gate.wait() {
                warm_up = started.elapsed();
                for process in &mut processes {
                    process.start = usage_of(process.pid);
                }
                let go = Instant::now();
                if gate.wait() && gate.wait() {
                    elapsed = go.elapsed();
                    for process in &mut processes {
                        process.end = usage_of(process.pid);
                    }
                    gate.wait();
                }
            }
            let mut pairs = Vec::with_capacity(workers.len());
            let mut budget = usize::MAX;
            let mut panic = None;
            for worker in workers {
                match worker.join() {
                    Ok((report, pair_budget)) => {
                        budget = budget.min(pair_budget);
                        pairs.push(report);
                    }
                    Err(payload) => panic = panic.or(Some(payload)),
                }
            }
            if let Some(payload) = panic {
                std::panic::resume_unwind(payload);
            }
            Ok((pairs, processes, warm_up, elapsed, budget))
        });
    let (pairs, processes, warm_up, elapsed, pipeline_budget) = outcome?;

    let mut total = Stats::new();
    for pair in &pairs {
        total.merge(&pair.stats);
    }
    Ok(SoakReport {
        config: config.clone(),
        elapsed,
        warm_up,
        pipe_capacity,
        max_depth,
        pipeline_budget,
        pairs,
        total,
        processes,
        interrupted_by: crate::interrupt::requested().map(|signal| signal.as_str().to_owned()),
    })
}

/// One pair's thread: warm up, wait for the others, exchange until the deadline, wait while
/// the processes are measured, close. Meets the others at all four points unless the gate is
/// called off, in which case it closes at once.
fn pair_worker(index: usize, peer: Peer, config: &Config, gate: &Gate) -> (PairReport, usize) {
    let handler = config.server_label(index);
    let server_pid = peer.server_pid();
    let mut client = Client::new(peer, pair_seed(config.seed, index), config.max_elements);
    client.set_label(format!("pair {}", index + 1));
    let budget = client.pipeline_budget();
    let mut failed = client.warm_up().is_err();
    let mut go = gate.wait() && gate.wait();
    if go && !failed {
        failed = client.run_until(Instant::now() + config.duration).is_err();
    }
    go = go && gate.wait() && gate.wait();
    let stats = client.stats().clone();
    let close = if failed {
        // The peer has already terminated and reaped its server; the error is in the stats.
        drop(client);
        Ok("was terminated and reaped by its client after the error".to_owned())
    } else if !go {
        drop(client);
        Err("the run was called off".to_owned())
    } else {
        match client.close() {
            Ok(Some(status)) if status.success() => {
                Ok(format!("{} after BYE", describe_status(status)))
            }
            Ok(Some(status)) => Err(format!("server {}", describe_status(status))),
            Ok(None) => Ok("(not a process)".to_owned()),
            Err(e) => Err(e.to_string()),
        }
    };
    (PairReport { handler, server_pid, stats, close }, budget)
}
