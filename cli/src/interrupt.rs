//! Ending a long run early on SIGINT, SIGTERM or SIGHUP, keeping what it measured.
//!
//! [`install`] (called by the `peer` binary for the report and `peer soak`) replaces the
//! default action of the three signals — which would end the process at once, leaving the
//! servers it stopped (`SIGSTOP`) stopped and what it measured unwritten — with a flag. The
//! runs check it between bursts and between round trips ([`requested`], [`check`]): the run
//! ends like one that met an error, the rows measured so far printed and written, its servers
//! continued, closed and reaped, and the program exits with `128 + signal` ([`exit_code`]).
//!
//! Nothing in a run may then hold it for long: one second after the first signal
//! ([`GRACE`]), a thread of this module kills (`SIGKILL`) every child process still there, so
//! that a wait for a server that does not answer ends at once instead of at its deadline. A
//! second signal ends the process at once (`_exit(128 + signal)`), the last resort of a user
//! who pressed Ctrl-C twice; the servers of a report then die with it (`PR_SET_PDEATHSIG`,
//! see [`peerpipe::process`]), and those of a soak, never stopped, see their input end.
//!
//! A signal that was ignored when the program started stays ignored: `nohup peer …` keeps
//! running when its terminal hangs up, and a background job of a non-interactive shell, which
//! starts with SIGINT ignored, is not ended by the Ctrl-C meant for the shell's foreground.
//!
//! Only a program whose child processes are all its servers should install this: the killing
//! thread does not ask whose a child is. A library caller that never calls [`install`] is
//! not affected: [`requested`] then always says no.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use peerpipe::error::{Error, Result};

/// How long a run gets, after the first signal, to end by itself before the killing thread
/// kills this process's children: 1 s.
pub const GRACE: Duration = Duration::from_secs(1);

/// The signals that end a run early.
pub const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// The number of the first signal that arrived; 0 for none.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);
/// Set by the first signal: arms the immediate exit on the second.
static ARMED: AtomicBool = AtomicBool::new(false);
static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();

/// Installs the handlers of [`SIGNALS`] — of those not ignored at the time — and starts the
/// thread that kills the children [`GRACE`] after the first one; the second call and later
/// ones do nothing.
///
/// # Errors
/// [`Error::Io`] when a handler cannot be installed or the thread cannot start.
pub fn install() -> Result<()> {
    INSTALLED
        .get_or_init(|| install_once().map_err(|e| e.to_string()))
        .clone()
        .map_err(|reason| Error::Io(std::io::Error::other(reason)))
}

fn install_once() -> std::io::Result<()> {
    let (mut wake_reader, wake_writer) = UnixStream::pair()?;
    let ignored = ignored_signals();
    for signal in SIGNALS.into_iter().filter(|&s| ignored >> (s as i32 - 1) & 1 == 0) {
        let number = signal as i32;
        // Registered first, so it sees the flag as the previous signal left it.
        signal_hook::flag::register_conditional_shutdown(number, 128 + number, &ARMED)?;
        signal_hook::flag::register_usize(number, &RECEIVED, number as usize)?;
        signal_hook::flag::register(number, &ARMED)?;
        signal_hook::low_level::pipe::register(number, wake_writer.try_clone()?)?;
    }
    drop(wake_writer);
    std::thread::Builder::new().name("peerpipe interrupt".into()).spawn(move || {
        // Blocks, costing nothing, until the first signal writes its byte.
        let mut byte = [0u8; 1];
        while let Err(e) = wake_reader.read_exact(&mut byte) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
        std::thread::sleep(GRACE);
        kill_children();
    })?;
    Ok(())
}

/// The mask of signals this process ignores (`SigIgn` of `/proc/self/status`: bit `n - 1`
/// for signal `n`); none when it cannot be read.
fn ignored_signals() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .unwrap_or(0)
}

/// Kills (`SIGKILL`) every process whose parent is this process; they are reaped by whoever
/// owns them ([`peerpipe::process`]'s guards).
fn kill_children() {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let parent = stat
            .rfind(')')
            .and_then(|at| stat[at + 1..].split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        if parent == Some(me) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// The first of [`SIGNALS`] that arrived since [`install`], if any.
pub fn requested() -> Option<Signal> {
    match RECEIVED.load(Ordering::Relaxed) {
        0 => None,
        n => Signal::try_from(n as i32).ok(),
    }
}

/// [`Error::Interrupted`] naming the signal, once one arrived.
///
/// # Errors
/// [`Error::Interrupted`] when [`requested`] says a signal arrived.
pub fn check() -> Result<()> {
    match requested() {
        None => Ok(()),
        Some(signal) => Err(interrupted(signal)),
    }
}

/// The error a run ended by `signal` returns: "interrupted by SIGINT; ...".
pub fn interrupted(signal: Signal) -> Error {
    let during = match signal {
        Signal::SIGINT => "by SIGINT",
        Signal::SIGTERM => "by SIGTERM",
        Signal::SIGHUP => "by SIGHUP",
        _ => "by a signal",
    };
    Error::Interrupted { during }
}

/// The exit status of a program ended by `signal`: `128 + signal`, as a shell reports it
/// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
pub fn exit_code(signal: Signal) -> u8 {
    u8::try_from(128 + signal as i32).unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ignored_signals_are_read_from_proc() {
        // Rust's runtime ignores SIGPIPE in every program.
        assert_eq!(ignored_signals() >> (Signal::SIGPIPE as i32 - 1) & 1, 1);
    }

    #[test]
    fn exit_codes_are_the_shells() {
        assert_eq!(exit_code(Signal::SIGINT), 130);
        assert_eq!(exit_code(Signal::SIGTERM), 143);
        assert_eq!(exit_code(Signal::SIGHUP), 129);
        assert_eq!(
            interrupted(Signal::SIGTERM).to_string(),
            "interrupted by SIGTERM; the server was terminated"
        );
    }
}
