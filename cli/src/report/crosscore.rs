//! The state of the machine: how long moving data between the first two CPUs (the two `split`
//! gives the client and the server) takes right now, measured by two threads of this process.
//!
//! Pairing takes a slow spell out of a ratio when it stretches a floor and its row alike. A
//! virtual machine can also have states that *add* cost to every cross-core transfer: on a
//! 2-core KVM guest (AMD EPYC), for minutes at a time, 4 KiB moved from one CPU to the other
//! and back took ~3.9 µs instead of ~0.9 µs, a 500-double round trip 6 µs instead of 2 µs,
//! and its ratio to the floor fell from ~1.30 to ~1.06 (the excess over the floor barely
//! moved, the floor did). No ratio can hold across that, so the report says which state each
//! round was measured in: a [`RoundProbe`] runs at the start of every round of every group,
//! whatever the placement, its figure goes into the round's `probe_ns`, and
//! [`super::states`] finds the run's states in those figures.
//!
//! The probe is a ping-pong of a 4 KiB block between the calling thread and a partner thread
//! on the second CPU, through atomics only: no system call, no wake-up, just the caches. It
//! spins, so it runs only where each side has a CPU of its own.
//!
//! Right after it the partner times a short copy of its own ([`compute_ns`]) while the calling
//! thread keeps its CPU busy, as a client does during a burst: how fast the second CPU — the
//! server's under `split` — computes beside a busy first one. The same 2-core guest had runs
//! in which the echo server answered in 180–250 ns instead of 140–150 and the ratio read ~1.31
//! instead of ~1.22, steady through a run, with the 4 KiB round trip as in the other runs; in
//! 45 of 60 such runs this copy took 1.25x its usual time or more, in 9 of 236 others (as if
//! the two CPUs were then two threads of one core). Timed while the first CPU sleeps, it did not
//! tell them apart.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

/// Bytes of the block that [`RoundProbe`] moves each way.
pub const BLOCK_BYTES: usize = 4096;

/// Spins between two looks at the clock while waiting for the other side.
const SPINS_PER_CLOCK_READ: u32 = 1024;

/// Passes over a 4 KiB block in one timed [`compute_ns`] copy.
pub const COMPUTE_PASSES: usize = 8;

/// Timed copies of every [`compute_ns`]; their median is the figure.
pub const COMPUTE_REPEATS: usize = 25;

/// How long the prober spins, busy on its own CPU, for the partner's [`compute_ns`].
const COMPUTE_DEADLINE: Duration = Duration::from_millis(2);

/// What the prober and its partner share.
struct Shared {
    /// Odd: the prober's message `n` is ready; even: the partner's answer to it.
    turn: AtomicU64,
    block: Vec<AtomicU64>,
    stop: AtomicBool,
    /// The partner's last [`compute_ns`] (0: none), written before it says a probe is over.
    compute_ns: AtomicU64,
}

/// What one [`RoundProbe::measure`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    /// The p50 round trip of [`BLOCK_BYTES`] between the two CPUs, in nanoseconds.
    pub cross_ns: u64,
    /// The partner's [`compute_ns`] right after it, in nanoseconds.
    pub compute_ns: Option<u64>,
}

