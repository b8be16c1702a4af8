//! One side of a soak pair: random batches out, every reply checked.

use std::process::ExitStatus;
use std::time::Instant;

use super::random::{random_f32_bits, random_f64_bits, skewed_len};
use super::stats::{KEPT_MISMATCHES, Stats};
use super::verify::{ValueKind, replies_match, verify};
use crate::rng::Rng;
use peerpipe::codec::{Values, ValuesMut};
use peerpipe::error::{Error, Result};
use peerpipe::frame::HEADER_LEN;
use peerpipe::peer::{DataPath, Peer};

/// The most requests a pipelined batch sends before receiving.
pub const MAX_PIPELINE_DEPTH: usize = 8;

/// Header plus the most padding: what a frame adds to its payload.
const FRAME_OVERHEAD: usize = HEADER_LEN + 7;

/// Bit pattern reply buffers start as, before a reply is first received into them.
pub(super) const UNTOUCHED: u64 = 0x5a5a_5a5a_5a5a_5a5a;

// The client

/// One request's values and the buffer its reply is received into, both kept between batches
/// so that a warm client allocates nothing.
#[derive(Debug)]
pub(super) struct Slot {
    kind: ValueKind,
    len: usize,
    /// The request's values, viewed as f64, f32 or bytes by `kind`.
    send: Vec<f64>,
    /// The reply, same layout.
    reply: Vec<f64>,
}

impl Slot {
    /// A slot for requests of up to `bytes` bytes in memory, its pages touched now.
    pub(super) fn new(bytes: usize) -> Slot {
        let words = bytes.div_ceil(8).max(1);
        let touched = f64::from_bits(UNTOUCHED);
        Slot {
            kind: ValueKind::F64,
            len: 0,
            send: vec![touched; words],
            reply: vec![touched; words],
        }
    }

    fn capacity_bytes(&self) -> usize {
        self.send.len() * 8
    }

    /// Fills the request with `len` random `kind` elements and sets every reply word to the
    /// complement of the request word, so an element the reply never wrote cannot pass.
    /// Returns the number of elements drawn from the special patterns.
    pub(super) fn fill(&mut self, kind: ValueKind, len: usize, rng: &mut Rng) -> u64 {
        debug_assert!(len * kind.memory_width() <= self.capacity_bytes());
        self.kind = kind;
        self.len = len;
        let mut special = 0;
        match kind {
            ValueKind::F64 | ValueKind::F64AsF32 => {
                for x in &mut self.send[..len] {
                    let (bits, s) = random_f64_bits(rng);
                    *x = f64::from_bits(bits);
                    special += u64::from(s);
                }
            }
            ValueKind::F32 => {
                for x in &mut bytemuck::cast_slice_mut::<f64, f32>(&mut self.send)[..len] {
                    let (bits, s) = random_f32_bits(rng);
                    *x = f32::from_bits(bits);
                    special += u64::from(s);
                }
            }
            ValueKind::Bytes => {
                for word in &mut self.send[..len.div_ceil(8)] {
                    *word = f64::from_bits(rng.next_u64());
                }
            }
        }
        let words = (len * kind.memory_width()).div_ceil(8);
        for (reply, sent) in self.reply[..words].iter_mut().zip(&self.send[..words]) {
            *reply = f64::from_bits(!sent.to_bits());
        }
        special
    }

    pub(super) fn values(&self) -> Values<'_> {
        let len = self.len;
        match self.kind {
            ValueKind::F64 => Values::F64(&self.send[..len]),
            ValueKind::F32 => Values::F32(&bytemuck::cast_slice::<f64, f32>(&self.send)[..len]),
            ValueKind::F64AsF32 => Values::F64AsF32(&self.send[..len]),
            ValueKind::Bytes => Values::Bytes(&bytemuck::cast_slice::<f64, u8>(&self.send)[..len]),
        }
    }

    pub(super) fn reply_values(&self) -> Values<'_> {
        let len = self.len;
        match self.kind {
            ValueKind::F64 | ValueKind::F64AsF32 => Values::F64(&self.reply[..len]),
            ValueKind::F32 => Values::F32(&bytemuck::cast_slice::<f64, f32>(&self.reply)[..len]),
            ValueKind::Bytes => Values::Bytes(&bytemuck::cast_slice::<f64, u8>(&self.reply)[..len]),
        }
    }

    fn reply_mut(&mut self) -> ValuesMut<'_> {
        let len = self.len;
        match self.kind {
            ValueKind::F64 => ValuesMut::F64(&mut self.reply[..len]),
            ValueKind::F64AsF32 => ValuesMut::F64FromF32(&mut self.reply[..len]),
            ValueKind::F32 => {
                ValuesMut::F32(&mut bytemuck::cast_slice_mut::<f64, f32>(&mut self.reply)[..len])
            }
            ValueKind::Bytes => {
                ValuesMut::Bytes(&mut bytemuck::cast_slice_mut::<f64, u8>(&mut self.reply)[..len])
            }
        }
    }
}

