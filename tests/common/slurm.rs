//! A throw-away two-node Slurm cluster on this machine, for the tests of the `srun` route.
//!
//! [`Cluster::start`] makes two network namespaces of its own — node `n0` and node `n1`,
//! joined by a veth pair with the addresses [`N0_ADDR`] and [`N1_ADDR`] (a private range that
//! exists only inside these two namespaces: nothing is added to the machine's own network) —
//! and starts, with a configuration of its own in a temporary directory:
//!
//! - `munged` (its own key and socket), `slurmctld` and the `slurmd` of `n0`, in `n0`'s
//!   namespace;
//! - the `slurmd` of `n1` in `n1`'s namespace and a UTS namespace with the host name `n1`.
//!
//! Each daemon is entered with `nsenter --net=…` (`ip netns exec` would remount `/sys`
//! without the cgroup filesystem that `slurmd` reads). The ports are Slurm's usual 6817
//! (`slurmctld`) and 6818 (`slurmd`): free by construction, in namespaces that hold nothing
//! else. Without systemd or cgroups, tasks are tracked through `/proc`
//! (`ProctrackType=proctrack/linuxproc`, `TaskPlugin=task/none`). A client reaches the cluster
//! from `n0`: [`Cluster::command_on_n0`] for a program, [`Cluster::on_n0`] for code of the
//! test itself, on a thread that has joined `n0`'s network namespace.
//!
//! Nothing outlives the guard: its `Drop` terminates every process in the two namespaces —
//! the daemons, the `slurmstepd`s and the tasks they started, a client started in `n0` —
//! SIGKILL after a grace period, deletes the namespaces (and with them the veth pair) and
//! the directory; and a watcher process does the same if this test process dies without
//! dropping the guard (a watchdog's abort, say). Every step is printed, so a failing test's
//! output says what was started.
//!
//! When Slurm, munge or the namespace tools are not installed, or network namespaces cannot
//! be created (not root, a sandbox), [`cluster_or_skip`] prints `skipped: …` and the test
//! passes, unless `PEERPIPE_REQUIRE_TOOLS=1` (set by `.ci/run`, which installs Slurm and munge
//! and runs as root), when it fails with the same message.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use nix::sched::CloneFlags;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::sshd::REQUIRE_TOOLS_VAR;

/// Node `n0`'s address, inside its namespace only.
pub const N0_ADDR: &str = "10.251.0.1";
/// Node `n1`'s address, inside its namespace only.
pub const N1_ADDR: &str = "10.251.0.2";

/// The programs the cluster needs, and the package that brings each.
const TOOLS: &[(&str, &str)] = &[
    ("munged", "munge"),
    ("slurmctld", "slurmctld"),
    ("slurmd", "slurmd"),
    ("srun", "slurm-client"),
    ("sinfo", "slurm-client"),
    ("squeue", "slurm-client"),
    ("ip", "iproute2"),
    ("nsenter", "util-linux"),
    ("unshare", "util-linux"),
];

/// How long the daemons get to come up with both nodes idle.
const START_LIMIT: Duration = Duration::from_secs(40);

/// How long the processes of the namespaces get between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// Longest life of the watcher that cleans up when the test process is gone: no test runs
/// this long.
const WATCHER_LIMIT_SECS: u32 = 900;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A running two-node cluster; stopped, with everything in it, on drop.
#[derive(Debug)]
pub struct Cluster {
    /// Unique to this cluster: this process's pid and a counter.
    tag: String,
    dir: PathBuf,
    /// The network namespaces of `n0` and `n1` (names under `/run/netns`).
    namespaces: [String; 2],
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
    watcher: Option<Child>,
}

/// The cluster, or `None` (having printed why) when a tool is missing or namespaces cannot
/// be made and tools are not required.
///
/// # Panics
/// When something is missing and `PEERPIPE_REQUIRE_TOOLS=1`, or when the daemons do not
/// come up (with their logs).
pub fn cluster_or_skip() -> Option<Cluster> {
    let missing: Vec<String> = TOOLS
        .iter()
        .filter(|(tool, _)| find_program(tool).is_none())
        .map(|(tool, package)| format!("{tool} ({package})"))
        .collect();
    if !missing.is_empty() {
        let why = format!("not installed: {} (bash .ci/run installs them)", missing.join(", "));
        return skip(&why);
    }
    match Cluster::start() {
        Ok(cluster) => Some(cluster),
        Err(why) => skip(&why),
    }
}

