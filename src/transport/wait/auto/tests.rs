use super::*;
use crate::transport::placement::fake::{Fake, Reads};
use crate::transport::wait::waiter::yielded_in;

const US: Duration = Duration::from_micros(1);
/// Most waits between two probes, and between two yield probes.
const AUTO_MAX_PROBE: u32 = AUTO_PROBE.every.ceiling();
const AUTO_MAX_YIELD_PROBE: u32 = AUTO_YIELD_PROBE.every.ceiling();

/// A waiter that knows nothing yet, with no peer watched, on a machine of two idle CPUs.
fn waiter() -> AutoWaiter<Fake> {
    AutoWaiter::new(Fake::shared_core(), None)
}

/// What a waiter has learned, to compare.
fn learned(auto: &AutoWaiter<Fake>) -> impl PartialEq + std::fmt::Debug + use<> {
    let AutoWaiter { mode, dear_sleeps_to_spin, probe, slept_average, .. } = auto;
    let yields = (auto.yields, auto.yield_probe, auto.confined);
    (*mode, *dear_sleeps_to_spin, *probe, *slept_average, yields)
}

/// Where the peer runs, as a scripted partner: what one wait sees, given how long it may
/// spin before it yields and sleeps.
#[derive(Clone, Copy)]
enum Partner {
    /// On another CPU, answering `after` the wait starts whatever the waiter does.
    Elsewhere { after: Duration },
    /// On this CPU: it runs only once the waiter yields or sleeps, then answers `service`
    /// later.
    SameCore { service: Duration },
    /// On another CPU but asleep itself: it answers `wake` after the wait starts (its own
    /// wake-up), and a waiter that sleeps too pays a wake-up of its own on top.
    Asleep { wake: Duration },
}

impl Partner {
    fn wait(self, budget: Duration) -> WaitSeen {
        let seen = |waited, outcome| WaitSeen { budget, waited, outcome };
        let slept = Outcome::Slept(None);
        match self {
            Partner::Elsewhere { after } if after <= budget => seen(after, Outcome::Spun),
            Partner::Elsewhere { after } => seen(after, slept),
            Partner::SameCore { service } if budget.is_zero() => seen(service, slept),
            // The yield at the end of the spin runs the peer, whose answer is then there.
            Partner::SameCore { service } => {
                seen(budget + service, Outcome::Yielded(Yielded::Cheap))
            }
            Partner::Asleep { wake } if wake <= budget => seen(wake, Outcome::Spun),
            Partner::Asleep { wake } => seen(budget.max(wake) + wake, slept),
        }
    }
}

/// Runs `waits` waits against `partner`, one after another from `Instant::now()`; returns the
/// total time spent waiting and how many waits spun.
fn run(auto: &mut AutoWaiter<Fake>, partner: Partner, waits: u32) -> (Duration, u32) {
    run_from(auto, partner, waits, &mut Instant::now())
}

/// [`run`] on a clock that starts at `now` and moves by each wait.
fn run_from(
    auto: &mut AutoWaiter<Fake>,
    partner: Partner,
    waits: u32,
    now: &mut Instant,
) -> (Duration, u32) {
    let (mut total, mut spun) = (Duration::ZERO, 0);
    for _ in 0..waits {
        let seen = partner.wait(auto.before_wait(*now).0);
        *now += seen.waited;
        auto.after_wait(&seen, *now, true);
        total += seen.waited;
        spun += u32::from(!seen.budget.is_zero());
    }
    (total, spun)
}

fn slept_at_once(waited: Duration) -> WaitSeen {
    WaitSeen { budget: Duration::ZERO, waited, outcome: Outcome::Slept(None) }
}

#[test]
fn a_peer_on_another_cpu_that_answers_within_the_spin_keeps_it_spinning() {
    let mut auto = waiter();
    let (total, spun) = run(&mut auto, Partner::Elsewhere { after: 2 * US }, 10_000);
    assert!(auto.is_spinning());
    assert_eq!(spun, 10_000);
    assert_eq!(total, 20_000 * US);
}

#[test]
fn a_peer_on_this_core_stops_the_spinning_after_two_waits() {
    let mut auto = waiter();
    let partner = Partner::SameCore { service: 3 * US };
    run(&mut auto, partner, AUTO_MISSES_TO_BLOCK);
    assert!(!auto.is_spinning());
    assert_eq!(auto.counts().contended, u64::from(AUTO_MISSES_TO_BLOCK));
    // From then on only the probes spin, fewer and fewer of them, each as short as a sleep.
    let (total, spun) = run(&mut auto, partner, 100_000);
    assert!(!auto.is_spinning());
    assert!(spun <= 100_000 / AUTO_MAX_PROBE + 16, "{spun} probes in 100000 waits");
    let sleeping_only = 100_000 * 3 * US;
    assert!(total < sleeping_only + sleeping_only / 10, "{total:?} against {sleeping_only:?}");
}

