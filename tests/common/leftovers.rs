//! What a client leaves behind when it ends: the processes of its run, found anywhere in
//! `/proc` by a tag in their environment (a server re-parented to init is no longer anyone's
//! child), the shared memory they still map or hold, and whether the client's stdout and
//! stderr reached end of stream — which they do only once every process that inherited them
//! is gone.
//!
//! [`launch`] starts a client with the tag [`TAG_VAR`] in its environment, which every process
//! it starts inherits; [`Launched::end`] ends it (with a signal, or lets it exit by itself) and
//! then gives the run [`SETTLE`] to leave nothing: no tagged process alive or stopped, no new
//! entry in `/dev/shm`, both pipes at end of stream. Whatever is found is returned in words
//! and then killed, so a failing run does not disturb the next.
//!
//! Shared by the crate's `cli/tests/leftovers.rs` and the C ABI's `capi/tests/leftovers.rs`.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable carrying a run's tag to every process of the run.
pub const TAG_VAR: &str = "PEERPIPE_LEFTOVER_TAG";

/// The environment variable giving how many runs each leftover test makes (the full count of
/// `benches/leftovers.sh`); unset, each test makes the few that CI can afford.
pub const RUNS_VAR: &str = "PEERPIPE_LEFTOVER_RUNS";

/// How long after the client has exited the run gets to leave nothing behind: 1 s.
pub const SETTLE: Duration = Duration::from_secs(1);

/// How long a client gets to exit after its signal (a graceful end prints and writes what it
/// measured; the report promises about a second): 5 s.
pub const EXIT_LIMIT: Duration = Duration::from_secs(5);

/// Runs per leftover test: [`RUNS_VAR`] when set, else `default`.
pub fn runs(default: usize) -> usize {
    std::env::var(RUNS_VAR).ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(default)
}

/// A tag no other run of this test process uses.
pub fn new_tag(what: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    format!("{}-{}-{what}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// A process of a run that is still there.
#[derive(Clone, Debug)]
pub struct Tagged {
    /// Its pid.
    pub pid: i32,
    /// Its state letter (`S`, `R`, `T` for stopped, …).
    pub state: char,
    /// Its parent's pid.
    pub ppid: i32,
    /// Its command line.
    pub cmdline: String,
}

/// Every process carrying `tag`, alive or stopped (zombies are gone but for their entry, and
/// their environment can no longer be read).
pub fn tagged(tag: &str) -> Vec<Tagged> {
    let marker = format!("{TAG_VAR}={tag}");
    let mut found = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else { return found };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else { continue };
        if !environ.split(|&b| b == 0).any(|var| var == marker.as_bytes()) {
            continue;
        }
        let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let Some(at) = stat.rfind(')') else { continue };
        let mut rest = stat[at + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = rest.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        if state == 'Z' || state == 'X' {
            continue;
        }
        let cmdline = fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " ").trim_end().to_owned())
            .unwrap_or_default();
        found.push(Tagged { pid, state, ppid, cmdline });
    }
    found
}

