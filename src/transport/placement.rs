//! Moving a waiting thread off the core it shares with its peer, when another core is idle.
//!
//! Two processes that exchange messages over a pipe tend to end up on one core: a pipe write
//! wakes the reader as a *synchronous* wake-up ("I am about to sleep"), so the scheduler puts
//! the reader beside the writer, and once the two take turns on one core nothing makes it
//! move them apart, even with the other cores idle. There they must sleep — [`Wait::Auto`]
//! sees the shared core and stops spinning — and every round trip pays two context switches,
//! where two cores with both sides spinning pay none.
//!
//! So a side allowed to move (the client: `Peer` allows its own side, never the server's, so
//! that the two never chase each other) that waits by sleeping checks, now and then, whether
//! it shares its core with the peer (the peer's last CPU, when its pid is known) and whether
//! another CPU it may run on was idle: at least [`IDLE_ENOUGH`] of its time between two looks
//! at the kernel's per-CPU times (`/proc/stat`) at least [`WINDOW`] apart. If so it moves its
//! thread to the idlest of them — its affinity is set to that CPU and at once restored, so the user's mask
//! stays as it was and only the thread's current CPU changes — and spins again. A *trial*
//! follows, of at least [`TRIAL_WAITS`] waits and [`TRIAL_TIME`]: if spinning stops paying
//! within it, or the thread was preempted there ([`TRIAL_PREEMPTIONS`] involuntary context
//! switches: another task wanted that CPU), the thread moves back to where it was and the
//! next check waits twice as long, from [`FIRST_CHECK`] up to [`MAX_CHECK`].
//!
//! With one CPU allowed, or without `/proc`, nothing moves. Counting the runnable tasks at
//! one instant (`/proc/loadavg`) instead was tried, and moved threads onto CPUs that a busy
//! task held: the tail of the round trip beside one busy thread grew by half.
//!
//! [`Wait::Auto`]: super::Wait::Auto

use std::time::{Duration, Instant};

/// Shortest time between the two looks at the machine before a move: 50 ms, five ticks of
/// the kernel's per-CPU times (counted in hundredths of a second).
pub const WINDOW: Duration = Duration::from_millis(50);

/// Share of the time between the two looks that a CPU must have been idle to be moved to:
/// 80 % (four ticks of five).
pub const IDLE_ENOUGH: f64 = 0.8;

/// Fewest ticks of a CPU's times between the two looks for its idleness to be judged: 4.
const MIN_TICKS: u64 = 4;

/// Fewest waits after a move in which spinning must keep paying for the move to stay: 8.
pub const TRIAL_WAITS: u32 = 8;

/// Shortest trial: 10 ms, a few scheduler ticks, so that a task that wants the CPU moved to
/// has had its turn to preempt this one.
pub const TRIAL_TIME: Duration = Duration::from_millis(10);

/// Involuntary context switches during a trial that fail it: 2 (one may be a kernel thread
/// passing by).
pub const TRIAL_PREEMPTIONS: u64 = 2;

/// Time from the first sleeping wait to the first check: 1 ms (a co-located pair costs a few
/// microseconds per round trip more than a separated one, so a check that finds nothing to
/// do — a few system calls — should not run much more often than this).
pub const FIRST_CHECK: Duration = Duration::from_millis(1);

/// Longest time between two checks: 1 s.
pub const MAX_CHECK: Duration = Duration::from_secs(1);

/// What the placement logic needs of the operating system; [`Os`] is the real one.
pub trait Cpus {
    /// The CPU this thread runs on.
    fn current(&mut self) -> Option<usize>;
    /// The CPU the peer ran on last, when known.
    fn peer(&mut self) -> Option<usize>;
    /// Replaces `cpus` with the CPUs this thread may run on.
    fn allowed(&mut self, cpus: &mut Vec<usize>);
    /// Replaces `times` with `(cpu, idle, total)` for every CPU: the time it spent idle and
    /// in all, in any unit, counted since some fixed point.
    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>);
    /// Involuntary context switches of this thread so far.
    fn preemptions(&mut self) -> Option<u64>;
    /// Moves this thread to `cpu`, leaving its affinity mask as it was. Whether it moved.
    fn move_to(&mut self, cpu: usize) -> bool;
}

#[derive(Clone, Debug)]
enum State {
    /// Waiting for the next check; `first_look` is when the CPU times in `Placement::looked`
    /// were read.
    Settled { first_look: Option<Instant> },
    /// Moved from `from` at `at`; `waits` of the trial have passed.
    Trial { from: usize, at: Instant, waits: u32, preemptions: Option<u64> },
}

