//! Spawning a server process on two pipes, and never leaving it behind.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::error::Result;
use crate::transport::{PipeTransport, Wait};

/// How long a terminated server gets between SIGTERM and SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_millis(200);

/// Spawns `command` with its stdin and stdout on two new `O_CLOEXEC` pipes (stderr inherited),
/// asks for `pipe_capacity` bytes on both, and returns this side's transport and the child.
pub(crate) fn spawn_with_pipes(
    mut command: Command,
    wait: Wait,
    pipe_capacity: Option<usize>,
) -> Result<(PipeTransport, ChildGuard)> {
    let (child_stdin, our_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let (our_rx, child_stdout) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let mut transport = PipeTransport::new(our_rx, our_tx, wait)?;
    if let Some(bytes) = pipe_capacity {
        transport.set_pipe_capacity(bytes)?;
    }
    command.stdin(Stdio::from(child_stdin)).stdout(Stdio::from(child_stdout));
    let child = command.spawn()?;
    // The command holds the child's pipe ends; drop it so only the child keeps them, and the
    // child's death shows up here as end of stream.
    drop(command);
    Ok((transport, ChildGuard { child }))
}

/// `exited with status 3` or `was killed by signal 9 (SIGKILL)`.
pub fn describe_status(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exited with status {code}")
    } else if let Some(signal) = status.signal() {
        match Signal::try_from(signal) {
            Ok(name) => format!("was killed by signal {signal} ({name})"),
            Err(_) => format!("was killed by signal {signal}"),
        }
    } else {
        format!("ended ({status})")
    }
}

/// Owns a spawned server process and never lets it outlive the owner unreaped.
#[derive(Debug)]
pub(crate) struct ChildGuard {
    child: Child,
}

impl ChildGuard {
    pub(crate) fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits up to `limit` for the process to exit.
    pub(crate) fn wait_timeout(&mut self, limit: Duration) -> std::io::Result<Option<ExitStatus>> {
        let until = Instant::now() + limit;
        let mut pause = Duration::from_micros(50);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(Some(status));
            }
            let now = Instant::now();
            if now >= until {
                return Ok(None);
            }
            thread::sleep(pause.min(until - now));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// SIGTERM, then SIGKILL after [`TERM_GRACE`]; always reaps.
    pub(crate) fn terminate(&mut self) -> std::io::Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        // A stopped process (SIGSTOP) keeps SIGTERM pending until it runs again: continue it,
        // as a shell's `kill` does for stopped jobs, so it can act on the SIGTERM now.
        let _ = kill(pid, Signal::SIGCONT);
        if let Some(status) = self.wait_timeout(TERM_GRACE)? {
            return Ok(status);
        }
        let _ = self.child.kill();
        self.child.wait()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

impl ChildGuard {
    /// The process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_statuses_are_described_in_words() {
        assert_eq!(describe_status(ExitStatus::from_raw(3 << 8)), "exited with status 3");
        assert_eq!(describe_status(ExitStatus::from_raw(9)), "was killed by signal 9 (SIGKILL)");
    }
}
