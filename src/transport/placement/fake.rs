//! A scripted machine for the tests of placement and of the `auto` wait, that counts what is
//! read of it.

use super::cpus::Cpus;

/// This thread on `here`, the peer on `peer` (runnable or not), `others` tasks runnable besides
/// the two, each CPU idle for `idle_share` of the time (its times advance with `millis`), and
/// whether the two masks confine both to one CPU. `reads` counts the reads by kind.
#[derive(Clone, Debug)]
pub(crate) struct Fake {
    pub(crate) here: usize,
    pub(crate) peer: Option<(usize, bool)>,
    pub(crate) allowed: Vec<usize>,
    pub(crate) others: Option<usize>,
    pub(crate) idle_share: Vec<f64>,
    pub(crate) millis: u64,
    pub(crate) moves: Vec<usize>,
    pub(crate) confined: bool,
    pub(crate) reads: Reads,
}

/// Reads of a [`Fake`]: of the peer's `/proc/PID/stat`, of `/proc/loadavg`, of `/proc/stat`,
/// and of affinity masks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reads {
    pub(crate) peer_stat: u32,
    pub(crate) loadavg: u32,
    pub(crate) stat: u32,
    pub(crate) masks: u32,
}

impl Fake {
    /// Two CPUs, this thread and its (runnable) peer on CPU 0, nothing else runnable.
    pub(crate) fn shared_core() -> Fake {
        Fake {
            here: 0,
            peer: Some((0, true)),
            allowed: vec![0, 1],
            others: Some(0),
            idle_share: vec![0.0, 1.0],
            millis: 0,
            moves: vec![],
            confined: false,
            reads: Reads::default(),
        }
    }
}

impl Default for Fake {
    fn default() -> Fake {
        Fake::shared_core()
    }
}

impl Cpus for Fake {
    fn current(&mut self) -> Option<usize> {
        Some(self.here)
    }
    fn peer(&mut self) -> Option<(usize, bool)> {
        self.reads.peer_stat += 1;
        self.peer
    }
    fn allowed(&mut self) -> Option<impl Iterator<Item = usize>> {
        self.reads.masks += 1;
        Some(self.allowed.iter().copied())
    }
    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>) {
        self.reads.stat += 1;
        times.clear();
        for (cpu, share) in self.idle_share.iter().enumerate() {
            times.push((cpu, (self.millis as f64 * share) as u64, self.millis));
        }
    }
    fn runnable(&mut self) -> Option<usize> {
        self.reads.loadavg += 1;
        // This thread, the peer when runnable, and the others.
        let peer = usize::from(self.peer.is_some_and(|(_, runnable)| runnable));
        Some(1 + peer + self.others?)
    }
    fn move_to(&mut self, cpu: usize) -> bool {
        self.moves.push(cpu);
        self.here = cpu;
        true
    }
    fn confined_with_peer(&mut self) -> bool {
        self.reads.masks += 1;
        self.confined
    }
}