/// Where this side's thread runs, and when to look again (see the module documentation).
#[derive(Debug)]
pub struct Placement<C: Cpus> {
    cpus: C,
    state: State,
    /// When the next check may run (`None`: at the first sleeping wait, plus [`FIRST_CHECK`]).
    next_check: Option<Instant>,
    interval: Duration,
    /// The allowed CPUs of the last check, the CPU times of the first look and of the second
    /// (kept, so that a check allocates nothing).
    allowed: Vec<usize>,
    looked: Vec<(usize, u64, u64)>,
    looking: Vec<(usize, u64, u64)>,
    moves: u64,
    moves_back: u64,
}

impl<C: Cpus> Placement<C> {
    /// Placement over `cpus`, nothing checked yet.
    pub fn new(cpus: C) -> Placement<C> {
        Placement {
            cpus,
            state: State::Settled { first_look: None },
            next_check: None,
            interval: FIRST_CHECK,
            allowed: Vec::with_capacity(8),
            looked: Vec::with_capacity(8),
            looking: Vec::with_capacity(8),
            moves: 0,
            moves_back: 0,
        }
    }

    /// Moves made, and moves back after a trial that failed.
    pub fn moves(&self) -> (u64, u64) {
        (self.moves, self.moves_back)
    }

    /// Whether a move is on trial (the waits that end now decide whether it stays).
    pub fn on_trial(&self) -> bool {
        matches!(self.state, State::Trial { .. })
    }

    /// A wait that is about to sleep at once, at `now`: whether this thread just moved to
    /// another CPU (the caller then spins again).
    pub fn before_sleeping(&mut self, now: Instant) -> bool {
        let State::Settled { first_look } = self.state else { return false };
        let due = *self.next_check.get_or_insert(now + FIRST_CHECK);
        if now < due {
            return false;
        }
        let Some(here) = self.cpus.current() else { return self.back_off(now) };
        if self.cpus.peer().is_some_and(|peer| peer != here) {
            // Not sharing a core with the peer: moving cannot help.
            return self.back_off(now);
        }
        self.cpus.allowed(&mut self.allowed);
        if self.allowed.len() < 2 {
            return self.back_off(now);
        }
        if first_look.is_none() {
            self.cpus.times(&mut self.looked);
            self.state = State::Settled { first_look: Some(now) };
            self.next_check = Some(now + WINDOW);
            return false;
        }
        self.cpus.times(&mut self.looking);
        let (before, after) = (&self.looked, &self.looking);
        let idlest = (self.allowed.iter().copied())
            .filter(|&cpu| cpu != here)
            .filter_map(|cpu| {
                let (_, idle0, total0) = before.iter().find(|t| t.0 == cpu)?;
                let (_, idle1, total1) = after.iter().find(|t| t.0 == cpu)?;
                let ticks = total1.checked_sub(*total0)?;
                let idle = idle1.checked_sub(*idle0)?;
                (ticks >= MIN_TICKS).then(|| (cpu, idle as f64 / ticks as f64))
            })
            .filter(|&(_, share)| share >= IDLE_ENOUGH)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((to, _)) = idlest else { return self.back_off(now) };
        let preemptions = self.cpus.preemptions();
        if !self.cpus.move_to(to) {
            return self.back_off(now);
        }
        self.moves += 1;
        self.state = State::Trial { from: here, at: now, waits: 0, preemptions };
        true
    }

    /// A wait ended at `now`; `spinning` is whether [`super::AutoWait`] still spins after it.
    pub fn after_wait(&mut self, now: Instant, spinning: bool) {
        let State::Trial { from, at, waits, preemptions } = &mut self.state else { return };
        *waits += 1;
        let over = *waits >= TRIAL_WAITS && now.duration_since(*at) >= TRIAL_TIME;
        if spinning && !over {
            return;
        }
        let (from, before) = (*from, *preemptions);
        let preempted = match (before, self.cpus.preemptions()) {
            (Some(before), Some(after)) => after.saturating_sub(before) >= TRIAL_PREEMPTIONS,
            _ => false,
        };
        self.state = State::Settled { first_look: None };
        if spinning && !preempted {
            self.interval = FIRST_CHECK;
            self.next_check = None;
            return;
        }
        // Spinning stopped paying where this thread moved to, or another task wanted that
        // CPU: go back to where it was.
        if self.cpus.move_to(from) {
            self.moves_back += 1;
        }
        self.back_off(now);
    }

