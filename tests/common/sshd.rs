//! A throw-away OpenSSH server on 127.0.0.1 for the tests of the `ssh` route.
//!
//! [`Sshd::start`] writes a host key, a user key and a config of its own into a temporary
//! directory and runs `sshd -f CONFIG -D -e` listening on 127.0.0.1 on a free port: no
//! system file is read or changed (only `/run/sshd`, sshd's privilege-separation directory,
//! is created when missing). [`Sshd::ssh_line`] gives the client command line that logs in
//! with that key as the current user (root here) without touching `~/.ssh`.
//!
//! Nothing outlives the guard: its `Drop` terminates the daemon and every process descended
//! from it (the per-connection sshd processes, which start sessions of their own, and the
//! remote commands), SIGKILL after a grace period; and a watcher process kills the daemon
//! if this test process dies without dropping the guard (a watchdog's abort, say).
//!
//! When `sshd` is not installed a test prints `skipped: sshd not installed (bash .ci/run
//! installs it)` and passes, unless `PEERPIPE_REQUIRE_TOOLS=1` (set by `.ci/run`), when it
//! fails with the same message.

use std::fs;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Environment variable that makes a missing tool a failure instead of a skip.
pub const REQUIRE_TOOLS_VAR: &str = "PEERPIPE_REQUIRE_TOOLS";

/// Where Debian's openssh-server puts the daemon.
const SSHD: &str = "/usr/sbin/sshd";

/// How long the daemon gets to accept connections after it starts.
const START_LIMIT: Duration = Duration::from_secs(10);

/// Longest life of the watcher that kills the daemon when the test process is gone: no test
/// runs this long.
const WATCHER_LIMIT_SECS: u32 = 900;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A running `sshd` of the test's own; stopped, with everything it started, on drop.
#[derive(Debug)]
pub struct Sshd {
    dir: PathBuf,
    port: u16,
    daemon: Child,
    watcher: Child,
    /// A tag unique to this daemon, put in the environment of remote commands built by
    /// [`Sshd::remote`], so a test can find them in `/proc`.
    tag: String,
}

/// The daemon, or `None` (having printed why) when `sshd` is not installed and tools are
/// not required.
///
/// # Panics
/// When `sshd` is missing and `PEERPIPE_REQUIRE_TOOLS=1`, or when the daemon cannot start.
pub fn sshd_or_skip() -> Option<Sshd> {
    let installed = Path::new(SSHD).is_file()
        && Command::new("ssh").arg("-V").stderr(Stdio::null()).status().is_ok()
        && Command::new("ssh-keygen")
            .arg("-?")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
    if !installed {
        let message = "skipped: sshd not installed (bash .ci/run installs it)";
        if std::env::var(REQUIRE_TOOLS_VAR).as_deref() == Ok("1") {
            panic!("{message}, and {REQUIRE_TOOLS_VAR}=1 requires it");
        }
        println!("{message}");
        return None;
    }
    Some(Sshd::start())
}

