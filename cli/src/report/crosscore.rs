//! The state of the machine: how long moving data between two CPUs (the two `split` gives the
//! client and the server) takes right now, measured by two threads of this process.
//!
//! Pairing takes a slow spell out of a ratio when it stretches a floor and its row alike. A
//! virtual machine can also have states that *add* cost to every cross-core transfer: on a
//! 2-core KVM guest (AMD EPYC), for minutes at a time, 4 KiB moved from one CPU to the other
//! and back took ~3.9 µs instead of ~0.9 µs, a 500-double round trip 6 µs instead of 2 µs,
//! and its ratio to the floor fell from ~1.30 to ~1.06 (the excess over the floor barely
//! moved, the floor did). No ratio can hold across that, so the report says which state each
//! group and each round was measured in: [`probe`] runs before every group with `split` or
//! `free` placement and its figures go into the floor's `cross_core`; a lighter
//! [`RoundProbe`] runs at the start of every round of every group, whatever the placement, and
//! its figure goes into the round's `probe_ns`.
//!
//! The probe is a ping-pong of one cache line and of a 4 KiB block between the calling thread
//! and a partner thread on the server's CPU, through atomics only: no system call, no wake-up,
//! just the caches. It spins, so it runs only where each side has a CPU of its own.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What [`probe`] measured: p50 round trips between the two CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrossCore {
    /// One cache line written on one CPU, read and written back on the other, read again.
    pub line_ns: u64,
    /// [`BLOCK_BYTES`] the same way: what a 4 KiB frame's bytes cost to move, without the
    /// transport.
    pub block_ns: u64,
}

/// How much the 4 KiB figure may vary before the machine counts as having changed state: on
/// the 2-core KVM guest the report was measured on, the two states differ by 3.5-4x, and a
/// state holds its figure to within ~20 % (docs/experiments/paired-measurement.md).
pub const STATE_CHANGE_FACTOR: f64 = 1.5;

/// The smallest and the largest of `probes`' 4 KiB round trips, with their factor when it
/// exceeds [`STATE_CHANGE_FACTOR`] (the machine changed state between them); `None` for no
/// probe.
pub fn block_spread(probes: &[CrossCore]) -> Option<(u64, u64, Option<f64>)> {
    let lo = probes.iter().map(|c| c.block_ns).min()?;
    let hi = probes.iter().map(|c| c.block_ns).max()?;
    let factor = hi as f64 / lo.max(1) as f64;
    Some((lo, hi, (factor > STATE_CHANGE_FACTOR).then_some(factor)))
}

/// The note for a run whose probes varied by `factor` (more than [`STATE_CHANGE_FACTOR`]),
/// printed under the report's answer and in its table.
pub fn state_change_note(factor: f64) -> String {
    format!(
        "note: moving 4 KiB between the two CPUs took {factor:.2}x longer in some groups than in \
         others: the machine changed state during the run, and ratios measured in different \
         states differ (each floor's cross_core in the JSON says which)."
    )
}

/// The median of `probes`' 4 KiB round trips (the lower middle one for an even count).
pub fn median_block_ns(probes: &[CrossCore]) -> Option<u64> {
    let mut blocks: Vec<u64> = probes.iter().map(|c| c.block_ns).collect();
    blocks.sort_unstable();
    blocks.get(blocks.len().checked_sub(1)? / 2).copied()
}

/// Bytes of the block that [`probe`] moves each way.
pub const BLOCK_BYTES: usize = 4096;

/// Timed round trips of each kind, after [`WARMUP_ROUND_TRIPS`] untimed ones: about 3 ms in
/// all on a machine where the 4 KiB round trip takes ~0.9 µs, 10 ms where it takes ~3.4 µs.
pub const PROBE_ROUND_TRIPS: usize = 1000;

/// Untimed round trips before each kind.
pub const WARMUP_ROUND_TRIPS: usize = 100;