    /// Schedules the next check twice as far off (up to [`MAX_CHECK`]); returns `false`, for
    /// [`Placement::before_sleeping`].
    fn back_off(&mut self, now: Instant) -> bool {
        self.interval = (self.interval * 2).min(MAX_CHECK);
        self.next_check = Some(now + self.interval);
        self.state = State::Settled { first_look: None };
        false
    }
}

/// The running system: this thread's CPU and affinity, the peer's last CPU from
/// `/proc/PID/stat`, the CPU times from `/proc/stat`. Reads them into buffers on the
/// stack: a check allocates nothing.
#[derive(Debug)]
pub struct Os {
    /// `/proc/PID/stat` of the peer, when its pid is known.
    peer_stat: Option<std::path::PathBuf>,
}

impl Os {
    /// The running system, with the peer's pid when known.
    pub fn new(peer: Option<u32>) -> Os {
        Os { peer_stat: peer.map(|pid| format!("/proc/{pid}/stat").into()) }
    }
}

/// Whether more tasks are runnable on the machine (`/proc/loadavg`) than this thread has CPUs
/// to run on (its affinity mask): other work wants the CPUs, and a longer spin would take one
/// from it. `false` when either cannot be read. Allocates nothing.
pub fn crowded() -> bool {
    // "0.52 0.58 0.59 2/467 12345": the fourth field is runnable/existing tasks.
    let mut buf = [0u8; 128];
    let runnable = read_small(std::path::Path::new("/proc/loadavg"), &mut buf)
        .and_then(|loadavg| loadavg.split_ascii_whitespace().nth(3))
        .and_then(|field| field.split('/').next())
        .and_then(|running| running.parse::<usize>().ok());
    let Some(runnable) = runnable else { return false };
    let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) else {
        return false;
    };
    let allowed = (0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false));
    runnable > allowed.count()
}

/// Reads the start of a small file (a `/proc` entry) into `buf`: the text read, if any.
fn read_small<'b>(path: &std::path::Path, buf: &'b mut [u8]) -> Option<&'b str> {
    use std::io::Read;
    let n = std::fs::File::open(path).ok()?.read(buf).ok()?;
    std::str::from_utf8(&buf[..n]).ok()
}

impl Cpus for Os {
    fn current(&mut self) -> Option<usize> {
        nix::sched::sched_getcpu().ok()
    }

