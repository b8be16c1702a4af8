//! The result of a soak: what failed, and the report printed.

use std::io::{self, Write};
use std::time::Duration;

use super::config::Config;
use super::stats::Stats;
use super::usage::{
    ProcessUsage, RSS_TOLERANCE_FLOOR, RSS_TOLERANCE_PERCENT, Usage, mib, rss_tolerance,
};
use super::verify::ValueKind;
use crate::report::model::Percentiles;
use peerpipe::units::format_duration;

// The run

/// One client–server pair's result.
#[derive(Clone, Debug)]
pub struct PairReport {
    /// The server's handler.
    pub handler: &'static str,
    /// The server's pid.
    pub server_pid: Option<u32>,
    /// What the client did and found.
    pub stats: Stats,
    /// How the server ended (`exited with status 0 after BYE`), or what went wrong closing.
    pub close: std::result::Result<String, String>,
}

/// The result of [`run()`](super::run()).
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// What ran.
    pub config: Config,
    /// Time spent exchanging (after warm-up), measured.
    pub elapsed: Duration,
    /// Time spent warming up.
    pub warm_up: Duration,
    /// The smallest capacity per direction (pipe, ring or slot) of any pair, bytes.
    pub pipe_capacity: Option<usize>,
    /// Deepest pipelined batch the transport allows.
    pub max_depth: usize,
    /// Bytes allowed in flight each way in a pipelined batch.
    pub pipeline_budget: usize,
    /// Per pair.
    pub pairs: Vec<PairReport>,
    /// All pairs together.
    pub total: Stats,
    /// This process, then each server.
    pub processes: Vec<ProcessUsage>,
    /// The signal that ended the soak before its time (`SIGINT`, …; see
    /// [`crate::interrupt`]), if one did.
    pub interrupted_by: Option<String>,
}

