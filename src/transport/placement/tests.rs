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
    assert!(!placement.before_sleeping(now + FIRST_CHECK), "no check before the longer interval");
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