/// One side of a soak pair: drives a [`Peer`] with random batches and checks every reply.
///
/// Its buffers are sized at construction for the largest request (two buffers of
/// `8 × max_elements` bytes, plus smaller ones for pipelined batches) and their pages touched,
/// so memory does not grow during the run.
#[derive(Debug)]
pub struct Client {
    peer: Peer,
    rng: Rng,
    max_elements: usize,
    /// Bytes allowed in flight each way in a pipelined batch; 0 disables pipelining.
    pipeline_budget: usize,
    /// Deepest pipelined batch the transport allows (2 to [`MAX_PIPELINE_DEPTH`]).
    max_depth: usize,
    slots: Vec<Slot>,
    stats: Stats,
    label: String,
    record_latency: bool,
}

impl Client {
    /// A client of `peer` drawing from `seed`, sending up to `max_elements` elements per
    /// request. Pipelining is enabled when the peer reports a capacity (and allows two or
    /// more requests in flight).
    pub fn new(peer: Peer, seed: u64, max_elements: usize) -> Client {
        let max_depth = peer.max_in_flight().unwrap_or(MAX_PIPELINE_DEPTH).min(MAX_PIPELINE_DEPTH);
        let pipeline_budget =
            if max_depth < 2 { 0 } else { peer.capacity().map_or(0, |capacity| capacity / 2) };
        // Slot k takes part in batches of depth k + 1 and more, whose requests are at most
        // budget / (k + 1) bytes on the wire each, and twice that in memory (f64 narrowed).
        let mut slots = vec![Slot::new((max_elements * 8).max(pipeline_budget))];
        if pipeline_budget > 0 {
            slots.extend((1..MAX_PIPELINE_DEPTH).map(|k| Slot::new(2 * pipeline_budget / (k + 1))));
        }
        Client {
            peer,
            rng: Rng::new(seed),
            max_elements,
            pipeline_budget,
            max_depth,
            slots,
            stats: Stats::new(),
            label: String::new(),
            record_latency: true,
        }
    }

    /// Names this client in mismatch descriptions (e.g. `pair 2`).
    pub fn set_label(&mut self, label: impl Into<String>) {
        self.label = label.into();
    }

    /// The statistics so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The peer.
    pub fn peer(&self) -> &Peer {
        &self.peer
    }

    /// The server's process id, when the peer spawned one.
    pub fn server_pid(&self) -> Option<u32> {
        self.peer.server_pid()
    }

    /// Bytes kept in flight each way at most in a pipelined batch (half the pipe capacity);
    /// 0 when pipelining is off.
    pub fn pipeline_budget(&self) -> usize {
        self.pipeline_budget
    }

    /// Brings every buffer on both sides to its final size: one request of `max_elements`
    /// elements of each kind on each path, then one pipelined batch of the largest requests
    /// the budget allows. Counted in the statistics, but not in the latencies.
    ///
    /// # Errors
    /// As [`Client::exchange`].
    pub fn warm_up(&mut self) -> Result<()> {
        self.record_latency = false;
        let result = self.warm_up_batches();
        self.record_latency = true;
        result
    }

    fn warm_up_batches(&mut self) -> Result<()> {
        for path in [DataPath::ZeroCopy, DataPath::Codec] {
            for kind in ValueKind::ALL {
                if crate::interrupt::requested().is_some() {
                    return Ok(());
                }
                self.batch(path, &[(kind, self.max_elements)])?;
            }
        }
        if self.pipeline_budget > 0 {
            let depth = self.max_depth;
            let cap = self.pipelined_frame_cap(depth);
            let plan: Vec<(ValueKind, usize)> = (0..depth)
                .map(|k| {
                    let kind = ValueKind::ALL[k % 4];
                    (kind, (cap / kind.wire_width()).min(self.max_elements))
                })
                .collect();
            self.batch(DataPath::Codec, &plan)?;
        }
        Ok(())
    }

    /// Largest payload, in wire bytes, of one request in a pipelined batch of `depth`.
    fn pipelined_frame_cap(&self, depth: usize) -> usize {
        (self.pipeline_budget / depth).saturating_sub(FRAME_OVERHEAD)
    }

    /// Runs one random batch: a path (zero-copy or codec), then either one request and its
    /// reply, or (when pipelining is on, half the time) 2 to [`MAX_PIPELINE_DEPTH`] requests
    /// and then their replies; each request of a random kind and size.
    ///
    /// A corrupted reply is counted and described in the statistics, and the client goes on.
    ///
    /// # Errors
    /// The error that ended the conversation (a timeout, the server's death, a reordered,
    /// mistyped or wrongly sized reply, an ERROR reply); the requests it left without a
    /// checked reply are counted, and the error is recorded in [`Stats::errors`]. The peer is
    /// unusable afterwards except to close it.
    pub fn exchange(&mut self) -> Result<()> {
        let path = if self.rng.chance(2) { DataPath::ZeroCopy } else { DataPath::Codec };
        let depth = if self.pipeline_budget > 0 && self.rng.chance(2) {
            2 + self.rng.below(self.max_depth as u64 - 1) as usize
        } else {
            1
        };
        let mut plan = [(ValueKind::F64, 0); MAX_PIPELINE_DEPTH];
        let wire_cap = if depth == 1 { usize::MAX } else { self.pipelined_frame_cap(depth) };
        for entry in &mut plan[..depth] {
            let kind = ValueKind::ALL[self.rng.below(4) as usize];
            let max = self.max_elements.min(wire_cap / kind.wire_width());
            *entry = (kind, skewed_len(&mut self.rng, max));
        }
        self.batch(path, &plan[..depth])
    }

