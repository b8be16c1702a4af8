//! What a connection under [`Wait::Auto`] watches of its peer, through one [`Os`].

use std::time::Instant;

use super::{Confinement, Os, Placement};
#[cfg(doc)]
use crate::transport::Wait;

/// Where the peer runs, for a connection under [`Wait::Auto`]: whether the two may run on one
/// CPU only, the same one ([`Confinement`]); whether the peer last ran on this thread's CPU;
/// and when to move this thread off a core the two keep handing to each other
/// ([`Placement`]). One [`Os`] serves all three, so the peer's `/proc/PID/stat`, when kept
/// open, serves every read of it.
#[derive(Debug)]
pub struct PeerWatch {
    confinement: Confinement,
    placement: Placement<Os>,
}

impl PeerWatch {
    /// Watches process `peer`, its `/proc/PID/stat` kept open from now until the watch is
    /// dropped when `keep_file` ([`Os::keeping_the_peers_file`]), else opened at each read.
    pub fn new(peer: u32, keep_file: bool) -> PeerWatch {
        let os = if keep_file { Os::keeping_the_peers_file(peer) } else { Os::new(peer) };
        PeerWatch { confinement: Confinement::new(peer), placement: Placement::new(os) }
    }

    /// [`Confinement::check`].
    pub fn confined(&mut self, now: Instant) -> Option<bool> {
        self.confinement.check(now)
    }

    /// [`Placement::peer_shares_core`].
    pub fn shares_core(&mut self) -> Option<bool> {
        self.placement.peer_shares_core()
    }

    /// [`Placement::after_giving_up_the_core`]: whether this thread just moved to another CPU.
    pub fn after_giving_up_the_core(&mut self, now: Instant, hand_over: bool) -> bool {
        self.placement.after_giving_up_the_core(now, hand_over)
    }

    /// Moves made so far.
    pub fn moves(&self) -> u64 {
        self.placement.moves()
    }
}