impl Sshd {
    /// Starts a daemon on a free port of 127.0.0.1.
    ///
    /// # Panics
    /// When the keys cannot be made or the daemon does not accept connections in time.
    pub fn start() -> Sshd {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}-{n}", std::process::id());
        let dir = std::env::temp_dir().join(format!("peerpipe-sshd-{tag}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create the sshd directory");
        for key in ["host_key", "user_key"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "peerpipe-test", "-f"])
                .arg(dir.join(key))
                .stdin(Stdio::null())
                .status()
                .expect("run ssh-keygen");
            assert!(status.success(), "ssh-keygen for {key}: {status}");
        }
        fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).expect("authorized_keys");
        // sshd refuses to start without its privilege-separation directory.
        let _ = fs::create_dir_all("/run/sshd");
        let mut last_log = String::new();
        for _attempt in 0..5 {
            let port = free_port();
            match launch(&dir, port) {
                Ok((daemon, watcher)) => return Sshd { dir, port, daemon, watcher, tag },
                Err(log) => last_log = log,
            }
        }
        let _ = fs::remove_dir_all(&dir);
        panic!("sshd did not start on 5 ports; its last log:\n{last_log}");
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The tag put in the environment (`PEERPIPE_SSH_TEST=TAG`) of commands built by
    /// [`Sshd::remote`].
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// `ssh … root@127.0.0.1` with this daemon's key and port, no config file, no known
    /// hosts, no prompts; the remote command is appended by the caller.
    pub fn ssh_prefix(&self) -> String {
        format!(
            "ssh -F /dev/null -i {key} -p {port} -o StrictHostKeyChecking=no \
             -o UserKnownHostsFile=/dev/null -o BatchMode=yes -o LogLevel=ERROR \
             -o ConnectTimeout=10 root@127.0.0.1",
            key = self.dir.join("user_key").display(),
            port = self.port,
        )
    }

    /// The remote command line `env PEERPIPE_SSH_TEST=TAG PROGRAM ARGS`, tagged so that
    /// [`Sshd::remote_pids`] finds it.
    pub fn remote(&self, program_and_args: &str) -> String {
        format!("env PEERPIPE_SSH_TEST={} {program_and_args}", self.tag)
    }

    /// `exec ssh … root@127.0.0.1 env PEERPIPE_SSH_TEST=TAG PROGRAM ARGS`: a shell line for
    /// `--spawn` or `Peer::spawn_shell` (`exec`, so the spawned child is the ssh client).
    pub fn ssh_line(&self, program_and_args: &str) -> String {
        format!("exec {} {}", self.ssh_prefix(), self.remote(program_and_args))
    }

    /// Pids of the live remote commands started through [`Sshd::remote`] of this daemon.
    pub fn remote_pids(&self) -> Vec<u32> {
        let marker = format!("PEERPIPE_SSH_TEST={}", self.tag);
        let mut pids = Vec::new();
        let Ok(entries) = fs::read_dir("/proc") else { return pids };
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(environ) = fs::read(format!("/proc/{pid}/environ")) else { continue };
            let tagged = environ.split(|&b| b == 0).any(|var| var == marker.as_bytes());
            let zombie = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rfind(')').map(|at| s[at + 1..].trim_start().starts_with('Z')))
                .unwrap_or(true);
            if tagged && !zombie {
                pids.push(pid);
            }
        }
        pids
    }

    /// Waits up to `limit` for every remote command of this daemon to be gone; returns the
    /// pids still there.
    pub fn wait_remote_gone(&self, limit: Duration) -> Vec<u32> {
        let until = Instant::now() + limit;
        loop {
            let left = self.remote_pids();
            if left.is_empty() || Instant::now() >= until {
                return left;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The daemon's log so far (its stderr), for failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        // Per-connection daemons start sessions of their own, so the process group does
        // not reach them: collect the whole tree first, while the parent links still hold.
        let mut tree = descendants(self.daemon.id());
        tree.extend(self.remote_pids());
        let daemon = Pid::from_raw(self.daemon.id() as i32);
        let _ = nix::sys::signal::killpg(daemon, Signal::SIGTERM);
        for &pid in &tree {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGCONT);
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let daemon_gone = self.daemon.try_wait().ok().flatten().is_some();
            if daemon_gone && tree.iter().all(|&pid| !alive(pid)) {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = nix::sys::signal::killpg(daemon, Signal::SIGKILL);
        for &pid in &tree {
            if alive(pid) {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = self.watcher.kill();
        let _ = self.watcher.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Runs the daemon on `port` and waits until it accepts connections; on failure stops it
/// and returns its log.
fn launch(dir: &Path, port: u16) -> Result<(Child, Child), String> {
    let config = dir.join("sshd_config");
    fs::write(&config, config_text(dir, port)).expect("write sshd_config");
    let log = fs::File::create(dir.join("sshd.log")).expect("sshd.log");
    let mut daemon = Command::new(SSHD)
        .arg("-f")
        .arg(&config)
        .args(["-D", "-e"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0)
        .spawn()
        .expect("spawn sshd");
    let mut watcher = watch(daemon.id());
    let until = Instant::now() + START_LIMIT;
    while Instant::now() < until {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((daemon, watcher));
        }
        if daemon.try_wait().expect("try_wait sshd").is_some() {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = daemon.kill();
    let _ = daemon.wait();
    let _ = watcher.kill();
    let _ = watcher.wait();
    Err(fs::read_to_string(dir.join("sshd.log")).unwrap_or_default())
}

fn config_text(dir: &Path, port: u16) -> String {
    format!(
        "ListenAddress 127.0.0.1:{port}\n\
         HostKey {dir}/host_key\n\
         AuthorizedKeysFile {dir}/authorized_keys\n\
         PidFile {dir}/sshd.pid\n\
         StrictModes no\n\
         UsePAM no\n\
         PermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         LoginGraceTime 20\n\
         MaxStartups 30\n\
         MaxSessions 30\n\
         X11Forwarding no\n\
         AllowTcpForwarding no\n\
         LogLevel ERROR\n",
        dir = dir.display()
    )
}

/// A port that was free a moment ago on 127.0.0.1.
fn free_port() -> u16 {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// A shell that kills `daemon` (and its process group) once this test process is gone, or
/// after [`WATCHER_LIMIT_SECS`] at the latest: a bounded loop.
fn watch(daemon: u32) -> Child {
    let owner = std::process::id();
    let script = format!(
        "i=0; while [ $i -lt {WATCHER_LIMIT_SECS} ] && kill -0 {owner} 2>/dev/null; do \
         sleep 1; i=$((i+1)); done; kill -TERM -{daemon} {daemon} 2>/dev/null; sleep 1; \
         kill -KILL -{daemon} {daemon} 2>/dev/null"
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn the sshd watcher")
}

fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rfind(')').is_some_and(|at| stat[at + 1..].trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Every process descended from `root` (children, their children, …), by parent links in
/// `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            let Some(at) = stat.rfind(')') else { continue };
            let ppid = stat[at + 1..].split_whitespace().nth(1).and_then(|s| s.parse().ok());
            if let Some(ppid) = ppid {
                parents.push((pid, ppid));
            }
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parents.iter().filter(|&&(_, p)| p == parent).map(|&(pid, _)| pid));
        i += 1;
    }
    found.remove(0);
    found
}