impl SoakReport {
    /// Everything that makes the soak fail, one line each; empty when it passed.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(signal) = &self.interrupted_by {
            out.push(format!(
                "interrupted by {signal} after {} of {}",
                format_duration(self.elapsed),
                format_duration(self.config.duration)
            ));
        }
        let t = &self.total;
        if t.lost + t.reordered + t.corrupted > 0 {
            out.push(format!(
                "{} lost, {} reordered, {} corrupted of {} requests",
                t.lost, t.reordered, t.corrupted, t.requests
            ));
        }
        out.extend(t.errors.iter().cloned());
        if t.unaccounted() != 0 {
            out.push(format!("{} requests unaccounted for", t.unaccounted()));
        }
        if t.requests == 0 {
            out.push("no request was exchanged".to_owned());
        }
        for (i, pair) in self.pairs.iter().enumerate() {
            if let Err(e) = &pair.close {
                out.push(format!("pair {}: closing: {e}", i + 1));
            }
        }
        for (i, process) in self.processes.iter().enumerate() {
            // A server whose conversation failed is gone; its error is reported above.
            let pair_failed =
                i > 0 && self.pairs.get(i - 1).is_some_and(|p| !p.stats.errors.is_empty());
            if !pair_failed && let Some(problem) = process.problem() {
                out.push(problem);
            }
        }
        out
    }

    /// True when [`SoakReport::failures`] is empty.
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// Writes the summary: per pair, traffic, mix, integrity counts, latencies, and the
    /// processes' memory and descriptors, then the verdict.
    ///
    /// # Errors
    /// Those of `out`.
    pub fn render(&self, out: &mut impl Write) -> io::Result<()> {
        let t = &self.total;
        let c = &self.config;
        writeln!(
            out,
            "ran {} after a {} warm-up; {} capacity {}; pipelined batches keep under {} \
             bytes in flight each way",
            format_duration(self.elapsed),
            format_duration(self.warm_up),
            c.transport,
            self.pipe_capacity.map_or("unknown".to_owned(), |b| format!("{b} bytes")),
            self.pipeline_budget
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "{:<6} {:<9} {:>8} {:>10} {:>10} {:>10} {:>5} {:>9} {:>9} {:>10}",
            "pair",
            "handler",
            "server",
            "requests",
            "replies",
            "verified",
            "lost",
            "reordered",
            "corrupted",
            "MB moved"
        )?;
        let row = |out: &mut dyn Write, name: &str, handler: &str, pid: &str, s: &Stats| {
            writeln!(
                out,
                "{:<6} {:<9} {:>8} {:>10} {:>10} {:>10} {:>5} {:>9} {:>9} {:>10.1}",
                name,
                handler,
                pid,
                s.requests,
                s.replies,
                s.verified,
                s.lost,
                s.reordered,
                s.corrupted,
                (s.bytes_sent + s.bytes_received) as f64 / 1e6
            )
        };
        for (i, pair) in self.pairs.iter().enumerate() {
            let pid = pair.server_pid.map_or("-".to_owned(), |p| p.to_string());
            row(out, &(i + 1).to_string(), pair.handler, &pid, &pair.stats)?;
        }
        if self.pairs.len() > 1 {
            row(out, "all", "", "", t)?;
        }
        writeln!(out)?;
        let seconds = (self.elapsed + self.warm_up).as_secs_f64().max(1e-9);
        writeln!(
            out,
            "frames: {} requests + {} replies; {} payload bytes sent, {} received ({:.0} MB/s \
             both ways); largest request {} elements",
            t.requests,
            t.replies,
            t.bytes_sent,
            t.bytes_received,
            (t.bytes_sent + t.bytes_received) as f64 / 1e6 / seconds,
            t.largest_elements
        )?;
        let kinds: Vec<String> = ValueKind::ALL
            .iter()
            .zip(&t.by_kind)
            .map(|(kind, count)| format!("{kind} {} ({} elements)", count.requests, count.elements))
            .collect();
        writeln!(out, "mix: {}", kinds.join(", "))?;
        writeln!(
            out,
            "     {} single and {} pipelined batches (depth 2-{}); {} \
             requests zero-copy, {} codec; {} special values sent (NaN payloads, signalling \
             NaNs, ±0, subnormals, ±inf)",
            t.single_batches,
            t.pipelined_batches,
            self.max_depth,
            t.zero_copy_requests,
            t.codec_requests,
            t.special_elements
        )?;
        writeln!(
            out,
            "integrity: lost {}, reordered {}, corrupted {}, errors {}",
            t.lost,
            t.reordered,
            t.corrupted,
            t.errors.len()
        )?;
        for mismatch in &t.mismatches {
            writeln!(out, "  corrupted: {mismatch}")?;
        }
        for error in &t.errors {
            writeln!(out, "  error: {error}")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            "latency (all sizes)", "n", "min", "p50", "p90", "p99", "p99.9", "max"
        )?;
        for (name, histogram) in [
            ("single round trip", &t.single_latency),
            ("pipelined send-to-reply", &t.pipelined_latency),
        ] {
            let p = Percentiles::of(histogram);
            let f = |ns: u64| format_duration(Duration::from_nanos(ns));
            writeln!(
                out,
                "{:<28} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
                name,
                histogram.len(),
                f(p.min),
                f(p.p50),
                f(p.p90),
                f(p.p99),
                f(p.p999),
                f(p.max)
            )?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "{:<26} {:>8} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7}",
            "process", "pid", "RSS start", "RSS end", "change", "tolerance", "fds", "fds end"
        )?;
        for p in &self.processes {
            let cells = match (&p.start, &p.end) {
                (Ok(s), Ok(e)) => {
                    let change = e.rss_bytes as i128 - s.rss_bytes as i128;
                    [
                        mib(s.rss_bytes),
                        mib(e.rss_bytes),
                        format!("{:+.1} MiB", change as f64 / f64::from(1u32 << 20)),
                        mib(rss_tolerance(s.rss_bytes)),
                        s.fds.to_string(),
                        e.fds.to_string(),
                    ]
                }
                (start, end) => {
                    let show = |u: &std::result::Result<Usage, String>| match u {
                        Ok(u) => (mib(u.rss_bytes), u.fds.to_string()),
                        Err(_) => ("gone".to_owned(), "-".to_owned()),
                    };
                    let (rs, fs) = show(start);
                    let (re, fe) = show(end);
                    [rs, re, "-".into(), "-".into(), fs, fe]
                }
            };
            writeln!(
                out,
                "{:<26} {:>8} {:>10} {:>10} {:>10} {:>9} {:>7} {:>7}",
                p.role, p.pid, cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
            )?;
        }
        writeln!(
            out,
            "(flat: RSS end <= start + max({}, {RSS_TOLERANCE_PERCENT}% of start); descriptors \
             equal)",
            mib(RSS_TOLERANCE_FLOOR)
        )?;
        for (i, pair) in self.pairs.iter().enumerate() {
            if let Ok(status) = &pair.close {
                writeln!(out, "server {} {status}", i + 1)?;
            }
        }
        writeln!(out)?;
        let failures = self.failures();
        if failures.is_empty() {
            writeln!(
                out,
                "verdict: PASS: {} requests verified bit for bit; 0 lost, 0 reordered, 0 \
                 corrupted; RSS and descriptors flat",
                t.verified
            )?;
        } else {
            writeln!(out, "verdict: FAIL")?;
            for failure in &failures {
                writeln!(out, "  {failure}")?;
            }
            writeln!(out, "replay: {}", c.replay_command())?;
        }
        Ok(())
    }
}

/// Writes what is about to run and the seed, before the run (so a run that crashes or hangs
/// still shows how to replay it).
///
/// # Errors
/// Those of `out`.
pub fn render_plan(config: &Config, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "peer soak: {} pair{} over {} for {}, up to {} elements per request, wait {}, \
         timeout {}",
        config.peers,
        if config.peers == 1 { "" } else { "s" },
        config.transport,
        format_duration(config.duration),
        config.max_elements,
        config.options.wait,
        config.options.timeout.map_or("none".to_owned(), format_duration),
    )?;
    if let Some(line) = &config.spawn {
        writeln!(out, "servers: {line} (one per pair)")?;
    }
    writeln!(out, "seed {} (replay: {})", config.seed, config.replay_command())
}
