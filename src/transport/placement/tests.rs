use super::fake::Fake;
use super::os::confined_together;
use super::*;

/// `count` sleeps a millisecond apart, hand-overs or not: whether the last one moved.
fn sleeps(
    placement: &mut PlacementWatch,
    fake: &mut Fake,
    now: &mut Instant,
    count: u32,
    hand_over: bool,
) -> bool {
    let mut moved = false;
    for _ in 0..count {
        *now += Duration::from_millis(1);
        fake.millis += 1;
        moved = placement.after_giving_up_the_core(fake, *now, hand_over);
    }
    moved
}

#[test]
fn a_side_handing_its_core_to_its_peer_moves_to_the_idle_cpu_after_a_few_hand_overs() {
    let mut fake = Fake::shared_core();
    let mut placement = PlacementWatch::new(Instant::now());
    let mut now = Instant::now();
    assert!(!sleeps(&mut placement, &mut fake, &mut now, HAND_OVERS_TO_LOOK.get() - 1, true));
    assert!(
        !sleeps(&mut placement, &mut fake, &mut now, 1, false),
        "a dear sleep counts from zero again"
    );
    assert!(!sleeps(&mut placement, &mut fake, &mut now, HAND_OVERS_TO_LOOK.get() - 1, true));
    assert!(
        sleeps(&mut placement, &mut fake, &mut now, 1, true),
        "the look after enough hand-overs"
    );
    assert_eq!(placement.moves, 1);
    assert_eq!(fake.moves, vec![1]);
}

#[test]
fn a_peer_asleep_beside_it_counts_as_not_runnable() {
    // The peer sleeps on this core; a third task is runnable: it holds the other CPU.
    let mut fake = Fake { peer: Some((0, false)), others: Some(1), ..Fake::shared_core() };
    let mut placement = PlacementWatch::new(Instant::now());
    assert!(!sleeps(&mut placement, &mut fake, &mut Instant::now(), 100, true));
    // With the peer asleep and nothing else runnable, the other CPU is idle.
    let mut fake = Fake { peer: Some((0, false)), ..Fake::shared_core() };
    let mut placement = PlacementWatch::new(Instant::now());
    assert!(sleeps(&mut placement, &mut fake, &mut Instant::now(), HAND_OVERS_TO_LOOK.get(), true));
}

#[test]
fn it_moves_to_the_cpu_idle_longest_since_its_last_look() {
    let mut fake = Fake {
        allowed: vec![0, 1, 2, 3],
        idle_share: vec![0.0, 0.2, 0.9, 0.5],
        others: Some(1),
        ..Fake::shared_core()
    };
    let mut placement = PlacementWatch::new(Instant::now());
    let mut now = Instant::now();
    assert!(sleeps(&mut placement, &mut fake, &mut now, HAND_OVERS_TO_LOOK.get(), true));
    assert_eq!(fake.moves, vec![2]);
    // Beside three runnable others on four CPUs, none can be idle.
    fake.others = Some(3);
    fake.here = 0;
    assert!(!sleeps(&mut placement, &mut fake, &mut now, 100, true));
    assert_eq!(fake.moves, vec![2]);
}

/// Counts the looks of `placement` over `count` hand-overs `step` apart.
fn looks_over(
    placement: &mut PlacementWatch,
    fake: &mut Fake,
    now: &mut Instant,
    count: u32,
    step: Duration,
) -> u32 {
    let mut looks = 0;
    for _ in 0..count {
        let before = (placement.next_check, placement.hand_overs_to_look);
        *now += step;
        assert!(!placement.after_giving_up_the_core(fake, *now, true));
        looks += u32::from((placement.next_check, placement.hand_overs_to_look) != before);
    }
    looks
}

#[test]
fn looks_that_find_nothing_to_do_come_ever_further_apart_in_time_and_in_hand_overs() {
    let mut fake = Fake { others: Some(1), ..Fake::shared_core() };
    let mut placement = PlacementWatch::new(Instant::now());
    let mut now = Instant::now();
    // Hand-overs 10 µs apart beside busy work for a second: each look waits for twice the
    // time and twice the hand-overs of the one before, up to 16 ms and 1024; then the time
    // sets the pace (1024 hand-overs take 10 ms), one look per 16 ms.
    let looks = looks_over(&mut placement, &mut fake, &mut now, 100_000, Duration::from_micros(10));
    assert_eq!(placement.interval.get(), CHECK_INTERVAL.ceiling());
    assert_eq!(placement.hand_overs_to_look.get(), HAND_OVERS_TO_LOOK.ceiling());
    assert!((60..=70).contains(&looks), "{looks} looks in a second");
    // Hand-overs a millisecond apart: 1024 of them take a second, and the count sets the pace.
    let looks = looks_over(&mut placement, &mut fake, &mut now, 10_000, Duration::from_millis(1));
    assert!((9..=10).contains(&looks), "{looks} looks in 10 s");
    assert!(fake.moves.is_empty());
}

