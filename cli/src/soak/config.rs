//! What a soak runs, and the seeds each pair derives from the run's.

use std::path::PathBuf;

use crate::rng::splitmix64;
use peerpipe::error::{Error, Result};
use peerpipe::peer::Options;
use peerpipe::transport::TransportKind;
use peerpipe::units::format_duration;
use std::time::Duration;

/// Default length of a soak: 60 s.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// Default largest request: 1,048,576 elements (8 MiB of f64).
pub const DEFAULT_MAX_ELEMENTS: usize = 1 << 20;

/// Server handlers, by pair: pair `i` uses `HANDLERS[i % 2]`.
pub const HANDLERS: [&str; 2] = ["echo", "echo-raw"];

// Configuration

/// What a soak runs.
#[derive(Clone, Debug)]
pub struct Config {
    /// This crate's `peer` binary, spawned as `peer --role server --handler H`.
    pub peer_exe: PathBuf,
    /// A server command line every pair spawns instead (`--spawn`): a server of another
    /// implementation whose default handler echoes, as `echo` and `echo-raw` do.
    pub spawn: Option<String>,
    /// How long the pairs exchange after warm-up.
    pub duration: Duration,
    /// Number of client–server pairs (each client on its own thread).
    pub peers: usize,
    /// Largest request in elements; sizes are drawn from `0..=max_elements`.
    pub max_elements: usize,
    /// Seed of all randomness; pair `i` derives its own stream from it.
    pub seed: u64,
    /// The transport every pair talks over.
    pub transport: TransportKind,
    /// Peer options: wait strategy, timeout per reply, frame limit, pipe capacity. The path
    /// is chosen at random per batch.
    pub options: Options,
}

impl Config {
    /// The defaults: 60 s, one pair, 1,048,576 elements, pipes, default peer options.
    pub fn new(peer_exe: impl Into<PathBuf>, seed: u64) -> Config {
        Config {
            peer_exe: peer_exe.into(),
            spawn: None,
            duration: DEFAULT_DURATION,
            peers: 1,
            max_elements: DEFAULT_MAX_ELEMENTS,
            seed,
            transport: TransportKind::Pipe,
            // A soak server that outlives a killed client must still be able to say why it
            // exits, on the stderr it inherited, so its stderr is not captured.
            options: Options { capture_stderr: false, ..Options::default() },
        }
    }

    /// Checks that the configuration can run.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when there are no pairs, or when the largest request (as
    /// f64) exceeds `options.max_frame_bytes`.
    pub fn validate(&self) -> Result<()> {
        if self.peers == 0 {
            return Err(Error::InvalidArgument {
                what: "peers",
                reason: "at least one pair is needed".into(),
            });
        }
        let largest = (self.max_elements as u64).checked_mul(8);
        if largest.is_none_or(|bytes| bytes > self.options.max_frame_bytes) {
            return Err(Error::InvalidArgument {
                what: "max elements",
                reason: format!(
                    "{} f64 elements need {} bytes per frame, above max_frame_bytes {}",
                    self.max_elements,
                    self.max_elements as u128 * 8,
                    self.options.max_frame_bytes
                ),
            });
        }
        Ok(())
    }

    /// What pair `i`'s server is called in the report: its handler, or `spawned` for a
    /// `--spawn` server.
    pub fn server_label(&self, i: usize) -> &'static str {
        if self.spawn.is_some() { "spawned" } else { HANDLERS[i % HANDLERS.len()] }
    }

    /// The command line that replays this run.
    pub fn replay_command(&self) -> String {
        format!(
            "peer soak --seed {} --duration {} --peers {} --max-elements {} --wait {}{}{}{}",
            self.seed,
            format_duration(self.duration),
            self.peers,
            self.max_elements,
            self.options.wait,
            self.options
                .timeout
                .map_or(String::new(), |t| format!(" --timeout {}", format_duration(t))),
            match self.transport {
                TransportKind::Pipe => String::new(),
                other => format!(" --transport {other}"),
            },
            self.spawn.as_ref().map_or(String::new(), |line| format!(" --spawn {line:?}")),
        )
    }
}

/// A seed from the clock, for runs that were given none (print it so the run can be replayed).
pub fn seed_from_clock() -> u64 {
    crate::rng::seed_from_clock()
}

/// The seed of pair `index` derived from the run's seed.
pub fn pair_seed(seed: u64, index: usize) -> u64 {
    let mut state = seed ^ (index as u64).wrapping_mul(0xa076_1d64_78bd_642f);
    splitmix64(&mut state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_get_different_seeds() {
        assert_ne!(pair_seed(1, 0), pair_seed(1, 1));
        assert_eq!(pair_seed(1, 0), pair_seed(1, 0));
    }
}