#[test]
fn a_yield_that_ran_another_task_is_a_miss_even_when_the_data_then_came() {
    let mut auto = waiter();
    let seen = WaitSeen {
        budget: DEFAULT_SPIN_BUDGET,
        waited: 53 * US,
        outcome: Outcome::Yielded(Yielded::Cheap),
    };
    auto.record(&seen);
    auto.record(&seen);
    assert!(!auto.is_spinning());
    assert_eq!(auto.counts().hits, 0);
}

#[test]
fn waits_that_overran_their_spin_are_misses() {
    // Caught without sleeping, but 4 ms into a 50 µs spin: the spinner was descheduled.
    let mut auto = waiter();
    for _ in 0..AUTO_MISSES_TO_BLOCK {
        assert!(auto.is_spinning());
        let budget = auto.budget();
        auto.record(&WaitSeen { budget, waited: 4000 * US, ..WaitSeen::default() });
    }
    assert!(!auto.is_spinning());
}

#[test]
fn one_miss_between_hits_does_not_stop_the_spinning() {
    let mut auto = waiter();
    for _ in 0..100 {
        run(&mut auto, Partner::Elsewhere { after: 2 * US }, 1);
        run(&mut auto, Partner::SameCore { service: 3 * US }, 1);
    }
    assert!(auto.is_spinning());
}

#[test]
fn a_peer_asleep_on_another_cpu_keeps_this_side_spinning() {
    // Its answers come after its own wake-up, later than the spin: sleeping too would only
    // add this side's wake-up, so the spin, which harms no one, stays.
    let mut auto = waiter();
    let (_, spun) = run(&mut auto, Partner::Asleep { wake: 120 * US }, 1_000);
    assert!(auto.is_spinning());
    assert_eq!(spun, 1_000);
}

#[test]
fn two_dear_sleeps_in_a_row_bring_the_spinning_back() {
    let mut auto = waiter();
    run(&mut auto, Partner::SameCore { service: 3 * US }, 100);
    assert!(!auto.is_spinning());
    // The peer moved to another CPU and sleeps there: each sleep now costs two wake-ups.
    auto.record(&slept_at_once(300 * US));
    assert!(!auto.is_spinning());
    auto.record(&slept_at_once(300 * US));
    assert!(auto.is_spinning());
    // A cheap sleep between two dear ones restarts the count.
    run(&mut auto, Partner::SameCore { service: 3 * US }, 100);
    let budget = auto.budget();
    assert!(budget.is_zero());
    for waited in [300 * US, 3 * US, 300 * US] {
        auto.record(&slept_at_once(waited));
    }
    assert!(!auto.is_spinning());
}

#[test]
fn spinning_resumed_by_dear_sleeps_that_misses_again_takes_twice_as_many_next_time() {
    // Beside other work: sleeps are dear (the waker's core busy), and when a spin runs
    // out, its yield runs another task and the data still does not come.
    let mut auto = waiter();
    let crowded = |auto: &mut AutoWaiter<Fake>| {
        let budget = auto.budget();
        let outcome = Outcome::Slept(Some(Yielded::Cheap));
        auto.record(&WaitSeen { budget, waited: budget + 30 * US, outcome });
    };
    let contended = |auto: &mut AutoWaiter<Fake>| {
        for _ in 0..AUTO_MISSES_TO_BLOCK {
            crowded(auto);
        }
    };
    contended(&mut auto);
    for round in 1..=4u32 {
        assert!(!auto.is_spinning());
        let needed = AUTO_DEAR_SLEEPS_TO_SPIN.get() << (round - 1);
        for _ in 0..needed {
            assert!(!auto.is_spinning());
            auto.record(&slept_at_once(300 * US));
        }
        assert!(auto.is_spinning(), "round {round}: {needed} dear sleeps");
        contended(&mut auto);
    }
    // A hit brings it back to two.
    run(&mut auto, Partner::Elsewhere { after: 2 * US }, AUTO_MAX_PROBE + 1);
    assert!(auto.is_spinning());
    contended(&mut auto);
    for _ in 0..AUTO_DEAR_SLEEPS_TO_SPIN.get() {
        auto.record(&slept_at_once(300 * US));
    }
    assert!(auto.is_spinning());
    // However often it misses, the dear sleeps it waits for stop at the most.
    for _ in 0..10 {
        contended(&mut auto);
        for _ in 0..AUTO_DEAR_SLEEPS_TO_SPIN.ceiling() {
            auto.record(&slept_at_once(300 * US));
        }
        assert!(auto.is_spinning());
    }
}