/// The whole probe gives up (and reports nothing) when it has not finished by then: the
/// partner thread may not be getting its CPU.
pub const PROBE_DEADLINE: Duration = Duration::from_millis(500);

/// Spins between two looks at the clock while waiting for the other side.
const SPINS_PER_CLOCK_READ: u32 = 1024;

struct Shared {
    /// Odd: the prober's message `n` is ready; even: the partner's answer to it.
    turn: AtomicU64,
    block: Vec<AtomicU64>,
    /// Whether messages carry the block, or the line (`turn`) alone.
    with_block: AtomicBool,
    stop: AtomicBool,
}

impl Shared {
    /// Spins until `turn` equals `want`; false when `stop` was set or `deadline` passed.
    fn wait_for(&self, want: u64, deadline: Instant) -> bool {
        let mut spins = 0u32;
        loop {
            if self.turn.load(Ordering::Acquire) == want {
                return true;
            }
            spins += 1;
            if spins == SPINS_PER_CLOCK_READ {
                spins = 0;
                if self.stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                    return false;
                }
            }
            spin_loop();
        }
    }

    /// Reads the whole block and writes `value` into every word of it.
    fn touch_block(&self, value: u64) -> u64 {
        let mut sum = 0u64;
        for word in &self.block {
            sum = sum.wrapping_add(word.load(Ordering::Relaxed));
            word.store(value, Ordering::Relaxed);
        }
        sum
    }
}

/// Measures the [`CrossCore`] round trips between the calling thread and a partner thread
/// started by `spawn_partner` (which must start the thread where the server would run, e.g.
/// through [`super::placement::Placer::spawn`]). `None` when the partner did not answer
/// before [`PROBE_DEADLINE`] or could not be started: the figure is then unknown, never made up.
pub fn probe(
    spawn_partner: impl FnOnce(Box<dyn FnOnce() + Send>) -> Option<thread::JoinHandle<()>>,
) -> Option<CrossCore> {
    let shared = Arc::new(Shared {
        turn: AtomicU64::new(0),
        block: (0..BLOCK_BYTES / 8).map(|_| AtomicU64::new(0)).collect(),
        with_block: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    });
    let deadline = Instant::now() + PROBE_DEADLINE;
    let partner_shared = Arc::clone(&shared);
    let handle = spawn_partner(Box::new(move || partner(&partner_shared, deadline)))?;
    let measured = prober(&shared, deadline);
    shared.stop.store(true, Ordering::Relaxed);
    let joined = handle.join();
    measured.filter(|_| joined.is_ok())
}

/// The partner: answers every odd `turn` with the next even one, touching the block first when
/// asked to, until told to stop or the deadline passes.
fn partner(shared: &Shared, deadline: Instant) {
    let mut want = 1;
    while shared.wait_for(want, deadline) {
        if shared.with_block.load(Ordering::Relaxed) {
            shared.touch_block(want);
        }
        shared.turn.store(want + 1, Ordering::Release);
        want += 2;
    }
}

/// The prober's half: the line, then the block, each warmed up and then timed.
fn prober(shared: &Shared, deadline: Instant) -> Option<CrossCore> {
    let mut next = 1u64;
    let (warmup, timed) = (WARMUP_ROUND_TRIPS, PROBE_ROUND_TRIPS);
    let line_ns = phase(shared, &mut next, false, warmup, timed, deadline)?;
    let block_ns = phase(shared, &mut next, true, warmup, timed, deadline)?;
    Some(CrossCore { line_ns, block_ns })
}