/// The shared memory process `pid` maps or holds open: memfd and `/dev/shm` lines of its
/// `/proc/PID/maps`, and descriptors of `/proc/PID/fd` pointing at either.
pub fn shared_memory_of(pid: i32) -> Vec<String> {
    let shared = |text: &str| text.contains("memfd:") || text.contains("/dev/shm/");
    let mut found: Vec<String> = fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .lines()
        .filter(|line| shared(line))
        .map(|line| format!("maps: {line}"))
        .collect();
    if let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) {
        for fd in fds.flatten() {
            let target = fs::read_link(fd.path()).map(|p| p.display().to_string());
            if let Some(target) = target.ok().filter(|t| shared(t)) {
                found.push(format!("fd {}: {target}", fd.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// The names in `/dev/shm`.
pub fn dev_shm() -> BTreeSet<String> {
    fs::read_dir("/dev/shm")
        .map(|entries| {
            entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
        })
        .unwrap_or_default()
}

/// A small random-number generator for the moments at which runs are ended, seeded from the
/// clock and printed, so that a failing sequence can be told apart.
pub struct Moments(u64);

impl Moments {
    /// Seeded from the clock; prints the seed.
    pub fn new(what: &str) -> Moments {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        println!("{what}: moments seeded with {seed}");
        Moments(seed)
    }

    /// A moment between `from` and `to`.
    pub fn between(&mut self, from: Duration, to: Duration) -> Duration {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let unit = (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        from + (to.saturating_sub(from)).mul_f64(unit)
    }
}

/// A client started by [`launch`].
pub struct Launched {
    child: Child,
    tag: String,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    shm_before: BTreeSet<String>,
}

/// How a run ended and what it left.
#[derive(Debug)]
pub struct Ending {
    /// How the client ended; `None` when it did not exit within [`EXIT_LIMIT`] (it was then
    /// killed, and that is a leftover too).
    pub status: Option<ExitStatus>,
    /// What it printed (complete only when it reached end of stream).
    pub stdout: String,
    /// What it wrote to stderr.
    pub stderr: String,
    /// Everything found left behind, in words; empty for a clean run.
    pub leftovers: Vec<String>,
}

/// Starts `command` with stdin empty, stdout and stderr on pipes read by threads, and
/// `TAG_VAR=tag` in its environment; through `env --default-signal`, so that SIGHUP, SIGINT
/// and SIGTERM have their default action when it starts even if this test runs with them
/// ignored (a background job of a non-interactive shell ignores SIGINT), as a client started
/// from a terminal has them.
pub fn launch(command: Command, tag: &str) -> Launched {
    let shm_before = dev_shm();
    let mut wrapped = Command::new("env");
    wrapped.arg("--default-signal=HUP,INT,TERM").arg(command.get_program());
    wrapped.args(command.get_args());
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    let mut child = wrapped
        .env(TAG_VAR, tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {wrapped:?}: {e}"));
    let read = |mut pipe: Box<dyn Read + Send>| {
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(String::from_utf8_lossy(&bytes).into_owned());
        });
        receiver
    };
    let stdout = read(Box::new(child.stdout.take().expect("stdout")));
    let stderr = read(Box::new(child.stderr.take().expect("stderr")));
    Launched { child, tag: tag.to_owned(), stdout, stderr, shm_before }
}

impl Launched {
    /// The client's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The tag of this run.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// True while the client has not exited.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends `signal` to the client (when given), waits up to [`EXIT_LIMIT`] for it to exit,
    /// then up to [`SETTLE`] for the run to leave nothing; returns what was found, having
    /// killed it.
    pub fn end(mut self, signal: Option<Signal>) -> Ending {
        let mut leftovers = Vec::new();
        if let Some(signal) = signal {
            let _ = kill(Pid::from_raw(self.child.id() as i32), signal);
        }
        let until = Instant::now() + EXIT_LIMIT;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(5)),
                _ => {
                    leftovers.push(format!(
                        "the client did not exit within {EXIT_LIMIT:?} of {signal:?}"
                    ));
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
            }
        };
        let settled = Instant::now() + SETTLE;
        let mut stdout = None;
        let mut stderr = None;
        loop {
            let left = tagged(&self.tag);
            stdout = stdout.or_else(|| self.stdout.try_recv().ok());
            stderr = stderr.or_else(|| self.stderr.try_recv().ok());
            if left.is_empty() && stdout.is_some() && stderr.is_some() {
                break;
            }
            if Instant::now() >= settled {
                for process in &left {
                    let shared = shared_memory_of(process.pid);
                    leftovers.push(format!(
                        "pid {} (state {}, parent {}) `{}`{}",
                        process.pid,
                        process.state,
                        process.ppid,
                        process.cmdline,
                        if shared.is_empty() {
                            String::new()
                        } else {
                            format!(", holding {}", shared.join("; "))
                        }
                    ));
                }
                if stdout.is_none() {
                    leftovers.push(format!("stdout still open {SETTLE:?} after the exit"));
                }
                if stderr.is_none() {
                    leftovers.push(format!("stderr still open {SETTLE:?} after the exit"));
                }
                break;
            }
            thread::sleep(Duration::from_millis(5));
        }
        let new_shm: Vec<String> = dev_shm().difference(&self.shm_before).cloned().collect();
        if !new_shm.is_empty() {
            leftovers.push(format!("new in /dev/shm: {new_shm:?}"));
        }
        // Whatever is left goes now, so that the next run starts clean.
        for process in tagged(&self.tag) {
            let pid = Pid::from_raw(process.pid);
            let _ = kill(pid, Signal::SIGKILL);
            let _ = kill(pid, Signal::SIGCONT);
        }
        let stdout = stdout
            .or_else(|| self.stdout.recv_timeout(Duration::from_secs(2)).ok())
            .unwrap_or_default();
        let stderr = stderr
            .or_else(|| self.stderr.recv_timeout(Duration::from_secs(2)).ok())
            .unwrap_or_default();
        Ending { status, stdout, stderr, leftovers }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        // Only when a test panicked before `end`: nothing of the run may outlive the test.
        let _ = self.child.kill();
        let _ = self.child.wait();
        for process in tagged(&self.tag) {
            let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
        }
    }
}

/// The line a leftover test prints for `benches/leftovers.sh`: `leftovers: KIND SIGNAL: N
/// runs, M left something behind`, then each finding.
pub fn summary(kind: &str, how: &str, endings: &[Ending]) -> String {
    let dirty: Vec<&Ending> = endings.iter().filter(|e| !e.leftovers.is_empty()).collect();
    let mut text = format!(
        "leftovers: {kind} {how}: {} runs, {} left something behind",
        endings.len(),
        dirty.len()
    );
    for ending in dirty {
        text.push_str(&format!("\n  {:?}: {}", ending.status, ending.leftovers.join("; ")));
    }
    text
}