    fn peer(&mut self) -> Option<usize> {
        let mut buf = [0u8; 1024];
        let stat = read_small(self.peer_stat.as_deref()?, &mut buf)?;
        // Field 39 is `processor`; the fields after the command name (which may hold spaces
        // and parentheses, so the last `)` ends it) start at field 3.
        let after_name = &stat[stat.rfind(')')? + 1..];
        after_name.split_ascii_whitespace().nth(39 - 3)?.parse().ok()
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
        let Some(stat) = read_small(std::path::Path::new("/proc/stat"), &mut buf) else { return };
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

    fn preemptions(&mut self) -> Option<u64> {
        use nix::sys::resource::{UsageWho, getrusage};
        let usage = getrusage(UsageWho::RUSAGE_THREAD).ok()?;
        u64::try_from(usage.involuntary_context_switches()).ok()
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
/// for the CPU; [`super::Wait::Auto`] then sleeps at once ([`super::AutoWait::set_confined`]).
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

/// Where the peer runs, for [`super::Wait::Auto`]: whether the two are confined to one CPU
/// ([`Confinement`]), and whether the peer last ran on this thread's CPU.
#[derive(Debug)]
pub struct PeerWatch {
    confinement: Confinement,
    os: Os,
}

impl PeerWatch {
    /// Watches process `peer`.
    pub fn new(peer: u32) -> PeerWatch {
        PeerWatch { confinement: Confinement::new(peer), os: Os::new(Some(peer)) }
    }

    /// [`Confinement::check`].
    pub fn confined(&mut self, now: Instant) -> Option<bool> {
        self.confinement.check(now)
    }

    /// Whether the peer last ran on the CPU this thread runs on (`/proc/PID/stat`, a few
    /// microseconds); `None` when either is unknown. Allocates nothing.
    pub fn shares_core(&mut self) -> Option<bool> {
        Some(self.os.current()? == self.os.peer()?)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted machine: this thread on `here`, the peer on `peer`, each CPU idle for
    /// `idle_share` of the time (its times advance with the test's clock, one tick a
    /// millisecond), and `preemptions` that grow as the test says.
    #[derive(Debug)]
    struct Fake {
        here: usize,
        peer: Option<usize>,
        allowed: Vec<usize>,
        idle_share: [f64; 2],
        millis: u64,
        preemptions: u64,
        moves: Vec<usize>,
    }

    impl Cpus for &mut Fake {
        fn current(&mut self) -> Option<usize> {
            Some(self.here)
        }
        fn peer(&mut self) -> Option<usize> {
            self.peer
        }
        fn allowed(&mut self, cpus: &mut Vec<usize>) {
            cpus.clone_from(&self.allowed);
        }
        fn times(&mut self, times: &mut Vec<(usize, u64, u64)>) {
            times.clear();
            for (cpu, share) in self.idle_share.iter().enumerate() {
                times.push((cpu, (self.millis as f64 * share) as u64, self.millis));
            }
        }
        fn preemptions(&mut self) -> Option<u64> {
            Some(self.preemptions)
        }
        fn move_to(&mut self, cpu: usize) -> bool {
            self.moves.push(cpu);
            self.here = cpu;
            true
        }
    }

    /// Two CPUs, this thread and its peer on CPU 0, CPU 1 idle.
    fn shared_core() -> Fake {
        Fake {
            here: 0,
            peer: Some(0),
            allowed: vec![0, 1],
            idle_share: [0.0, 1.0],
            millis: 0,
            preemptions: 0,
            moves: vec![],
        }
    }

    const STEP: Duration = Duration::from_micros(10);

    /// Sleeping waits every 10 µs for `span`: whether one of them moved.
    fn sleep_for(placement: &mut Placement<&mut Fake>, now: &mut Instant, span: Duration) -> bool {
        let (start, end) = (*now, *now + span);
        let base = placement.cpus.millis;
        while *now < end {
            *now += STEP;
            placement.cpus.millis = base + now.duration_since(start).as_millis() as u64;
            if placement.before_sleeping(*now) {
                return true;
            }
        }
        false
    }

    /// Spinning waits every 10 µs through a whole trial.
    fn spin_through_trial(placement: &mut Placement<&mut Fake>, now: &mut Instant) {
        while placement.on_trial() {
            *now += STEP;
            placement.after_wait(*now, true);
        }
    }

    #[test]
    fn a_thread_sharing_a_core_with_its_peer_moves_to_an_idle_cpu_after_two_looks() {
        let mut fake = shared_core();
        let mut placement = Placement::new(&mut fake);
        let mut now = Instant::now();
        assert!(!sleep_for(&mut placement, &mut now, FIRST_CHECK), "not before the first check");
        assert!(!sleep_for(&mut placement, &mut now, WINDOW - STEP), "not before the second look");
        assert!(sleep_for(&mut placement, &mut now, 2 * STEP), "at the second look");
        assert_eq!(placement.moves(), (1, 0));
        spin_through_trial(&mut placement, &mut now);
        assert_eq!(placement.moves(), (1, 0), "the trial passed");
        assert_eq!(fake.moves, vec![1]);
    }

    #[test]
    fn nothing_moves_towards_a_busy_cpu_and_the_checks_back_off() {
        let mut fake = Fake { idle_share: [0.0, 0.5], ..shared_core() };
        let mut placement = Placement::new(&mut fake);
        let mut now = Instant::now();
        assert!(!sleep_for(&mut placement, &mut now, Duration::from_secs(8)));
        // Looks at 1, 2, 4, … ms, up to one a second: a few dozen in eight seconds.
        assert_eq!(placement.interval, MAX_CHECK);
        assert!(fake.moves.is_empty());
    }

    #[test]
    fn a_peer_on_another_cpu_is_left_alone() {
        let mut fake = Fake { peer: Some(1), ..shared_core() };
        let mut placement = Placement::new(&mut fake);
        assert!(!sleep_for(&mut placement, &mut Instant::now(), Duration::from_millis(200)));
        assert!(fake.moves.is_empty());
    }

    #[test]
    fn one_allowed_cpu_means_no_move() {
        let mut fake = Fake { allowed: vec![0], ..shared_core() };
        let mut placement = Placement::new(&mut fake);
        assert!(!sleep_for(&mut placement, &mut Instant::now(), Duration::from_millis(200)));
        assert!(fake.moves.is_empty());
    }

    #[test]
    fn a_trial_in_which_spinning_stops_paying_moves_back_and_waits_twice_as_long() {
        let mut fake = shared_core();
        let mut placement = Placement::new(&mut fake);
        let mut now = Instant::now();
        assert!(sleep_for(&mut placement, &mut now, Duration::from_millis(100)));
        placement.after_wait(now, true);
        placement.after_wait(now, false);
        assert_eq!(placement.moves(), (1, 1));
        assert_eq!(placement.interval, FIRST_CHECK * 2);
        assert!(
            !placement.before_sleeping(now + FIRST_CHECK),
            "no check before the longer interval"
        );
        assert_eq!(fake.moves, vec![1, 0], "back where it was");
    }

    #[test]
    fn a_trial_preempted_on_the_new_cpu_moves_back() {
        let mut fake = shared_core();
        let mut placement = Placement::new(&mut fake);
        let mut now = Instant::now();
        assert!(sleep_for(&mut placement, &mut now, Duration::from_millis(100)));
        placement.cpus.preemptions += TRIAL_PREEMPTIONS;
        spin_through_trial(&mut placement, &mut now);
        assert_eq!(placement.moves(), (1, 1));
    }

    #[test]
    fn a_trial_lasts_its_waits_and_its_time() {
        let mut fake = shared_core();
        let mut placement = Placement::new(&mut fake);
        let mut now = Instant::now();
        assert!(sleep_for(&mut placement, &mut now, Duration::from_millis(100)));
        for _ in 0..TRIAL_WAITS {
            placement.after_wait(now, true);
        }
        assert!(placement.on_trial(), "the waits came at once: the time is not over");
        placement.after_wait(now + TRIAL_TIME, true);
        assert!(!placement.on_trial());
        // A settled placement ignores later waits.
        placement.after_wait(now + TRIAL_TIME, false);
        assert_eq!(placement.moves(), (1, 0));
    }

    /// Runs `test` on a thread of its own whose mask is the first allowed CPU only, with a
    /// child (`sleep`) started from it, whose mask it inherits unless `widen_child` gives it every CPU again.
    fn with_pinned_child(widen_child: bool, test: impl FnOnce(u32) -> bool + Send) -> Option<bool> {
        use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
        let me = nix::unistd::Pid::from_raw(0);
        let all = sched_getaffinity(me).ok()?;
        let first = (0..CpuSet::count()).find(|&cpu| all.is_set(cpu).unwrap_or(false))?;
        let second = (first + 1..CpuSet::count()).find(|&cpu| all.is_set(cpu).unwrap_or(false));
        if widen_child && second.is_none() {
            return None;
        }
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut only = CpuSet::new();
                    only.set(first).ok()?;
                    sched_setaffinity(me, &only).ok()?;
                    let mut child = std::process::Command::new("sleep").arg("30").spawn().ok()?;
                    if widen_child {
                        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
                        sched_setaffinity(pid, &all).ok()?;
                    }
                    let seen = test(child.id());
                    let _ = child.kill();
                    let _ = child.wait();
                    Some(seen)
                })
                .join()
                .ok()?
        })
    }