/// `warmup` untimed then `timed` timed round trips of the line, or of the block when
/// `with_block`, numbering the messages from `*next`: the p50 of the timed ones, or `None`
/// when the partner did not answer before `deadline`.
fn phase(
    shared: &Shared,
    next: &mut u64,
    with_block: bool,
    warmup: usize,
    timed: usize,
    deadline: Instant,
) -> Option<u64> {
    shared.with_block.store(with_block, Ordering::Relaxed);
    let mut times = Vec::with_capacity(timed);
    for i in 0..warmup + timed {
        let started = Instant::now();
        if with_block {
            shared.touch_block(*next);
        }
        shared.turn.store(*next, Ordering::Release);
        if !shared.wait_for(*next + 1, deadline) {
            return None;
        }
        if with_block {
            std::hint::black_box(shared.touch_block(*next));
        }
        if i >= warmup {
            times.push(started.elapsed().as_nanos() as u64);
        }
        *next += 2;
    }
    times.sort_unstable();
    Some(peerpipe::stats::nearest_rank(&times, 0.5))
}

/// Untimed 4 KiB round trips at the start of every [`RoundProbe::measure`].
pub const ROUND_WARMUP_ROUND_TRIPS: usize = 30;

/// Timed 4 KiB round trips of every [`RoundProbe::measure`]; their p50 is the round's figure.
/// In a state the p50 of 200 holds to a few percent from one round to the next, while states
/// differ by 1.5x and more (see [`super::states`]).
pub const ROUND_PROBE_ROUND_TRIPS: usize = 200;

/// How long one [`RoundProbe::measure`] may wait for its partner, and then for the partner to
/// go back to sleep, before it gives up on the round (and the partner on the group).
pub const ROUND_PROBE_DEADLINE: Duration = Duration::from_millis(20);

/// A short probe of the machine's state at the start of every round of a group: the p50 of
/// [`ROUND_PROBE_ROUND_TRIPS`] round trips of [`BLOCK_BYTES`] (as [`CrossCore::block_ns`]),
/// after [`ROUND_WARMUP_ROUND_TRIPS`] untimed ones, between the calling thread and one partner
/// thread kept for the whole group.
///
/// Between probes the partner sleeps on a channel, so it never spins while bursts run: each
/// [`RoundProbe::measure`] wakes it, ping-pongs, tells it to stop, and returns only once the
/// partner has said it is going back to sleep.
///
/// Cost, measured on a 2-core KVM guest (AMD EPYC): 0.36–0.46 ms per round in a state where
/// 4 KiB moved there and back in ~1.4 µs, 0.85–1.0 ms where it took ~3.4 µs (waking the partner
/// takes ~40 µs of it) — 5–13 % of a default round of a floor and one row (two 3.75 ms bursts).
/// When other tasks hold the partner's CPU it waits for it, up to [`ROUND_PROBE_DEADLINE`].
pub struct RoundProbe {
    shared: Arc<Shared>,
    /// Wakes the partner for one probe that must end by the deadline sent; dropped to end it.
    start: Option<mpsc::Sender<Instant>>,
    /// The partner's word that a probe is over and it is going back to sleep.
    done: mpsc::Receiver<()>,
    partner: Option<thread::JoinHandle<()>>,
    /// Set when the partner has gone (its channel closed): every later measure is `None`.
    broken: bool,
    /// Set when the partner did not say in time that a probe was over: it is not woken again
    /// until it has (it stops on its own once it runs), and measures meanwhile are `None`.
    awaiting_done: bool,
}

impl RoundProbe {
    /// Starts the partner thread through `spawn_partner` (which must start it on another CPU
    /// than the caller's, e.g. with [`super::placement::Placer::spawn_on_second_cpu`]); `None`
    /// when it could not be started.
    pub fn start(
        spawn_partner: impl FnOnce(Box<dyn FnOnce() + Send>) -> Option<thread::JoinHandle<()>>,
    ) -> Option<RoundProbe> {
        let shared = Arc::new(Shared {
            turn: AtomicU64::new(0),
            block: (0..BLOCK_BYTES / 8).map(|_| AtomicU64::new(0)).collect(),
            with_block: AtomicBool::new(true),
            stop: AtomicBool::new(true),
        });
        let (start, starts) = mpsc::channel::<Instant>();
        let (finished, done) = mpsc::channel();
        let partner_shared = Arc::clone(&shared);
        let partner = spawn_partner(Box::new(move || {
            while let Ok(deadline) = starts.recv() {
                partner(&partner_shared, deadline);
                if finished.send(()).is_err() {
                    return;
                }
            }
        }))?;
        Some(RoundProbe {
            shared,
            start: Some(start),
            done,
            partner: Some(partner),
            broken: false,
            awaiting_done: false,
        })
    }