    /// Calls [`Client::exchange`] until `deadline`, or until a signal asks the run to end
    /// ([`crate::interrupt`]).
    ///
    /// # Errors
    /// The first error of [`Client::exchange`].
    pub fn run_until(&mut self, deadline: Instant) -> Result<()> {
        while Instant::now() < deadline && crate::interrupt::requested().is_none() {
            self.exchange()?;
        }
        Ok(())
    }

    /// Sends the requests `plan` (kind, elements) on `path`, then receives and checks their
    /// replies in order.
    fn batch(&mut self, path: DataPath, plan: &[(ValueKind, usize)]) -> Result<()> {
        self.peer.set_path(path);
        for (slot, &(kind, len)) in self.slots.iter_mut().zip(plan) {
            self.stats.special_elements += slot.fill(kind, len, &mut self.rng);
        }
        let depth = plan.len();
        for (k, slot) in self.slots[..depth].iter().enumerate() {
            if let Err(error) = self.peer.send(slot.values()) {
                // The requests already sent will never be answered to us.
                self.stats.lost += k as u64;
                return Err(self.record_error(error, path));
            }
            let stats = &mut self.stats;
            let values = slot.values();
            stats.requests += 1;
            stats.bytes_sent += values.wire_len() as u64;
            let count = &mut stats.by_kind[slot.kind.index()];
            count.requests += 1;
            count.elements += slot.len as u64;
            stats.largest_elements = stats.largest_elements.max(slot.len as u64);
            match path {
                DataPath::ZeroCopy => stats.zero_copy_requests += 1,
                DataPath::Codec => stats.codec_requests += 1,
            }
        }
        if depth == 1 {
            self.stats.single_batches += 1;
        } else {
            self.stats.pipelined_batches += 1;
        }
        for k in 0..depth {
            let received = self.peer.recv(self.slots[k].reply_mut());
            let reply = match received {
                Ok(reply) => reply,
                Err(error) => {
                    match error {
                        Error::SeqMismatch { .. } => self.stats.reordered += 1,
                        Error::DtypeMismatch { .. } | Error::CountMismatch { .. } => {
                            self.stats.corrupted += 1;
                        }
                        _ => self.stats.lost += 1,
                    }
                    self.stats.lost += (depth - k - 1) as u64;
                    return Err(self.record_error(error, path));
                }
            };
            let slot = &self.slots[k];
            let stats = &mut self.stats;
            stats.replies += 1;
            // The reply travels as the request did (f64-as-f32: as f32).
            stats.bytes_received += (slot.len * slot.kind.wire_width()) as u64;
            if self.record_latency {
                let histogram = if depth == 1 {
                    &mut stats.single_latency
                } else {
                    &mut stats.pipelined_latency
                };
                histogram.saturating_record(reply.timing.round_trip_ns.max(1));
            }
            if replies_match(slot.values(), slot.reply_values()) {
                stats.verified += 1;
                continue;
            }
            stats.corrupted += 1;
            if stats.mismatches.len() < KEPT_MISMATCHES {
                let mismatch = verify(slot.values(), slot.reply_values()).map_or_else(
                    || "the fast and the describing comparison disagree".to_owned(),
                    |m| m.to_string(),
                );
                stats.mismatches.push(format!(
                    "{}seq {} ({} × {}, {path}, batch of {depth}): {mismatch}",
                    prefix(&self.label),
                    reply.seq,
                    slot.len,
                    slot.kind,
                ));
            }
        }
        Ok(())
    }

    fn record_error(&mut self, error: Error, path: DataPath) -> Error {
        let text = format!("{}{error} (on the {path} path)", prefix(&self.label));
        self.stats.errors.push(text);
        error
    }

    /// Ends the conversation ([`Peer::close`]): BYE, and the server's exit status.
    ///
    /// # Errors
    /// As [`Peer::close`].
    pub fn close(self) -> Result<Option<ExitStatus>> {
        self.peer.close()
    }

    /// The statistics, giving up the client (its peer is dropped, which closes it).
    pub fn into_stats(self) -> Stats {
        self.stats
    }
}

fn prefix(label: &str) -> String {
    if label.is_empty() { String::new() } else { format!("{label}: ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_never_passes_a_reply_it_did_not_receive() {
        let mut rng = Rng::new(3);
        for kind in ValueKind::ALL {
            let mut slot = Slot::new(4096);
            slot.fill(kind, 100, &mut rng);
            assert!(!replies_match(slot.values(), slot.reply_values()), "{kind}");
            assert!(verify(slot.values(), slot.reply_values()).is_some(), "{kind}");
        }
    }
}