    #[test]
    fn a_thread_and_a_child_on_one_cpu_are_confined_together() {
        assert_eq!(with_pinned_child(false, confined_together), Some(true));
        // Confined: looked at again after 10 ms, so that a moment's pinning passes quickly.
        let seen = with_pinned_child(false, |child| {
            let mut watch = Confinement::new(child);
            let now = Instant::now() + CONFINED_RECHECK;
            watch.check(now) == Some(true)
                && watch.check(now).is_none()
                && watch.check(now + CONFINED_RECHECK) == Some(true)
        });
        assert_eq!(seen, Some(true));
        // Not confined (no such process): a second between looks.
        let mut watch = Confinement::new(u32::MAX);
        assert_eq!(watch.check(Instant::now()), None, "no look during a spawn's handshake");
        let now = Instant::now() + CONFINED_RECHECK;
        assert_eq!(watch.check(now), Some(false), "the first look");
        assert_eq!(watch.check(now + CONFINED_RECHECK), None, "the next waits a second");
        assert_eq!(watch.check(now + CONFINEMENT_RECHECK), Some(false));
    }

    #[test]
    fn a_child_that_may_run_elsewhere_is_not_confined() {
        // None when this machine lets the test use one CPU only: nothing to widen to.
        if let Some(seen) = with_pinned_child(true, confined_together) {
            assert!(!seen);
        }
        // Nor is a process that does not exist.
        assert!(!confined_together(u32::MAX));
        assert!(!confined_together(i32::MAX as u32));
    }
}