#[test]
fn round_trips_in_bursts_far_apart_carry_a_look_in_one_of_a_thousand_at_most() {
    let mut fake = Fake { others: Some(1), ..Fake::shared_core() };
    let mut placement = PlacementWatch::new(Instant::now());
    let mut now = Instant::now();
    // 100 bursts of 200 hand-overs 5 µs apart, 20 ms between bursts (over CHECK_INTERVAL's 16 ms):
    // timed alone, every burst would carry a look.
    let mut looks = 0;
    for _ in 0..100 {
        now += Duration::from_millis(20);
        looks += looks_over(&mut placement, &mut fake, &mut now, 200, Duration::from_micros(5));
    }
    // The first looks, at 4, 8, … 512 hand-overs, then one per 1024 of the 20,000.
    assert!(looks <= 8 + 20_000 / HAND_OVERS_TO_LOOK.ceiling(), "{looks} looks in 100 bursts");
}

#[test]
fn after_a_move_the_next_look_comes_at_the_next_row_of_hand_overs() {
    let mut fake = Fake::shared_core();
    let mut placement = PlacementWatch::new(Instant::now());
    let mut now = Instant::now();
    assert!(sleeps(&mut placement, &mut fake, &mut now, HAND_OVERS_TO_LOOK.get(), true));
    // The peer followed to CPU 1 (it was woken there): the two share a core again.
    fake.peer = Some((1, true));
    assert!(sleeps(&mut placement, &mut fake, &mut now, HAND_OVERS_TO_LOOK.get(), true));
    assert_eq!(fake.moves, vec![1, 0]);
    assert_eq!(placement.moves, 2);
}

#[test]
fn nothing_moves_with_the_peer_elsewhere_one_cpu_allowed_or_the_machine_unknown() {
    for fake in [
        Fake { peer: Some((1, true)), ..Fake::shared_core() },
        Fake { peer: None, ..Fake::shared_core() },
        Fake { allowed: vec![0], ..Fake::shared_core() },
        Fake { others: None, ..Fake::shared_core() },
    ] {
        let mut fake = fake;
        let mut placement = PlacementWatch::new(Instant::now());
        assert!(!sleeps(&mut placement, &mut fake, &mut Instant::now(), 100, true), "{fake:?}");
        assert!(fake.moves.is_empty());
        // Only a look that finds the two on one core, with CPUs to spare, asks the machine.
        if fake.others.is_some() {
            assert_eq!(fake.reads.loadavg, 0, "{fake:?}");
        }
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
    let mut os = Os::new(spinner.0.id(), false);
    let busy = eventually(|| os.peer().filter(|&(_, runnable)| runnable));
    assert!(busy.is_some_and(|(cpu, _)| cpu < cpus), "a busy loop is runnable: {busy:?}");
    // This thread and the busy loop at least.
    let runnable = os.runnable();
    assert!(runnable.is_some_and(|n| n >= 2), "{runnable:?}");
    let mut os = Os::new(sleeper.0.id(), false);
    let asleep = eventually(|| os.peer().filter(|&(_, runnable)| !runnable));
    assert!(asleep.is_some_and(|(cpu, _)| cpu < cpus), "sleep(1) sleeps: {asleep:?}");
    assert_eq!(Os::new(u32::MAX, false).peer(), None, "no such process");
}

#[test]
fn the_os_reads_the_peer_and_the_machine_as_they_are_now() {
    // One `Os`, read again and again: the child asleep first, then a busy loop.
    let mut child = Child::start("sh", &["-c", "sleep 0.5; while :; do :; done"]);
    let mut os = Os::new(child.0.id(), false);
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
    let mut kept = Os::new(pid, true);
    assert_eq!(holding(), 1, "kept open from the start");
    let asleep = eventually(|| kept.peer().filter(|&(_, runnable)| !runnable));
    assert!(asleep.is_some(), "the child sleeps first");
    let busy = eventually(|| kept.peer().filter(|&(_, runnable)| runnable));
    assert!(busy.is_some(), "then it runs: the kept file is read afresh");
    let mut plain = Os::new(pid, false);
    assert!(plain.peer().is_some());
    assert_eq!(holding(), 1, "an Os that does not keep the file holds none");
    child.0.kill().expect("kill the child");
    child.0.wait().expect("reap the child");
    assert_eq!(kept.peer(), None, "a reaped peer reads as gone through its kept file");
    drop(kept);
    assert_eq!(holding(), 0, "closed with its Os");
}

#[test]
fn a_kept_peer_file_serves_the_looks_too_and_closes_with_its_os() {
    let child = Child::start("sleep", &["30"]);
    let pid = child.0.id();
    let holding = || descriptors_of_stat(pid);
    let mut os = Os::new(pid, true);
    assert_eq!(holding(), 1, "kept open from the start");
    assert!(os.current().is_some() && os.peer().is_some(), "a live peer's CPU is known");
    // Hand-overs enough for a look, which reads the peer through the same file.
    let (mut placement, mut now) = (PlacementWatch::new(Instant::now()), Instant::now());
    for _ in 0..HAND_OVERS_TO_LOOK.get() {
        now += Duration::from_millis(1);
        placement.after_giving_up_the_core(&mut os, now, true);
    }
    assert_eq!(holding(), 1, "the look leaves no descriptor of its own behind");
    drop(os);
    assert_eq!(holding(), 0, "closed with its Os");
    let mut plain = Os::new(pid, false);
    assert!(plain.peer().is_some());
    assert_eq!(holding(), 0, "an Os that does not keep the file holds none");
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
    let seen = with_pinned_child(false, |child| Os::new(child, false).confined_with_peer());
    assert_eq!(seen, Some(true));
    // No such process, or no peer at all.
    assert!(!Os::new(u32::MAX, false).confined_with_peer());
    assert!(!Os::default().confined_with_peer());
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
