//! Memory and descriptors of the soak's processes, and how far they may grow.

use std::fs;

use peerpipe::error::{Error, Result};

/// Absolute floor of the RSS tolerance: 8 MiB, one largest default frame (1,048,576 f64).
///
/// Every buffer a round trip needs is allocated and touched during warm-up (the largest
/// request of each dtype on each path, and a full pipelined batch), and a warm round trip
/// allocates nothing (`tests/zero_alloc.rs`). What can still move RSS without a leak is
/// allocator bookkeeping — glibc's per-thread arenas keeping or trimming freed chunks,
/// read-ahead buffers of the transport (bounded by the pipe capacity), thread stacks touched
/// deeper — which stays well under one largest frame. A leak worth finding grows past it: one
/// frame buffer kept per round trip does within a few round trips, and 100 bytes kept per
/// request does within a default 60 s run (~10^5 requests). The report prints the request
/// count, so the per-request detection limit (tolerance / requests) can be read off.
pub const RSS_TOLERANCE_FLOOR: u64 = 8 << 20;

/// Relative RSS tolerance: 10 % of the start value, for processes whose warm RSS is large.
pub const RSS_TOLERANCE_PERCENT: u64 = 10;

/// How far RSS may grow between start and end and still count as flat:
/// `max(RSS_TOLERANCE_FLOOR, RSS_TOLERANCE_PERCENT % of start)`.
///
/// ```
/// use peerpipe_cli::soak::rss_tolerance;
/// assert_eq!(rss_tolerance(20 << 20), 8 << 20);
/// assert_eq!(rss_tolerance(200 << 20), 20 << 20);
/// ```
pub fn rss_tolerance(start_bytes: u64) -> u64 {
    RSS_TOLERANCE_FLOOR.max(start_bytes / 100 * RSS_TOLERANCE_PERCENT)
}

// Process usage

/// Resident memory and open descriptors of one process at one moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Resident set size (`VmRSS` of `/proc/PID/status`), in bytes.
    pub rss_bytes: u64,
    /// Entries of `/proc/PID/fd`.
    pub fds: usize,
}

impl Usage {
    /// The usage of process `pid`; for this process, the descriptor that lists `/proc/PID/fd`
    /// is not counted.
    ///
    /// # Errors
    /// [`Error::Io`] when `/proc/PID` cannot be read (the process is gone, or belongs to
    /// another user); [`Error::InvalidArgument`] when `VmRSS` is missing.
    pub fn of(pid: u32) -> Result<Usage> {
        let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
        let rss_kib = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .ok_or_else(|| Error::InvalidArgument {
                what: "process status",
                reason: format!("no VmRSS line in /proc/{pid}/status"),
            })?;
        let mut fds = fs::read_dir(format!("/proc/{pid}/fd"))?.count();
        if pid == std::process::id() {
            fds = fds.saturating_sub(1);
        }
        Ok(Usage { rss_bytes: rss_kib * 1024, fds })
    }
}

/// One process of a soak, measured after warm-up and at the end of the run.
#[derive(Clone, Debug)]
pub struct ProcessUsage {
    /// `peer soak (this process)` or `server N (handler)`.
    pub role: String,
    /// Its pid.
    pub pid: u32,
    /// After warm-up, or why it could not be read.
    pub start: std::result::Result<Usage, String>,
    /// At the end of the run, before closing, or why it could not be read.
    pub end: std::result::Result<Usage, String>,
}

impl ProcessUsage {
    /// Why this process's resources are not flat, if they are not.
    pub fn problem(&self) -> Option<String> {
        let (start, end) = match (&self.start, &self.end) {
            (Ok(start), Ok(end)) => (start, end),
            (Err(e), _) | (_, Err(e)) => {
                return Some(format!("{} (pid {}): usage unreadable: {e}", self.role, self.pid));
            }
        };
        let tolerance = rss_tolerance(start.rss_bytes);
        if end.rss_bytes > start.rss_bytes + tolerance {
            return Some(format!(
                "{} (pid {}): RSS grew from {} to {}, more than the tolerance of {}",
                self.role,
                self.pid,
                mib(start.rss_bytes),
                mib(end.rss_bytes),
                mib(tolerance)
            ));
        }
        if end.fds != start.fds {
            return Some(format!(
                "{} (pid {}): open descriptors changed from {} to {}",
                self.role, self.pid, start.fds, end.fds
            ));
        }
        None
    }
}

pub(super) fn usage_of(pid: u32) -> std::result::Result<Usage, String> {
    Usage::of(pid).map_err(|e| e.to_string())
}

/// Bytes as MiB with one decimal, for the report.
pub(super) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}
