//! What the running system says of where threads run: [`Os`] for [`super::Placement`], and
//! [`Confinement`] for [`super::PeerWatch`].

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::Cpus;

/// The running system: this thread's CPU and affinity, the peer's last CPU and state from
/// `/proc/PID/stat`, the runnable tasks from `/proc/loadavg`, the CPU times from `/proc/stat`.
/// Reads them into buffers on the stack: a look allocates nothing.
///
/// `/proc/loadavg` and `/proc/stat` are opened once per process, when the first `Os` is made,
/// kept open (close-on-exec) and read again from their start, where the kernel writes them
/// afresh: that costs 1.9 µs for `/proc/loadavg` against 7.0 µs to open, read and close it
/// (measured on a 2-core AMD EPYC machine), and a look sits inside a round trip. The peer's
/// `/proc/PID/stat` is opened at each read (9.7 µs there), or, for an `Os` made by
/// [`Os::keeping_the_peers_file`] (as a [`super::PeerWatch`] under
/// [`crate::transport::Wait::Auto`] makes it), once and kept (4.5 µs a read).
#[derive(Debug)]
pub struct Os {
    peer_stat: PathBuf,
    /// The peer's `/proc/PID/stat`, when kept open.
    kept: Option<File>,
}

impl Os {
    /// The running system, with process `peer` as the peer. Opens the process-wide files if
    /// no `Os` did before; the peer's file is opened at each read.
    pub fn new(peer: u32) -> Os {
        let _ = (shared(&LOADAVG, "/proc/loadavg"), shared(&STAT, "/proc/stat"));
        Os { peer_stat: format!("/proc/{peer}/stat").into(), kept: None }
    }

    /// As [`Os::new`], with the peer's `/proc/PID/stat` opened now and kept open until the
    /// `Os` is dropped: one descriptor (read-only, close-on-exec) for reads that cost half as
    /// much. A kept file stays that process's: once the peer is gone it reads nothing, even if
    /// its pid is reused. When it cannot be opened, reads open it as [`Os::new`]'s do.
    pub fn keeping_the_peers_file(peer: u32) -> Os {
        let mut os = Os::new(peer);
        os.kept = File::open(&os.peer_stat).ok();
        os
    }
}

/// `/proc/loadavg`, once opened (`None` inside when it could not be).
static LOADAVG: OnceLock<Option<File>> = OnceLock::new();
/// `/proc/stat`, once opened.
static STAT: OnceLock<Option<File>> = OnceLock::new();

/// A process-wide `/proc` file, opened at the first call.
fn shared(file: &'static OnceLock<Option<File>>, path: &str) -> Option<&'static File> {
    file.get_or_init(|| File::open(path).ok()).as_ref()
}

/// Reads the start of a small file (a `/proc` entry) into `buf`: the text read, if any.
fn read_small<'b>(path: &std::path::Path, buf: &'b mut [u8]) -> Option<&'b str> {
    use std::io::Read;
    let n = File::open(path).ok()?.read(buf).ok()?;
    std::str::from_utf8(&buf[..n]).ok()
}

/// Reads an open `/proc` file from its start into `buf`: the text read, if any.
fn read_at_start<'b>(file: &File, buf: &'b mut [u8]) -> Option<&'b str> {
    let n = file.read_at(buf, 0).ok()?;
    if n == 0 {
        return None;
    }
    std::str::from_utf8(&buf[..n]).ok()
}

/// Whether more tasks are runnable on the machine (`/proc/loadavg`) than this thread has CPUs
/// to run on (its affinity mask): other work wants the CPUs, and a longer spin would take one
/// from it. `false` when either cannot be read. Allocates nothing.
pub fn crowded() -> bool {
    let Some(runnable) = runnable() else { return false };
    let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) else {
        return false;
    };
    let allowed = (0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false));
    runnable > allowed.count()
}