fn skip(why: &str) -> Option<Cluster> {
    let message = format!("skipped: no Slurm cluster: {why}");
    if std::env::var(REQUIRE_TOOLS_VAR).as_deref() == Ok("1") {
        panic!("{message}, and {REQUIRE_TOOLS_VAR}=1 requires it");
    }
    println!("{message}");
    None
}

/// `program`'s path ([`find_program`]), or its bare name when it is nowhere (the caller
/// checked [`TOOLS`] first).
fn tool(program: &str) -> PathBuf {
    find_program(program).unwrap_or_else(|| PathBuf::from(program))
}

/// This process's `PATH` with `/usr/sbin` and `/sbin` after it, for the daemons and `ip`.
fn path_with_sbin() -> std::ffi::OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/sbin"].map(PathBuf::from));
    std::env::join_paths(dirs).unwrap_or(path)
}

/// The path of `program` on `PATH`, or in `/usr/sbin` and `/sbin` (daemons, for a `PATH`
/// without them).
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from));
    dirs.into_iter()
        .map(|dir| dir.join(program))
        .find(|p| fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

impl Cluster {
    /// Makes the namespaces and starts the daemons; waits until both nodes are idle.
    ///
    /// # Errors
    /// Why the namespaces could not be made (the caller skips or fails).
    ///
    /// # Panics
    /// When the daemons do not come up, with their logs.
    pub fn start() -> Result<Cluster, String> {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}x{n}", std::process::id());
        let dir = std::env::temp_dir().join(format!("peerpipe-slurm-{tag}"));
        let _ = fs::remove_dir_all(&dir);
        for sub in ["state", "spool-n0", "spool-n1"] {
            fs::create_dir_all(dir.join(sub)).expect("create the cluster's directories");
        }
        let namespaces = [format!("ppslurm{tag}n0"), format!("ppslurm{tag}n1")];
        let mut cluster = Cluster {
            tag,
            conf: dir.join("slurm.conf"),
            dir,
            namespaces,
            daemons: Vec::new(),
            watcher: None,
        };
        // The watcher first: from here on, whatever is made is unmade even if this process
        // is killed.
        cluster.watcher = Some(cluster.watch());
        cluster.make_network()?;
        cluster.start_daemons();
        Ok(cluster)
    }

    /// The configuration file, for `SLURM_CONF`.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// `/run/netns/NAME` of node `node` (0 or 1).
    pub fn netns_path(&self, node: usize) -> PathBuf {
        Path::new("/run/netns").join(&self.namespaces[node])
    }

    /// `program args…` run in `n0`'s network namespace (`nsenter --net=…`, which execs it, so
    /// the child's pid is the program's), with `SLURM_CONF` set.
    pub fn command_on_n0(&self, program: &str) -> Command {
        let mut command = Command::new(tool("nsenter"));
        command.arg(format!("--net={}", self.netns_path(0).display())).arg("--").arg(program);
        command.env("SLURM_CONF", &self.conf).env("PATH", path_with_sbin());
        command
    }

    /// A shell line prefix that runs `srun` against this cluster from `n0`: `env
    /// SLURM_CONF=… srun`.
    pub fn srun(&self) -> String {
        format!("env SLURM_CONF={} srun", self.conf.display())
    }

    /// Runs `f` on a thread that has joined `n0`'s network namespace: the sockets it opens
    /// and the processes it spawns are on node `n0`.
    pub fn on_n0<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = self.netns_path(0);
        thread::scope(|scope| {
            let joined = scope.spawn(move || {
                let ns = fs::File::open(&path).expect("open n0's namespace");
                nix::sched::setns(ns, CloneFlags::CLONE_NEWNET).expect("join n0's namespace");
                f()
            });
            joined.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }

    /// Whether process `pid` is in node `node`'s network namespace.
    pub fn runs_on(&self, pid: u32, node: usize) -> bool {
        let ns = fs::metadata(self.netns_path(node)).map(|m| m.ino()).ok();
        ns.is_some() && net_namespace_of(pid) == ns
    }

    /// Pids of the live processes in node `node`'s namespace whose command line contains
    /// `needle`.
    pub fn processes_on(&self, node: usize, needle: &str) -> Vec<u32> {
        let Ok(ns) = fs::metadata(self.netns_path(node)).map(|m| m.ino()) else {
            return Vec::new();
        };
        all_pids()
            .into_iter()
            .filter(|&pid| net_namespace_of(pid) == Some(ns) && alive(pid))
            .filter(|&pid| {
                let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(needle)
            })
            .collect()
    }

    /// `squeue`'s lines for this cluster (empty when nothing is queued or running).
    pub fn squeue(&self) -> String {
        let out = self.command_on_n0("squeue").args(["-h", "-o", "%i %j %T %N"]).output();
        let out = out.expect("run squeue");
        assert!(out.status.success(), "squeue: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Waits up to `limit` for the queue to be empty; returns what is left.
    pub fn wait_queue_empty(&self, limit: Duration) -> String {
        let until = Instant::now() + limit;
        loop {
            let left = self.squeue();
            if left.is_empty() || Instant::now() >= until {
                return left;
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits up to `limit` for no process whose command line contains `needle` to be left on
    /// either node and the queue to be empty (polling every 50 ms); returns what is left.
    pub fn wait_nothing_left(&self, needle: &str, limit: Duration) -> (Vec<u32>, String) {
        let until = Instant::now() + limit;
        loop {
            let processes: Vec<u32> =
                (0..2).flat_map(|node| self.processes_on(node, needle)).collect();
            let queue = self.squeue();
            if (processes.is_empty() && queue.is_empty()) || Instant::now() >= until {
                return (processes, queue);
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// The daemons' logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for name in ["munged.log", "slurmctld.log", "slurmd-n0.log", "slurmd-n1.log"] {
            let log = fs::read_to_string(self.dir.join(name)).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            text.push_str(&format!("--- {name} (last lines)\n"));
            for line in tail.iter().rev() {
                text.push_str(line);
                text.push('\n');
            }
        }
        text
    }

    fn make_network(&self) -> Result<(), String> {
        let [n0, n1] = &self.namespaces;
        // Made inside n0 and its peer moved to n1: the pair never exists in the machine's
        // own namespace.
        let (v0, v1) = (format!("ppv{}a", self.tag), format!("ppv{}b", self.tag));
        let (a0, a1) = (format!("{N0_ADDR}/24"), format!("{N1_ADDR}/24"));
        let steps: [&[&str]; 10] = [
            &["netns", "add", n0],
            &["netns", "add", n1],
            &["-n", n0, "link", "add", &v0, "type", "veth", "peer", "name", &v1],
            &["-n", n0, "link", "set", &v1, "netns", n1],
            &["-n", n0, "link", "set", "lo", "up"],
            &["-n", n1, "link", "set", "lo", "up"],
            &["-n", n0, "addr", "add", &a0, "dev", &v0],
            &["-n", n1, "addr", "add", &a1, "dev", &v1],
            &["-n", n0, "link", "set", &v0, "up"],
            &["-n", n1, "link", "set", &v1, "up"],
        ];
        for args in steps {
            let out = Command::new(tool("ip")).args(args).stdin(Stdio::null()).output();
            let out = out.map_err(|e| format!("cannot run ip: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "network namespaces cannot be made here: `ip {}` failed: {}",
                    args.join(" "),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        println!("slurm: namespaces {n0} ({N0_ADDR}, {v0}) and {n1} ({N1_ADDR}, {v1})");
        Ok(())
    }

    fn start_daemons(&mut self) {
        let key = self.dir.join("munge.key");
        fs::write(&key, random_bytes(1024)).expect("write the munge key");
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).expect("chmod the key");
        let socket = self.dir.join("munge.sock");
        let d = self.dir.display().to_string();
        let munged = [
            "munged".to_owned(),
            "--foreground".into(),
            "--force".into(),
            format!("--key-file={}", key.display()),
            format!("--socket={}", socket.display()),
            format!("--pid-file={d}/munged.pid"),
            format!("--log-file={d}/munged.log"),
            format!("--seed-file={d}/munged.seed"),
        ];
        self.daemon("munged", 0, &munged, None);
        self.wait_for(|_| socket.exists(), "munged's socket");
        fs::write(&self.conf, self.config_text(&socket)).expect("write slurm.conf");
        let conf = self.conf.display().to_string();
        self.daemon("slurmctld", 0, &["slurmctld".into(), "-D".into(), "-i".into()], None);
        let slurmd = |node: &str| -> [String; 5] {
            ["slurmd".into(), "-D".into(), "-f".into(), conf.clone(), format!("-N{node}")]
        };
        self.daemon("slurmd n0", 0, &slurmd("n0"), None);
        self.daemon("slurmd n1", 1, &slurmd("n1"), Some("n1"));
        let idle = |this: &Cluster| {
            let out = this.command_on_n0("sinfo").args(["-h", "-N", "-o", "%N %T"]).output();
            let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
            let text = text.unwrap_or_default();
            text.lines().filter(|l| l.ends_with(" idle")).count() == 2
        };
        self.wait_for(idle, "both nodes idle in sinfo");
        println!("slurm: cluster up, SLURM_CONF={conf}");
    }

    /// Starts `argv` in node `node`'s namespace (and a UTS namespace named `hostname`), in a
    /// process group of its own, stdout and stderr to `DIR/NAME.out`.
    fn daemon(&mut self, name: &'static str, node: usize, argv: &[String], hostname: Option<&str>) {
        let out = fs::File::create(self.dir.join(format!("{}.out", name.replace(' ', "-"))))
            .expect("create a daemon's output file");
        let mut command = Command::new(tool("nsenter"));
        command.arg(format!("--net={}", self.netns_path(node).display())).arg("--");
        if let Some(hostname) = hostname {
            // A UTS namespace of its own, named before the daemon starts.
            let line = format!("hostname {hostname} && exec \"$@\"");
            command.args(["unshare", "--uts", "sh", "-c", &line, "sh"]);
        }
        command.args(argv).env("SLURM_CONF", &self.conf).env("PATH", path_with_sbin());
        command.stdin(Stdio::null()).stdout(out.try_clone().expect("dup")).stderr(out);
        command.process_group(0);
        let child = command.spawn().unwrap_or_else(|e| panic!("start {name}: {e}"));
        println!("slurm: started {name} (pid {}) on n{node}: {}", child.id(), argv.join(" "));
        self.daemons.push((name, child));
    }

    fn wait_for(&mut self, mut ready: impl FnMut(&Cluster) -> bool, what: &str) {
        let until = Instant::now() + START_LIMIT;
        while !ready(self) {
            let exited = self.daemons.iter_mut().find_map(|(name, child)| {
                child.try_wait().ok().flatten().map(|status| (*name, status))
            });
            if let Some((name, status)) = exited {
                panic!("{name} exited ({status}) before {what}\n{}", self.logs());
            }
            assert!(Instant::now() < until, "no {what} within {START_LIMIT:?}\n{}", self.logs());
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn config_text(&self, munge_socket: &Path) -> String {
        let host = fs::read_to_string("/proc/sys/kernel/hostname").expect("the host name");
        format!(
            "ClusterName=peerpipe\n\
             SlurmctldHost={host}({N0_ADDR})\n\
             SlurmctldPort=6817\n\
             SlurmdPort=6818\n\
             SlurmUser=root\n\
             SlurmdUser=root\n\
             AuthType=auth/munge\n\
             CredType=cred/munge\n\
             AuthInfo=socket={socket}\n\
             StateSaveLocation={d}/state\n\
             SlurmdSpoolDir={d}/spool-%n\n\
             SlurmctldPidFile={d}/slurmctld.pid\n\
             SlurmdPidFile={d}/slurmd-%n.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\n\
             SlurmdLogFile={d}/slurmd-%n.log\n\
             ProctrackType=proctrack/linuxproc\n\
             TaskPlugin=task/none\n\
             JobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\n\
             SelectType=select/cons_tres\n\
             SelectTypeParameters=CR_Core\n\
             SchedulerType=sched/builtin\n\
             MpiDefault=none\n\
             SwitchType=switch/none\n\
             ReturnToService=2\n\
             SlurmdParameters=config_overrides\n\
             KillWait=2\n\
             NodeName=n0 NodeAddr={N0_ADDR} CPUs=8 RealMemory=1000 State=UNKNOWN\n\
             NodeName=n1 NodeAddr={N1_ADDR} CPUs=8 RealMemory=1000 State=UNKNOWN\n\
             PartitionName=peerpipe Nodes=n0,n1 Default=YES MaxTime=INFINITE State=UP \
             OverSubscribe=YES\n",
            host = host.trim().split('.').next().unwrap_or_default(),
            socket = munge_socket.display(),
            d = self.dir.display(),
        )
    }

    /// A shell that, once this test process is gone (or after [`WATCHER_LIMIT_SECS`]), kills
    /// every process in the two namespaces and deletes them and the directory.
    fn watch(&self) -> Child {
        let owner = std::process::id();
        let [n0, n1] = &self.namespaces;
        let script = format!(
            "i=0; while [ $i -lt {WATCHER_LIMIT_SECS} ] && kill -0 {owner} 2>/dev/null; do \
             sleep 1; i=$((i+1)); done; \
             for ns in {n0} {n1}; do ip netns pids $ns 2>/dev/null | xargs -r kill -KILL; done; \
             sleep 1; ip netns del {n0} 2>/dev/null; ip netns del {n1} 2>/dev/null; \
             rm -rf '{dir}'",
            dir = self.dir.display()
        );
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .env("PATH", path_with_sbin())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn the cluster's watcher")
    }

    /// Every process in the two namespaces, as long as they exist.
    fn inside(&self) -> Vec<u32> {
        let inodes: Vec<u64> = (0..2)
            .filter_map(|node| fs::metadata(self.netns_path(node)).ok().map(|m| m.ino()))
            .collect();
        all_pids()
            .into_iter()
            .filter(|&pid| net_namespace_of(pid).is_some_and(|ns| inodes.contains(&ns)))
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let signal_all = |this: &Cluster, signal| {
            for pid in this.inside() {
                let _ = kill(Pid::from_raw(pid as i32), signal);
            }
        };
        signal_all(self, Signal::SIGTERM);
        let until = Instant::now() + STOP_GRACE;
        while Instant::now() < until && self.inside().iter().any(|&pid| alive(pid)) {
            for (_, child) in &mut self.daemons {
                let _ = child.try_wait();
            }
            thread::sleep(Duration::from_millis(50));
        }
        signal_all(self, Signal::SIGKILL);
        for (name, child) in &mut self.daemons {
            let _ = child.kill();
            if let Ok(status) = child.wait() {
                println!("slurm: {name} ended ({status})");
            }
        }
        // Zombies of processes whose parent is gone are reaped by init; wait until the
        // namespaces hold nothing, then delete them.
        let until = Instant::now() + STOP_GRACE;
        while Instant::now() < until && self.inside().iter().any(|&pid| alive(pid)) {
            thread::sleep(Duration::from_millis(20));
        }
        for ns in &self.namespaces {
            let _ =
                Command::new(tool("ip")).args(["netns", "del", ns]).stderr(Stdio::null()).status();
        }
        if let Some(mut watcher) = self.watcher.take() {
            let _ = watcher.kill();
            let _ = watcher.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
        println!("slurm: cluster stopped, namespaces {:?} deleted", self.namespaces);
    }
}

/// Whether network namespace `name` (under `/run/netns`) exists.
pub fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

impl Cluster {
    /// The names of the two namespaces.
    pub fn namespaces(&self) -> &[String; 2] {
        &self.namespaces
    }

    /// The cluster's directory (configuration, logs, spool).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn random_bytes(n: usize) -> Vec<u8> {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("read /dev/urandom");
    bytes
}

fn all_pids() -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok())).collect()
}

/// The inode of process `pid`'s network namespace (`/proc/PID/ns/net`).
fn net_namespace_of(pid: u32) -> Option<u64> {
    fs::metadata(format!("/proc/{pid}/ns/net")).ok().map(|m| m.ino())
}

fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rfind(')').is_some_and(|at| stat[at + 1..].trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