#[test]
fn a_peer_that_moves_to_another_cpu_and_spins_is_found_by_a_probe() {
    let mut auto = waiter();
    run(&mut auto, Partner::SameCore { service: 3 * US }, 5_000);
    assert!(!auto.is_spinning());
    // The peer moves away and answers at once; this side's sleeps stay cheap (a fast
    // wake-up), so only a probe can see that spinning pays again.
    let partner = Partner::Elsewhere { after: 2 * US };
    let switched = (0..=AUTO_MAX_PROBE).any(|_| {
        run(&mut auto, partner, 1);
        auto.is_spinning()
    });
    assert!(switched);
    let (total, spun) = run(&mut auto, partner, 1_000);
    assert_eq!((total, spun), (2_000 * US, 1_000));
}

#[test]
fn a_probe_spins_as_long_as_the_sleeps_took_within_its_bounds() {
    let mut auto = waiter();
    assert_eq!(auto.probe_budget(), AUTO_MIN_PROBE_BUDGET);
    // Sleeps of 8 µs (the peer on this core): probes as long.
    run(&mut auto, Partner::SameCore { service: 8 * US }, 200);
    assert_eq!(auto.probe_budget(), 8 * US);
    // Sleeps of 3 µs: the shortest probe.
    run(&mut auto, Partner::SameCore { service: 3 * US }, 200);
    assert_eq!(auto.probe_budget(), AUTO_MIN_PROBE_BUDGET);
    // Sleeps of 15 µs (cheap, so the connection keeps sleeping): probes as long.
    for _ in 0..100 {
        auto.record(&slept_at_once(15 * US));
    }
    assert!(auto.probe_budget() > 14 * US && auto.probe_budget() <= 15 * US);
    assert!(!auto.is_spinning());
}

#[test]
fn probes_grow_rarer_while_they_fail_and_sooner_after_one_pays() {
    let mut auto = waiter();
    run(&mut auto, Partner::SameCore { service: 3 * US }, 50_000);
    assert_eq!(auto.probe.every.get(), AUTO_MAX_PROBE);
    run(&mut auto, Partner::Elsewhere { after: 2 * US }, AUTO_MAX_PROBE + 1);
    assert!(auto.is_spinning());
    assert_eq!(auto.probe.every.get(), AUTO_MAX_PROBE / 2);
}

#[test]
fn a_cheap_sleep_at_once_teaches_nothing_about_spinning() {
    let mut auto = waiter();
    run(&mut auto, Partner::SameCore { service: 3 * US }, 2);
    let (before, counts, average) = (learned(&auto), auto.counts, auto.slept_average);
    auto.record(&slept_at_once(3 * US));
    assert_eq!(auto.counts.slept_at_once, counts.slept_at_once + 1);
    // Only the counts and the average of sleeps moved.
    auto.counts = counts;
    auto.slept_average = average;
    assert_eq!(learned(&auto), before);
}

#[test]
fn a_side_confined_with_its_peer_to_one_cpu_never_spins() {
    let mut auto = waiter();
    auto.confined = true;
    // From the first wait on: no spin, and no probe however many waits pass.
    let (_, spun) = run(&mut auto, Partner::SameCore { service: 3 * US }, 5000);
    assert_eq!(spun, 0);
    // A peer whose work makes every sleep dear does not bring spinning back either.
    let (_, spun) = run(&mut auto, Partner::SameCore { service: 200 * US }, 100);
    assert_eq!(spun, 0);
    assert_eq!(auto.counts.slept_at_once, 5100);
    assert_eq!(auto.counts.spun, 0);
    // Freed (a mask changed), the side learns again from where it was: it still spins.
    auto.confined = false;
    let (_, spun) = run(&mut auto, Partner::Elsewhere { after: 2 * US }, 10);
    assert_eq!(spun, 10);
}

/// One wait that does not spin: whether it yielded first. Its yield, if any, takes
/// `yield_took`, and the data is there after it when `brings`, else the wait sleeps.
fn not_spinning(auto: &mut AutoWaiter<Fake>, yield_took: Duration, brings: bool) -> bool {
    let yielded = auto.yields_before_sleeping();
    let outcome = match (yielded, brings) {
        (true, true) => Outcome::Yielded(yielded_in(yield_took)),
        (true, false) => Outcome::Slept(Some(yielded_in(yield_took))),
        (false, _) => Outcome::Slept(None),
    };
    let waited = if yielded { yield_took } else { 10 * US };
    auto.record(&WaitSeen { budget: Duration::ZERO, waited, outcome });
    yielded
}