    /// One probe: the p50 4 KiB round trip between the calling thread and the partner, in
    /// nanoseconds. `None` when the partner did not answer within [`ROUND_PROBE_DEADLINE`], or
    /// has not yet ended a probe it missed: the figure is then unknown, never made up.
    pub fn measure(&mut self) -> Option<u64> {
        if self.awaiting_done {
            match self.done.try_recv() {
                Ok(()) => self.awaiting_done = false,
                Err(mpsc::TryRecvError::Empty) => return None,
                Err(mpsc::TryRecvError::Disconnected) => self.broken = true,
            }
        }
        if self.broken {
            return None;
        }
        let shared = &*self.shared;
        // The partner is asleep (the last probe's `done` said so): nothing races these.
        shared.turn.store(0, Ordering::Relaxed);
        shared.stop.store(false, Ordering::Relaxed);
        let deadline = Instant::now() + ROUND_PROBE_DEADLINE;
        if self.start.as_ref().is_none_or(|start| start.send(deadline).is_err()) {
            self.broken = true;
            return None;
        }
        let mut next = 1;
        let (warmup, timed) = (ROUND_WARMUP_ROUND_TRIPS, ROUND_PROBE_ROUND_TRIPS);
        let measured = phase(shared, &mut next, true, warmup, timed, deadline);
        shared.stop.store(true, Ordering::Relaxed);
        match self.done.recv_timeout(ROUND_PROBE_DEADLINE) {
            Ok(()) => measured,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // Still spinning, or never woke: it stops on its own once it runs (`stop`
                // stays set); until it says so it is not woken again.
                self.awaiting_done = true;
                None
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.broken = true;
                None
            }
        }
    }

    /// Waits up to `timeout` for a partner that missed a probe to end it; whether none is
    /// pending now.
    #[cfg(test)]
    fn settle(&mut self, timeout: Duration) -> bool {
        if self.awaiting_done && self.done.recv_timeout(timeout).is_ok() {
            self.awaiting_done = false;
        }
        !self.awaiting_done
    }
}

impl Drop for RoundProbe {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // A closed channel ends the partner's loop.
        drop(self.start.take());
        if let Some(partner) = self.partner.take() {
            let _ = partner.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::key::Placement;
    use crate::report::placement::Placer;

    #[test]
    fn two_threads_measure_both_round_trips() {
        // On two CPUs of their own when there are two (as the report places them), so that
        // each hand-over does not wait for a time slice; other tests may still hold a CPU for
        // a while, so one of three tries must get through.
        let try_once = || match Placer::new(Placement::Split) {
            Ok(placer) => probe(|run| placer.spawn(|| Ok(thread::spawn(run))).ok()),
            Err(_) => probe(|run| Some(thread::spawn(run))),
        };
        let measured = (0..3).find_map(|_| try_once()).expect("a partner that answers");
        assert!(measured.line_ns > 0 && measured.block_ns > 0, "{measured:?}");
    }

    /// CPU time (user + system, in clock ticks) thread `tid` of this process has used so far.
    fn cpu_ticks_of(tid: u64) -> u64 {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..].split_whitespace().collect();
        // Fields 14 and 15 (utime, stime), counted from the state (field 3).
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }

