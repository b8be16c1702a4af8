//! A spawned server's stderr, forwarded to ours as it comes and its last bytes kept, so that an
//! error about a server that died can quote what the server said.
//!
//! One thread per server drains the pipe as fast as the server writes (a chatty server never
//! blocks on a full pipe), writes every chunk to this process's stderr, and keeps the last
//! [`TAIL_BYTES`] in a ring. The thread ends at end of stream, when the server and everything
//! that inherited its stderr have exited.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;

/// Bytes of a server's stderr kept for error messages.
pub(crate) const TAIL_BYTES: usize = 4096;

/// Lines of the tail quoted in an error.
const QUOTED_LINES: usize = 6;

#[derive(Default)]
struct Shared {
    tail: VecDeque<u8>,
    ended: bool,
}

/// The reading end's state, shared with the draining thread.
#[derive(Clone)]
pub(crate) struct StderrTail {
    shared: Arc<(Mutex<Shared>, Condvar)>,
}

impl std::fmt::Debug for StderrTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StderrTail")
    }
}

impl StderrTail {
    /// A new pipe: the `Stdio` to give the child as its stderr, and the tail that drains it.
    /// `None` when no pipe or thread can be made (the child then inherits our stderr).
    pub(crate) fn start() -> Option<(Stdio, StderrTail)> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC).ok()?;
        let tail = StderrTail { shared: Arc::new((Mutex::new(Shared::default()), Condvar::new())) };
        let shared = Arc::clone(&tail.shared);
        std::thread::Builder::new()
            .name("peerpipe server stderr".into())
            .spawn(move || drain(read, &shared))
            .ok()?;
        Some((Stdio::from(write), tail))
    }

    /// Waits up to `patience` for the server's stderr to end (and the draining thread to close
    /// its end): for a reaped server, at once, unless something it started still holds it.
    pub(crate) fn wait_ended(&self, patience: Duration) {
        drop(self.ended_within(patience));
    }

    fn ended_within(&self, patience: Duration) -> std::sync::MutexGuard<'_, Shared> {
        let (lock, ended) = &*self.shared;
        let until = Instant::now() + patience;
        let mut shared = lock.lock().unwrap_or_else(|e| e.into_inner());
        while !shared.ended {
            let now = Instant::now();
            if now >= until {
                break;
            }
            shared = ended.wait_timeout(shared, until - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        shared
    }

    /// The last lines the server wrote, waiting up to `patience` for its stderr to end (a
    /// server that just died may still have bytes in the pipe); empty when it wrote nothing.
    pub(crate) fn text(&self, patience: Duration) -> String {
        let shared = self.ended_within(patience);
        let bytes: Vec<u8> = shared.tail.iter().copied().collect();
        drop(shared);
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> =
            text.lines().map(str::trim_end).filter(|line| !line.is_empty()).collect();
        let start = lines.len().saturating_sub(QUOTED_LINES);
        lines[start..].join(" | ")
    }
}

fn drain(read: OwnedFd, shared: &(Mutex<Shared>, Condvar)) {
    let mut pipe = std::fs::File::from(read);
    let mut chunk = [0u8; 4096];
    loop {
        let n = match pipe.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        // Forward first: what the server says belongs on our stderr, as if inherited.
        let _ = std::io::stderr().write_all(&chunk[..n]);
        let (lock, _) = shared;
        let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
        state.tail.extend(&chunk[..n]);
        let excess = state.tail.len().saturating_sub(TAIL_BYTES);
        state.tail.drain(..excess);
    }
    // Close the pipe before saying so, so that a waiter sees no descriptor left behind.
    drop(pipe);
    let (lock, ended) = shared;
    lock.lock().unwrap_or_else(|e| e.into_inner()).ended = true;
    ended.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chatty_child_keeps_only_the_last_lines_and_never_blocks() {
        let (stdio, tail) = StderrTail::start().expect("a pipe and a thread");
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("i=0; while [ $i -lt 600 ]; do echo \"line $i\" >&2; i=$((i+1)); done; echo last >&2")
            .stderr(stdio)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn sh");
        let status = child.wait().expect("wait");
        assert!(status.success());
        let text = tail.text(Duration::from_secs(10));
        assert!(text.ends_with("line 599 | last"), "{text}");
        assert_eq!(text.split(" | ").count(), QUOTED_LINES, "{text}");
    }
}