/// The runnable tasks of the machine at this instant (`/proc/loadavg`), this thread among them.
fn runnable() -> Option<usize> {
    // "0.52 0.58 0.59 2/467 12345": the fourth field is runnable/existing tasks.
    let mut buf = [0u8; 128];
    let loadavg = read_at_start(shared(&LOADAVG, "/proc/loadavg")?, &mut buf)?;
    let field = loadavg.split_ascii_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

impl Cpus for Os {
    fn current(&mut self) -> Option<usize> {
        nix::sched::sched_getcpu().ok()
    }

    fn peer(&mut self) -> Option<(usize, bool)> {
        let mut buf = [0u8; 1024];
        let stat = match &self.kept {
            Some(file) => read_at_start(file, &mut buf)?,
            None => read_small(&self.peer_stat, &mut buf)?,
        };
        // The fields after the command name (which may hold spaces and parentheses, so the
        // last `)` ends it) start at field 3, the state (`R`: running or runnable); field 39
        // is `processor`.
        let mut fields = stat[stat.rfind(')')? + 1..].split_ascii_whitespace();
        let runnable = fields.next()? == "R";
        let cpu = fields.nth(39 - 4)?.parse().ok()?;
        Some((cpu, runnable))
    }

    fn runnable(&mut self) -> Option<usize> {
        runnable()
    }

    fn allowed(&mut self, cpus: &mut Vec<usize>) {
        cpus.clear();
        if let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
            let count = nix::sched::CpuSet::count();
            cpus.extend((0..count).filter(|&cpu| set.is_set(cpu).unwrap_or(false)));
        }
    }

    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>) {
        times.clear();
        // "cpu3 user nice system idle iowait irq softirq steal guest guest_nice", in ticks;
        // the lines of single CPUs follow the total.
        let mut buf = [0u8; 16 << 10];
        let Some(stat) = shared(&STAT, "/proc/stat").and_then(|f| read_at_start(f, &mut buf))
        else {
            return;
        };
        for line in stat.lines().skip(1).take_while(|line| line.starts_with("cpu")) {
            let mut fields = line.split_ascii_whitespace();
            let Some(cpu) = fields.next().and_then(|name| name[3..].parse().ok()) else { continue };
            let (mut idle, mut total) = (0u64, 0u64);
            // guest and guest_nice are counted in user and nice already.
            for (i, value) in fields.take(8).enumerate() {
                let value: u64 = value.parse().unwrap_or(0);
                total += value;
                if i == 3 || i == 4 {
                    idle += value;
                }
            }
            times.push((cpu, idle, total));
        }
    }

    fn move_to(&mut self, cpu: usize) -> bool {
        use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
        let me = nix::unistd::Pid::from_raw(0);
        let Ok(mask) = sched_getaffinity(me) else { return false };
        let mut only = CpuSet::new();
        if only.set(cpu).is_err() || !mask.is_set(cpu).unwrap_or(false) {
            return false;
        }
        // The kernel moves the calling thread before the first call returns; the second puts
        // the mask back, which leaves it where it now is.
        let moved = sched_setaffinity(me, &only).is_ok();
        let _ = sched_setaffinity(me, &mask);
        moved
    }
}

/// How often [`Confinement`] reads the two affinity masks again while they do not confine the
/// two to one CPU: every second, so that a mask changed while the two run (`taskset -p`) is
/// seen within a second, for two system calls.
pub const CONFINEMENT_RECHECK: Duration = Duration::from_secs(1);

/// How often [`Confinement`] reads them again while they do: every 10 ms. A thread pinned for
/// a moment — `peer` moves its thread to the server's CPU to spawn it, so that the server
/// inherits that CPU, and back — must not keep a connection from spinning for long, and a wait
/// that looks costs a few microseconds at most once per 10 ms.
pub const CONFINED_RECHECK: Duration = Duration::from_millis(10);

/// Whether this thread and its peer may each run on one CPU only, and the same one — both
/// started under `taskset -c 0`, or in a container of one CPU. Then neither can ever find the
/// other running elsewhere, and every microsecond one spins is a microsecond the other waits
/// for the CPU; [`crate::transport::Wait::Auto`] then sleeps at once ([`crate::transport::AutoWait::set_confined`]).
#[derive(Debug)]
pub struct Confinement {
    peer: u32,
    next_check: Option<Instant>,
}

impl Confinement {
    /// Watches this thread and process `peer`, nothing read yet: the first look is due
    /// [`CONFINED_RECHECK`] from now, once a spawn — which may pin the spawning thread to the
    /// new process's CPU for a moment — and its handshake are over.
    pub fn new(peer: u32) -> Confinement {
        Confinement { peer, next_check: Some(Instant::now() + CONFINED_RECHECK) }
    }

    /// At `now`: whether the two are confined to one CPU ([`confined_together`]) when it is
    /// time to look — [`CONFINED_RECHECK`] after [`Confinement::new`], then every
    /// [`CONFINEMENT_RECHECK`], or every [`CONFINED_RECHECK`] while they are — and `None`
    /// between looks.
    pub fn check(&mut self, now: Instant) -> Option<bool> {
        if self.next_check.is_some_and(|at| now < at) {
            return None;
        }
        let confined = confined_together(self.peer);
        let recheck = if confined { CONFINED_RECHECK } else { CONFINEMENT_RECHECK };
        self.next_check = Some(now + recheck);
        Some(confined)
    }
}

/// Whether this thread and process `peer` may each run on exactly one CPU, the same one.
/// `false` when a mask cannot be read (the peer has exited, or belongs to another user).
/// Allocates nothing.
pub fn confined_together(peer: u32) -> bool {
    use nix::sched::{CpuSet, sched_getaffinity};
    let only_cpu = |pid: i32| {
        let set = sched_getaffinity(nix::unistd::Pid::from_raw(pid)).ok()?;
        let mut cpus = (0..CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false));
        let first = cpus.next()?;
        cpus.next().is_none().then_some(first)
    };
    let Ok(peer) = i32::try_from(peer) else { return false };
    matches!((only_cpu(0), only_cpu(peer)), (Some(mine), Some(theirs)) if mine == theirs)
}