    #[test]
    fn a_round_probe_measures_every_round_and_its_partner_sleeps_between() {
        let Ok(placer) = Placer::new(Placement::Same) else { return };
        let partner_tid = Arc::new(AtomicU64::new(0));
        let partner_ended = Arc::new(AtomicBool::new(false));
        let (tid, ended) = (Arc::clone(&partner_tid), Arc::clone(&partner_ended));
        let spawn = move |run: Box<dyn FnOnce() + Send>| {
            let start = || {
                Ok(thread::spawn(move || {
                    tid.store(nix::unistd::gettid().as_raw() as u64, Ordering::Relaxed);
                    run();
                    ended.store(true, Ordering::Relaxed);
                }))
            };
            placer.spawn_on_second_cpu(start).ok()
        };
        let Some(mut probe) = RoundProbe::start(spawn) else {
            println!("skipping: the probe needs two CPUs");
            return;
        };
        // Other tests may hold a CPU for a while: one probe of fifty must get through (a probe
        // the partner missed does not stop the next ones).
        let mut measured = Vec::new();
        for _ in 0..50 {
            measured.push(probe.measure());
            if measured.last().copied().flatten().is_some() {
                break;
            }
            probe.settle(Duration::from_millis(100));
        }
        assert!(measured.iter().flatten().any(|&ns| ns > 0), "{measured:?}");
        assert!(probe.settle(Duration::from_secs(5)), "the partner never ended a probe");
        // Between probes the partner sleeps on its channel: over 200 ms it takes no CPU time,
        // where a spinning one would take all of it (20 ticks at 100 Hz).
        let tid = partner_tid.load(Ordering::Relaxed);
        let before = cpu_ticks_of(tid);
        thread::sleep(Duration::from_millis(200));
        let used = cpu_ticks_of(tid) - before;
        assert!(used <= 2, "the partner used {used} ticks while no probe ran");
        // Dropping the probe ends and joins its partner.
        assert!(!partner_ended.load(Ordering::Relaxed));
        drop(probe);
        assert!(partner_ended.load(Ordering::Relaxed));
    }

    #[test]
    fn a_probe_the_partner_missed_does_not_end_the_probing() {
        // A partner that first wakes long after the deadline (as under a busy machine), then
        // answers: the first measure is unknown, later ones are measured again.
        let Some(mut probe) = RoundProbe::start(|run| {
            Some(thread::spawn(move || {
                thread::sleep(ROUND_PROBE_DEADLINE * 5);
                run();
            }))
        }) else {
            unreachable!("a plain thread starts")
        };
        assert_eq!(probe.measure(), None);
        assert!(probe.settle(Duration::from_secs(5)), "the partner ends the missed probe");
        let measured = (0..50).find_map(|_| {
            let ns = probe.measure();
            probe.settle(Duration::from_millis(100));
            ns
        });
        assert!(measured.is_some_and(|ns| ns > 0), "no probe got through after the miss");
    }

    #[test]
    fn a_round_probe_whose_partner_cannot_start_is_none() {
        assert!(RoundProbe::start(|_run| None).is_none());
        // A partner that exits at once: every measure is unknown, and none hangs.
        let mut probe = RoundProbe::start(|_run| Some(thread::spawn(|| {}))).unwrap();
        assert_eq!((probe.measure(), probe.measure()), (None, None));
    }

    #[test]
    fn a_partner_that_never_answers_gives_nothing() {
        assert_eq!(probe(|_run| Some(thread::spawn(|| {}))), None);
    }

    #[test]
    fn spreads_and_medians_of_probes() {
        let probe = |block_ns| CrossCore { line_ns: 100, block_ns };
        assert_eq!(block_spread(&[]), None);
        assert_eq!(median_block_ns(&[]), None);
        assert_eq!(block_spread(&[probe(900), probe(1000)]), Some((900, 1000, None)));
        let (lo, hi, changed) = block_spread(&[probe(900), probe(3600), probe(950)]).unwrap();
        assert_eq!((lo, hi, changed), (900, 3600, Some(4.0)));
        assert_eq!(median_block_ns(&[probe(3600), probe(900), probe(950)]), Some(950));
        assert_eq!(median_block_ns(&[probe(3600), probe(900)]), Some(900));
    }

    #[test]
    fn a_partner_that_cannot_start_gives_nothing() {
        assert_eq!(probe(|_run| None), None);
    }
}
