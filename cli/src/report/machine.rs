//! What machine a report ran on, and the clock it timed with.

use std::fs;

use super::model::Machine;

/// Reads the CPU model, core count, kernel release and pipe limits of this machine. Fields
/// that cannot be read are left empty rather than failing the report.
pub fn describe(pipe_size_granted: Option<u64>) -> Machine {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_default();
    let read_trimmed = |path: &str| fs::read_to_string(path).ok().map(|s| s.trim().to_owned());
    Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
        pipe_max_size: read_trimmed("/proc/sys/fs/pipe-max-size").and_then(|s| s.parse().ok()),
        pipe_size_granted,
        endian: if cfg!(target_endian = "little") { "little" } else { "big" }.to_owned(),
        clock: peerpipe::clock::source().to_string(),
        // Found from the rounds once the run is over (`states::assign`).
        states: Vec::new(),
    }
}