/// How fast the calling thread's CPU computes now: the median time, in nanoseconds, of
/// [`COMPUTE_REPEATS`] copies of `src` into `dst`, [`COMPUTE_PASSES`] passes each, word by
/// word — the loads and stores a codec makes. `None` for empty buffers or buffers of
/// different lengths.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::crosscore::compute_ns;
/// let (src, mut dst) = (vec![7u64; 512], vec![0u64; 512]);
/// assert!(compute_ns(&src, &mut dst).is_some_and(|ns| ns > 0));
/// assert_eq!(dst, src);
/// assert_eq!(compute_ns(&src, &mut [0u64; 3]), None);
/// assert_eq!(compute_ns(&[], &mut []), None);
/// ```
pub fn compute_ns(src: &[u64], dst: &mut [u64]) -> Option<u64> {
    if src.is_empty() || src.len() != dst.len() {
        return None;
    }
    let mut times = [0u64; COMPUTE_REPEATS];
    for time in &mut times {
        let started = Instant::now();
        for _ in 0..COMPUTE_PASSES {
            // Word by word (a copy would become `rep movsb`, which this is not meant to time).
            let key = std::hint::black_box(0u64);
            for (to, from) in dst.iter_mut().zip(src) {
                *to = from ^ key;
            }
            std::hint::black_box(&mut *dst);
        }
        *time = (started.elapsed().as_nanos() as u64).max(1);
    }
    times.sort_unstable();
    Some(peerpipe::stats::nearest_rank(&times, 0.5))
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

/// The partner: answers every odd `turn` with the next even one, touching the block first,
/// until told to stop or the deadline passes.
fn partner(shared: &Shared, deadline: Instant) {
    let mut want = 1;
    while shared.wait_for(want, deadline) {
        shared.touch_block(want);
        shared.turn.store(want + 1, Ordering::Release);
        want += 2;
    }
}

/// `warmup` untimed then `timed` timed round trips of the block, numbering the messages from
/// 1: the p50 of the timed ones, or `None` when the partner did not answer before `deadline`.
fn block_round_trips(
    shared: &Shared,
    warmup: usize,
    timed: usize,
    deadline: Instant,
) -> Option<u64> {
    let mut next = 1u64;
    let mut times = Vec::with_capacity(timed);
    for i in 0..warmup + timed {
        let started = Instant::now();
        shared.touch_block(next);
        shared.turn.store(next, Ordering::Release);
        if !shared.wait_for(next + 1, deadline) {
            return None;
        }
        std::hint::black_box(shared.touch_block(next));
        if i >= warmup {
            times.push(started.elapsed().as_nanos() as u64);
        }
        next += 2;
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
/// [`ROUND_PROBE_ROUND_TRIPS`] round trips of [`BLOCK_BYTES`], after
/// [`ROUND_WARMUP_ROUND_TRIPS`] untimed ones, between the calling thread and one partner thread
/// kept for the whole group.
///
/// Between probes the partner sleeps on a channel, so it never spins while bursts run: each
/// [`RoundProbe::measure`] wakes it, ping-pongs, tells it to stop, and returns only once the
/// partner has said it is going back to sleep.
///
/// Cost, measured on a 2-core KVM guest (AMD EPYC): 0.36–0.46 ms per round in a state where
/// 4 KiB moved there and back in ~1.4 µs, 0.85–1.0 ms where it took ~3.4 µs (waking the partner
/// takes ~40 µs of it) — 5–13 % of a default round of a floor and one row (two 3.75 ms bursts).
/// The partner's [`compute_ns`] after it, with the caller spinning meanwhile, adds ~15 µs (25
/// word-by-word copies of 32 KiB, ~0.57 µs each there).
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
            stop: AtomicBool::new(true),
            compute_ns: AtomicU64::new(0),
        });
        let (start, starts) = mpsc::channel::<Instant>();
        let (finished, done) = mpsc::channel();
        let partner_shared = Arc::clone(&shared);
        let partner = spawn_partner(Box::new(move || {
            let (src, mut dst): (Vec<u64>, Vec<u64>) =
                ((0..BLOCK_BYTES as u64 / 8).collect(), vec![0; BLOCK_BYTES / 8]);
            while let Ok(deadline) = starts.recv() {
                partner(&partner_shared, deadline);
                let computed = compute_ns(&src, &mut dst).unwrap_or(0);
                partner_shared.compute_ns.store(computed, Ordering::Relaxed);
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

    /// One probe: the p50 4 KiB round trip between the calling thread and the partner, and
    /// how fast the partner's CPU computed right after ([`compute_ns`]). `None` when the
    /// partner did not answer within [`ROUND_PROBE_DEADLINE`], or has not yet ended a probe it
    /// missed: the figures are then unknown, never made up.
    pub fn measure(&mut self) -> Option<Reading> {
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
        shared.compute_ns.store(0, Ordering::Relaxed);
        let deadline = Instant::now() + ROUND_PROBE_DEADLINE;
        if self.start.as_ref().is_none_or(|start| start.send(deadline).is_err()) {
            self.broken = true;
            return None;
        }
        let (warmup, timed) = (ROUND_WARMUP_ROUND_TRIPS, ROUND_PROBE_ROUND_TRIPS);
        let measured = block_round_trips(shared, warmup, timed, deadline);
        shared.stop.store(true, Ordering::Relaxed);
        // The first CPU stays busy while the partner computes, as the client's does in a burst.
        let computing_until = Instant::now() + COMPUTE_DEADLINE;
        while shared.compute_ns.load(Ordering::Relaxed) == 0 && Instant::now() < computing_until {
            spin_loop();
        }
        match self.done.recv_timeout(ROUND_PROBE_DEADLINE) {
            // The partner wrote its figure before it said so (the channel orders the two).
            Ok(()) => measured.map(|cross_ns| Reading {
                cross_ns,
                compute_ns: Some(shared.compute_ns.load(Ordering::Relaxed)).filter(|&ns| ns > 0),
            }),
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
        // Other tests may hold a CPU for a while: a probe must get through (a probe the
        // partner missed does not stop the next ones).
        let measured = until_one_gets_through(&mut probe);
        assert!(measured.is_some_and(|r| r.cross_ns > 0), "no probe got through in a minute");
        assert!(measured.is_some_and(|r| r.compute_ns.is_some_and(|ns| ns > 0)), "{measured:?}");
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
        let measured = until_one_gets_through(&mut probe);
        assert!(measured.is_some_and(|r| r.cross_ns > 0), "no probe got through after the miss");
    }

    /// Probes until one is measured, or a minute has passed (then `None`). A probe needs both
    /// threads running at once: on a machine whose CPUs other work holds, many in a row can
    /// miss their deadline.
    fn until_one_gets_through(probe: &mut RoundProbe) -> Option<Reading> {
        let until = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < until {
            if let Some(reading) = probe.measure() {
                return Some(reading);
            }
            probe.settle(Duration::from_millis(100));
        }
        None
    }

    #[test]
    fn a_round_probe_whose_partner_cannot_start_is_none() {
        assert!(RoundProbe::start(|_run| None).is_none());
        // A partner that exits at once: every measure is unknown, and none hangs.
        let mut probe = RoundProbe::start(|_run| Some(thread::spawn(|| {}))).unwrap();
        assert_eq!((probe.measure(), probe.measure()), (None, None));
    }
}