#[test]
fn a_wait_that_does_not_spin_yields_first_until_a_yield_hands_the_core_to_another_task() {
    let mut auto = waiter();
    // The peer on this core answers during each yield: yielding goes on.
    assert!((0..100).all(|_| not_spinning(&mut auto, 5 * US, true)));
    // A yield that ran another task's slice stops it, at once, and the first yield probe
    // comes twice the first gap of AUTO_YIELD_PROBE waits later.
    assert!(not_spinning(&mut auto, 2_000 * US, true));
    assert_eq!(auto.counts().dear_yields, 1);
    let gap = 2 * AUTO_YIELD_PROBE.every.get();
    let first: Vec<bool> = (0..=gap).map(|_| not_spinning(&mut auto, 2_000 * US, false)).collect();
    let mut expected = vec![false; gap as usize];
    expected.push(true);
    assert_eq!(first, expected, "a yield probe after {gap} waits");
    // Probes that keep running another task grow rarer, twice as far each time, up to
    // AUTO_MAX_YIELD_PROBE: after 16, 32, .., 16384 waits without one (11 probes in 32,763
    // waits), then one in every 16,385 (4 in the 67,237 left of 100,000).
    let probes = (0..100_000).filter(|_| not_spinning(&mut auto, 2_000 * US, false)).count();
    assert_eq!(probes, 11 + 4);
    // A probe whose yield brings the answer within a hand-over starts yielding again.
    let mut waits = 0;
    while !not_spinning(&mut auto, 5 * US, true) {
        waits += 1;
        assert!(waits <= AUTO_MAX_YIELD_PROBE, "no probe within {waits} waits");
    }
    assert!((0..10).all(|_| not_spinning(&mut auto, 5 * US, true)), "yielding again");
    // A cheap yield after which the data is not there yet (the peer elsewhere) changes
    // nothing: the wait sleeps, and the next one yields again.
    assert!(not_spinning(&mut auto, 1 * US, false));
    assert!(not_spinning(&mut auto, 5 * US, true));
    // The next probes are half as far off as before: other work that comes and goes on this
    // core makes yields that hand it away rarer, not a fresh start each time.
    assert!(not_spinning(&mut auto, 2_000 * US, true));
    let gap = (0..).take_while(|_| !not_spinning(&mut auto, 2_000 * US, false)).count();
    assert_eq!(gap as u32, AUTO_MAX_YIELD_PROBE, "16384 halved by the paid probe, doubled again");
    assert_eq!(auto.counts().dear_yields, 1 + 1 + 15 + 2);
}

#[test]
fn a_side_confined_with_its_peer_to_one_cpu_never_yields_first() {
    // There a yield may hand the only core to any other task for its whole slice.
    let mut auto = waiter();
    auto.confined = true;
    assert!((0..1000).all(|_| !auto.yields_before_sleeping()));
    auto.confined = false;
    assert!(auto.yields_before_sleeping());
}

/// Between two waits: the peer's handling and this side's own work.
const GAP: Duration = Duration::from_micros(20);

/// Reads of the machine over `waits` waits against `partner`, by a side that watches its peer
/// on `fake`, on a clock that moves by each wait and [`GAP`] between two; and how long they took.
fn reads_over(fake: Fake, partner: Partner, waits: u32) -> (Reads, Duration) {
    let start = Instant::now();
    let (mut auto, mut now) = (AutoWaiter::new(fake, Some(start)), start);
    for _ in 0..waits {
        let seen = partner.wait(auto.before_wait(now).0);
        now += seen.waited;
        auto.after_wait(&seen, now, true);
        now += GAP;
    }
    (auto.cpus.reads, now - start)
}

