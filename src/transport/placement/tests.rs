use super::os::{CONFINED_RECHECK, CONFINEMENT_RECHECK, confined_together};
use super::*;

/// A scripted machine: this thread on `here`, the peer on `peer` (runnable or not), `others`
/// tasks runnable besides the two, and each CPU idle for `idle_share` of the time (its times
/// advance with `millis`).
#[derive(Debug)]
struct Fake {
    here: usize,
    peer: Option<(usize, bool)>,
    allowed: Vec<usize>,
    others: Option<usize>,
    idle_share: Vec<f64>,
    millis: u64,
    moves: Vec<usize>,
}

impl Cpus for &mut Fake {
    fn current(&mut self) -> Option<usize> {
        Some(self.here)
    }
    fn peer(&mut self) -> Option<(usize, bool)> {
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
    fn runnable(&mut self) -> Option<usize> {
        // This thread, the peer when runnable, and the others.
        let peer = usize::from(self.peer.is_some_and(|(_, runnable)| runnable));
        Some(1 + peer + self.others?)
    }
    fn move_to(&mut self, cpu: usize) -> bool {
        self.moves.push(cpu);
        self.here = cpu;
        true
    }
}

/// Two CPUs, this thread and its (runnable) peer on CPU 0, nothing else runnable.
fn shared_core() -> Fake {
    Fake {
        here: 0,
        peer: Some((0, true)),
        allowed: vec![0, 1],
        others: Some(0),
        idle_share: vec![0.0, 1.0],
        millis: 0,
        moves: vec![],
    }
}

/// `count` sleeps a millisecond apart, hand-overs or not: whether the last one moved.
fn sleeps(
    placement: &mut Placement<&mut Fake>,
    now: &mut Instant,
    count: u32,
    hand_over: bool,
) -> bool {
    let mut moved = false;
    for _ in 0..count {
        *now += Duration::from_millis(1);
        placement.cpus.millis += 1;
        moved = placement.after_giving_up_the_core(*now, hand_over);
    }
    moved
}

#[test]
fn a_side_handing_its_core_to_its_peer_moves_to_the_idle_cpu_after_a_few_hand_overs() {
    let mut fake = shared_core();
    let mut placement = Placement::new(&mut fake);
    let mut now = Instant::now();
    assert!(!sleeps(&mut placement, &mut now, HAND_OVERS_TO_LOOK - 1, true));
    assert!(!sleeps(&mut placement, &mut now, 1, false), "a dear sleep counts from zero again");
    assert!(!sleeps(&mut placement, &mut now, HAND_OVERS_TO_LOOK - 1, true));
    assert!(sleeps(&mut placement, &mut now, 1, true), "the look after enough hand-overs");
    assert_eq!(placement.moves(), 1);
    assert_eq!(fake.moves, vec![1]);
}

#[test]
fn it_tells_whether_the_peer_last_ran_on_this_threads_cpu() {
    let mut fake = shared_core();
    assert_eq!(Placement::new(&mut fake).peer_shares_core(), Some(true));
    let mut fake = Fake { peer: Some((1, false)), ..shared_core() };
    assert_eq!(Placement::new(&mut fake).peer_shares_core(), Some(false));
    let mut fake = Fake { peer: None, ..shared_core() };
    assert_eq!(Placement::new(&mut fake).peer_shares_core(), None, "the peer unknown");
}

#[test]
fn a_peer_asleep_beside_it_counts_as_not_runnable() {
    // The peer sleeps on this core; a third task is runnable: it holds the other CPU.
    let mut fake = Fake { peer: Some((0, false)), others: Some(1), ..shared_core() };
    let mut placement = Placement::new(&mut fake);
    assert!(!sleeps(&mut placement, &mut Instant::now(), 100, true));
    // With the peer asleep and nothing else runnable, the other CPU is idle.
    let mut fake = Fake { peer: Some((0, false)), ..shared_core() };
    let mut placement = Placement::new(&mut fake);
    assert!(sleeps(&mut placement, &mut Instant::now(), HAND_OVERS_TO_LOOK, true));
}

#[test]
fn it_moves_to_the_cpu_idle_longest_since_its_last_look() {
    let mut fake = Fake {
        allowed: vec![0, 1, 2, 3],
        idle_share: vec![0.0, 0.2, 0.9, 0.5],
        others: Some(1),
        ..shared_core()
    };
    let mut placement = Placement::new(&mut fake);
    let mut now = Instant::now();
    assert!(sleeps(&mut placement, &mut now, HAND_OVERS_TO_LOOK, true));
    assert_eq!(placement.cpus.moves, vec![2]);
    // Beside three runnable others on four CPUs, none can be idle.
    placement.cpus.others = Some(3);
    placement.cpus.here = 0;
    assert!(!sleeps(&mut placement, &mut now, 100, true));
    assert_eq!(placement.cpus.moves, vec![2]);
}

/// Counts the looks of `placement` over `count` hand-overs `step` apart.
fn looks_over(
    placement: &mut Placement<&mut Fake>,
    now: &mut Instant,
    count: u32,
    step: Duration,
) -> u32 {
    let mut looks = 0;
    for _ in 0..count {
        let before = (placement.next_check, placement.hand_overs_to_look);
        *now += step;
        assert!(!placement.after_giving_up_the_core(*now, true));
        looks += u32::from((placement.next_check, placement.hand_overs_to_look) != before);
    }
    looks
}

#[test]
fn looks_that_find_nothing_to_do_come_ever_further_apart_in_time_and_in_hand_overs() {
    let mut fake = Fake { others: Some(1), ..shared_core() };
    let mut placement = Placement::new(&mut fake);
    let mut now = Instant::now();
    // Hand-overs 10 µs apart beside busy work for a second: each look waits for twice the
    // time and twice the hand-overs of the one before, up to 16 ms and 1024; then the time
    // sets the pace (1024 hand-overs take 10 ms), one look per 16 ms.
    let looks = looks_over(&mut placement, &mut now, 100_000, Duration::from_micros(10));
    assert_eq!(placement.interval, MAX_CHECK);
    assert_eq!(placement.hand_overs_to_look, MAX_HAND_OVERS_TO_LOOK);
    assert!((60..=70).contains(&looks), "{looks} looks in a second");
    // Hand-overs a millisecond apart: 1024 of them take a second, and the count sets the pace.
    let looks = looks_over(&mut placement, &mut now, 10_000, Duration::from_millis(1));
    assert!((9..=10).contains(&looks), "{looks} looks in 10 s");
    assert!(placement.cpus.moves.is_empty());
}

#[test]
fn round_trips_in_bursts_far_apart_carry_a_look_in_one_of_a_thousand_at_most() {
    let mut fake = Fake { others: Some(1), ..shared_core() };
    let mut placement = Placement::new(&mut fake);
    let mut now = Instant::now();
    // 100 bursts of 200 hand-overs 5 µs apart, 20 ms between bursts (more than MAX_CHECK):
    // timed alone, every burst would carry a look.
    let mut looks = 0;
    for _ in 0..100 {
        now += Duration::from_millis(20);
        looks += looks_over(&mut placement, &mut now, 200, Duration::from_micros(5));
    }
    // The first looks, at 4, 8, … 512 hand-overs, then one per 1024 of the 20,000.
    assert!(looks <= 8 + 20_000 / MAX_HAND_OVERS_TO_LOOK, "{looks} looks in 100 bursts");
}

#[test]
fn after_a_move_the_next_look_comes_at_the_next_row_of_hand_overs() {
    let mut fake = shared_core();
    let mut placement = Placement::new(&mut fake);
    let mut now = Instant::now();
    assert!(sleeps(&mut placement, &mut now, HAND_OVERS_TO_LOOK, true));
    // The peer followed to CPU 1 (it was woken there): the two share a core again.
    placement.cpus.peer = Some((1, true));
    assert!(sleeps(&mut placement, &mut now, HAND_OVERS_TO_LOOK, true));
    assert_eq!(placement.cpus.moves, vec![1, 0]);
    assert_eq!(placement.moves(), 2);
}

#[test]
fn nothing_moves_with_the_peer_elsewhere_one_cpu_allowed_or_the_machine_unknown() {
    for fake in [
        Fake { peer: Some((1, true)), ..shared_core() },
        Fake { peer: None, ..shared_core() },
        Fake { allowed: vec![0], ..shared_core() },
        Fake { others: None, ..shared_core() },
    ] {
        let mut fake = fake;
        let mut placement = Placement::new(&mut fake);
        assert!(!sleeps(&mut placement, &mut Instant::now(), 100, true), "{:?}", placement.cpus);
        assert!(fake.moves.is_empty());
    }
}

/// Polls `seen` until it returns `Some`, for up to 10 s (a child that has just been started
/// may not have reached what the test waits for).
fn eventually<T>(mut seen: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = seen() {
            return Some(value);
        }
        if Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A child process killed and reaped when dropped, so that a failing test leaves none behind.
struct Child(std::process::Child);

impl Child {
    fn start(program: &str, args: &[&str]) -> Child {
        Child(std::process::Command::new(program).args(args).spawn().expect("start a child"))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_os_reads_a_peers_cpu_and_whether_it_is_runnable() {
    let cpus = nix::sched::CpuSet::count();
    let spinner = Child::start("sh", &["-c", "while :; do :; done"]);
    let sleeper = Child::start("sleep", &["30"]);
    let mut os = Os::new(spinner.0.id());
    let busy = eventually(|| os.peer().filter(|&(_, runnable)| runnable));
    assert!(busy.is_some_and(|(cpu, _)| cpu < cpus), "a busy loop is runnable: {busy:?}");
    // This thread and the busy loop at least.
    let runnable = os.runnable();
    assert!(runnable.is_some_and(|n| n >= 2), "{runnable:?}");
    let mut os = Os::new(sleeper.0.id());
    let asleep = eventually(|| os.peer().filter(|&(_, runnable)| !runnable));
    assert!(asleep.is_some_and(|(cpu, _)| cpu < cpus), "sleep(1) sleeps: {asleep:?}");
    assert_eq!(Os::new(u32::MAX).peer(), None, "no such process");
}

#[test]
fn the_os_reads_the_peer_and_the_machine_as_they_are_now() {
    // One `Os`, read again and again: the child asleep first, then a busy loop.
    let mut child = Child::start("sh", &["-c", "sleep 0.5; while :; do :; done"]);
    let mut os = Os::new(child.0.id());
    let asleep = eventually(|| os.peer().filter(|&(_, runnable)| !runnable));
    assert!(asleep.is_some(), "the child sleeps first");
    let busy = eventually(|| os.peer().filter(|&(_, runnable)| runnable));
    assert!(busy.is_some(), "then it runs");
    // The kept `/proc/loadavg` counts the busy child (and this thread) at every read.
    for _ in 0..3 {
        assert!(os.runnable().is_some_and(|n| n >= 1));
    }
    let mut times = Vec::new();
    os.times(&mut times);
    let first: u64 = times.iter().map(|t| t.2).sum();
    std::thread::sleep(Duration::from_millis(50));
    os.times(&mut times);
    let second: u64 = times.iter().map(|t| t.2).sum();
    assert!(second > first, "the kept /proc/stat reads the CPU times afresh: {first} {second}");
    child.0.kill().expect("kill the child");
    child.0.wait().expect("reap the child");
    assert_eq!(os.peer(), None, "a reaped peer reads as gone");
}

/// How many of this process's descriptors are open on process `pid`'s `/proc/PID/stat`.
fn descriptors_of_stat(pid: u32) -> usize {
    let stat = std::path::PathBuf::from(format!("/proc/{pid}/stat"));
    let fds = std::fs::read_dir("/proc/self/fd").expect("list /proc/self/fd");
    fds.flatten().filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == stat)).count()
}

#[test]
fn a_kept_peer_file_reads_the_peer_afresh_is_held_once_and_closes_with_its_os() {
    let mut child = Child::start("sh", &["-c", "sleep 0.5; while :; do :; done"]);
    let pid = child.0.id();
    let holding = || descriptors_of_stat(pid);
    let mut kept = Os::keeping_the_peers_file(pid);
    assert_eq!(holding(), 1, "kept open from the start");
    let asleep = eventually(|| kept.peer().filter(|&(_, runnable)| !runnable));
    assert!(asleep.is_some(), "the child sleeps first");
    let busy = eventually(|| kept.peer().filter(|&(_, runnable)| runnable));
    assert!(busy.is_some(), "then it runs: the kept file is read afresh");
    let mut plain = Os::new(pid);
    assert!(plain.peer().is_some());
    assert_eq!(holding(), 1, "an Os::new holds none");
    child.0.kill().expect("kill the child");
    child.0.wait().expect("reap the child");
    assert_eq!(kept.peer(), None, "a reaped peer reads as gone through its kept file");
    drop(kept);
    assert_eq!(holding(), 0, "closed with its Os");
}

#[test]
fn a_watch_keeps_one_peer_file_for_all_its_reads_and_closes_it_when_dropped() {
    let child = Child::start("sleep", &["30"]);
    let pid = child.0.id();
    let holding = || descriptors_of_stat(pid);
    let mut watch = PeerWatch::new(pid, true);
    assert_eq!(holding(), 1, "kept open from the start");
    assert!(watch.shares_core().is_some(), "a live peer's CPU is known");
    // Hand-overs enough for a look, which reads the peer through the same file.
    let mut now = Instant::now();
    for _ in 0..HAND_OVERS_TO_LOOK {
        now += Duration::from_millis(1);
        watch.after_giving_up_the_core(now, true);
    }
    assert_eq!(holding(), 1, "the look leaves no descriptor of its own behind");
    drop(watch);
    assert_eq!(holding(), 0, "closed with the watch");
    let mut plain = PeerWatch::new(pid, false);
    assert!(plain.shares_core().is_some());
    assert_eq!(holding(), 0, "a watch that does not keep the file holds none");
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