#[test]
fn the_machine_is_read_only_where_the_answer_counts() {
    let machine = Fake::shared_core();
    let elsewhere = Fake { peer: Some((1, true)), ..machine.clone() };
    let asleep_elsewhere = Fake { peer: Some((1, false)), ..machine.clone() };
    let busy = Fake { others: Some(1), ..machine };
    let seconds = |took: Duration| took.as_secs() as u32;
    // Spinning hits: the masks once a second, nothing else.
    let (reads, took) = reads_over(elsewhere, Partner::Elsewhere { after: 2 * US }, 100_000);
    assert_eq!(reads, Reads { masks: 1 + seconds(took), ..Reads::default() });
    // Sleeping beside the peer, busy work on the other CPU: only a look whether to move (the
    // peer's stat, /proc/loadavg), after 1024 hand-overs or 16 ms at most.
    let on_this_core = Partner::SameCore { service: 3 * US };
    let (reads, _) = reads_over(busy.clone(), on_this_core, 100_000);
    assert!(reads.peer_stat <= 110 && reads.loadavg <= 110 && reads.stat == 0, "{reads:?}");
    // Confined: the masks every 10 ms; the peer only before the first look at them.
    let confined = Fake { confined: true, allowed: vec![0], ..busy };
    let (reads, took) = reads_over(confined, on_this_core, 100_000);
    assert_eq!((reads.loadavg, reads.stat), (0, 0), "{reads:?}");
    let looks = took.as_millis() as u32 / 10 + 100_000 / 900;
    assert!(reads.peer_stat <= 8 && reads.masks <= looks, "{reads:?}");
    // A peer too slow to spin for (every sleep dear): the masks once a second, nothing else.
    let slow = Partner::Asleep { wake: 2_000 * US };
    let (reads, took) = reads_over(asleep_elsewhere.clone(), slow, 10_000);
    assert_eq!(reads, Reads { masks: 1 + seconds(took), ..Reads::default() });
    // A crowded machine, sleeps short enough to spin through: the masks once a second, as
    // anywhere else.
    let crowded = Fake { others: Some(3), ..asleep_elsewhere };
    let (reads, took) = reads_over(crowded, Partner::Asleep { wake: 300 * US }, 10_000);
    assert_eq!(reads, Reads { masks: 1 + seconds(took), ..Reads::default() });
}

#[test]
fn the_masks_are_read_10_ms_after_the_watch_starts_then_every_second_or_10_ms_while_confined() {
    let start = Instant::now();
    let mut auto = AutoWaiter::new(Fake { confined: true, ..Fake::shared_core() }, Some(start));
    let masks_at = |auto: &mut AutoWaiter<Fake>, now| {
        let before = auto.cpus.reads.masks;
        let plan = auto.before_wait(now);
        (auto.cpus.reads.masks - before, plan)
    };
    let spin = (DEFAULT_SPIN_BUDGET, true);
    let confined = (Duration::ZERO, false);
    assert_eq!(masks_at(&mut auto, start), (0, spin), "no look during a spawn's handshake");
    let first = start + CONFINED_RECHECK;
    assert_eq!(masks_at(&mut auto, first), (1, confined));
    assert_eq!(masks_at(&mut auto, first + 9 * Duration::from_millis(1)), (0, confined));
    assert_eq!(masks_at(&mut auto, first + CONFINED_RECHECK), (1, confined));
    // Freed: looked at again a second later, spinning as before.
    auto.cpus.confined = false;
    let freed = first + 2 * CONFINED_RECHECK;
    assert_eq!(masks_at(&mut auto, freed), (1, spin));
    assert_eq!(masks_at(&mut auto, freed + CONFINED_RECHECK), (0, spin));
    assert_eq!(masks_at(&mut auto, freed + CONFINEMENT_RECHECK), (1, spin));
    // Without a watched peer, never.
    let mut blind = waiter();
    assert_eq!(masks_at(&mut blind, start + CONFINEMENT_RECHECK), (0, spin));
}

#[test]
fn hand_overs_that_move_this_thread_to_an_idle_cpu_bring_the_spinning_back() {
    // The peer on this core, the other CPU idle: the yields that end the two spins, then
    // cheap sleeps, hand the core over.
    let mut auto = AutoWaiter::new(Fake::shared_core(), Some(Instant::now()));
    let (_, spun) = run(&mut auto, Partner::SameCore { service: 3 * US }, 4);
    assert_eq!((spun, auto.moves(), auto.cpus.moves.clone()), (2, 1, vec![1]));
    assert!(auto.is_spinning(), "spinning again on the CPU it moved to");
    // Learning starts over with a new strategy; the watch and its moves stay.
    auto.restart();
    assert_eq!((auto.counts(), auto.moves()), (AutoCounts::default(), 1));
    assert!(auto.peer.is_some());
}

#[test]
fn without_move_thread_hand_overs_move_nothing() {
    let mut auto = AutoWaiter::new(Fake::shared_core(), Some(Instant::now()));
    let mut now = Instant::now();
    for _ in 0..100 {
        let seen = Partner::SameCore { service: 3 * US }.wait(auto.before_wait(now).0);
        now += seen.waited;
        auto.after_wait(&seen, now, false);
    }
    assert_eq!((auto.moves(), auto.cpus.moves.clone(), auto.cpus.reads.stat), (0, vec![], 0));
    assert!(!auto.is_spinning());
}
