//! The `shm-ring` channel: a single-producer single-consumer byte ring per direction with
//! futex wake-ups (the module documentation of [`super`] and docs/PROTOCOL.md §13 give the
//! protocol).

use super::*;

impl ShmLink {
    /// Bytes waiting in the incoming ring. When the writer has rewound (the ring was empty
    /// and it started over at offset 0), skips the gap first.
    pub(super) fn ring_available(&mut self) -> Result<u64> {
        let written = self.map.atomic_u64(self.rx + W_POS).load(Acquire);
        if written != self.read_pos {
            // Stored before `W_POS`, so the Acquire load above makes it visible.
            let start = self.map.atomic_u64(self.rx + W_START).load(Acquire);
            if start > self.read_pos && start <= written {
                if start - self.read_pos >= self.capacity as u64 {
                    return Err(Error::BadRegion {
                        detail: format!(
                            "the peer rewound from {} to {start}, more than a ring of {}",
                            self.read_pos, self.capacity
                        ),
                    });
                }
                self.read_offset = self.wrapped(self.read_offset, (start - self.read_pos) as usize);
                self.read_pos = start;
            }
        }
        let available = written.wrapping_sub(self.read_pos);
        if available > self.capacity as u64 {
            return Err(Error::BadRegion {
                detail: format!(
                    "the peer announced {available} bytes in a ring of {} (write position \
                     {written}, read position {})",
                    self.capacity, self.read_pos
                ),
            });
        }
        Ok(available)
    }

    /// Bytes written to the outgoing ring and not yet read, from a fresh load of the reader's
    /// position (a gap below the last rewind counts as read).
    pub(super) fn ring_used(&self) -> Result<u64> {
        let read = self.map.atomic_u64(self.tx + R_POS).load(Acquire);
        let used = self.write_pos.wrapping_sub(read.max(self.write_start));
        if read > self.write_pos || used > self.capacity as u64 {
            return Err(Error::BadRegion {
                detail: format!(
                    "the peer's read position {read} is outside the ring (write position {}, \
                     capacity {})",
                    self.write_pos, self.capacity
                ),
            });
        }
        Ok(used)
    }

    /// Bytes that may be read now (at most a granule): `Some(0)` at the end of the stream,
    /// `None` when nothing has arrived yet.
    pub(super) fn ring_readable(&mut self) -> Result<Option<usize>> {
        let mut available = self.ring_available()?;
        if available == 0 {
            // The writer closes after its last byte; an Acquire load of the flag followed by
            // a second look at the position sees every byte written before it.
            let closed = self.map.atomic_u32(self.rx + W_CLOSED).load(Acquire) != 0;
            if !closed && !self.idle_peer_gone() {
                return Ok(None);
            }
            available = self.ring_available()?;
            if available == 0 {
                return Ok(Some(0));
            }
        }
        self.idle_polls = 0;
        Ok(Some(available.min(self.granule as u64) as usize))
    }

    /// Where the `n` bytes from ring offset `offset` of `channel` lie in the region: one
    /// stretch, or two when they wrap around the end, as (region offset, length, offset into
    /// the `n` bytes); only the stretches that are not empty (each copy is a call into memcpy,
    /// and a frame's padding is usually empty).
    pub(super) fn stretches(
        &self,
        channel: usize,
        offset: usize,
        n: usize,
    ) -> impl Iterator<Item = (usize, usize, usize)> + use<> {
        let first = n.min(self.capacity - offset);
        let data = self.data(channel);
        [(data + offset, first, 0), (data, n - first, first)].into_iter().filter(|s| s.1 > 0)
    }

    /// Publishes `total` more bytes read, and wakes a writer sleeping for room.
    pub(super) fn ring_consumed(&mut self, total: usize) -> Result<()> {
        self.read_pos += total as u64;
        self.read_offset = self.wrapped(self.read_offset, total);
        // SeqCst: a release of the bytes just read, and the first half of Dekker's pattern
        // with the writer's `W_SLEEPING` (see the module docs).
        self.map.atomic_u64(self.rx + R_POS).store(self.read_pos, SeqCst);
        let sleeping = self.map.atomic_u32(self.rx + W_SLEEPING);
        if sleeping.load(SeqCst) != 0 {
            sleeping.store(0, SeqCst);
            futex_wake(sleeping, 1)?;
        }
        Ok(())
    }

    pub(super) fn ring_read(&mut self, bufs: &mut [IoSliceMut<'_>]) -> Result<Option<usize>> {
        let available = match self.ring_readable()? {
            Some(0) => return Ok(Some(0)),
            Some(n) => n,
            None => return Ok(None),
        };
        let mut total = 0usize;
        for buf in bufs.iter_mut() {
            let n = buf.len().min(available - total);
            for (at, len, into) in self.stretches(self.rx, self.wrapped(self.read_offset, total), n)
            {
                self.map.read(at, &mut buf[into..into + len]);
            }
            total += n;
            if total == available {
                break;
            }
        }
        self.ring_consumed(total)?;
        Ok(Some(total))
    }

    /// [`Link::try_read_drained`] on a ring: `drain` reads the bytes where they lie.
    pub(super) fn ring_read_drained(
        &mut self,
        max: usize,
        drain: &mut Drain<'_>,
    ) -> Result<Option<usize>> {
        let n = match self.ring_readable()? {
            Some(0) => return Ok(Some(0)),
            Some(n) => n.min(max),
            None => return Ok(None),
        };
        for (at, len, _) in self.stretches(self.rx, self.read_offset, n) {
            self.map.read_with(at, len, |bytes| drain(bytes))?;
        }
        self.ring_consumed(n)?;
        Ok(Some(n))
    }

    /// Room to write now (at most a granule), after rewinding an emptied ring when something
    /// is to be written; `None` when the ring is full.
    pub(super) fn ring_writable(&mut self, nonempty: bool) -> Result<Option<usize>> {
        if self.write_closed {
            return Err(Error::PeerClosed { context: "after shutdown_write" });
        }
        if self.map.atomic_u32(self.tx + R_CLOSED).load(Acquire) != 0 {
            return Err(Error::PeerClosed { context: "while sending" });
        }
        let used = self.ring_used()?;
        let capacity = self.capacity as u64;
        if used == 0 && self.write_offset != 0 && nonempty {
            // The reader has taken everything: start over at offset 0 instead of moving on
            // through the ring, so that small messages keep reusing the same cache lines (as
            // a slot does) instead of cycling through the whole ring. The reader skips the
            // gap when it sees `W_START` beyond its position.
            self.write_pos += (self.capacity - self.write_offset) as u64;
            self.write_offset = 0;
            self.write_start = self.write_pos;
            self.map.atomic_u64(self.tx + W_START).store(self.write_start, Release);
        }
        // After a rewind `used` is still 0: the reader has taken everything before the gap.
        let free = capacity - used;
        if free == 0 {
            if self.idle_peer_gone() {
                return Err(Error::PeerClosed { context: "while sending" });
            }
            return Ok(None);
        }
        self.idle_polls = 0;
        Ok(Some(free.min(self.granule as u64) as usize))
    }

    /// Publishes `total` more bytes written, and wakes a reader sleeping for data.
    pub(super) fn ring_produced(&mut self, total: usize) -> Result<()> {
        self.write_pos += total as u64;
        self.write_offset = self.wrapped(self.write_offset, total);
        // SeqCst: a release of the bytes just written, and Dekker's pattern with the reader's
        // `R_SLEEPING`.
        self.map.atomic_u64(self.tx + W_POS).store(self.write_pos, SeqCst);
        let sleeping = self.map.atomic_u32(self.tx + R_SLEEPING);
        if sleeping.load(SeqCst) != 0 {
            sleeping.store(0, SeqCst);
            futex_wake(sleeping, 1)?;
        }
        Ok(())
    }

    pub(super) fn ring_write(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        let Some(free) = self.ring_writable(bufs.iter().any(|b| !b.is_empty()))? else {
            return Ok(None);
        };
        let mut total = 0usize;
        for buf in bufs {
            let n = buf.len().min(free - total);
            for (at, len, from) in
                self.stretches(self.tx, self.wrapped(self.write_offset, total), n)
            {
                self.map.write(at, &buf[from..from + len]);
            }
            total += n;
            if total == free {
                break;
            }
        }
        self.ring_produced(total)?;
        Ok(Some(total))
    }

    /// [`Link::try_write_filled`] on a ring: `fill` writes the bytes where they will lie.
    pub(super) fn ring_write_filled(
        &mut self,
        at: usize,
        len: usize,
        fill: &mut Fill<'_>,
    ) -> Result<Option<usize>> {
        let Some(free) = self.ring_writable(len > 0)? else {
            return Ok(None);
        };
        let n = len.min(free);
        for (region_at, len, from) in self.stretches(self.tx, self.write_offset, n) {
            self.map.write_with(region_at, len, |bytes| fill(at + from, bytes))?;
        }
        self.ring_produced(n)?;
        Ok(Some(n))
    }

    /// Whether a ring wait in `direction` is over: bytes (or room) are there, or the other
    /// side closed.
    pub(super) fn ring_ready(&mut self, direction: Direction) -> Result<bool> {
        Ok(match direction {
            Direction::Read => {
                self.ring_available()? > 0
                    || self.map.atomic_u32(self.rx + W_CLOSED).load(Acquire) != 0
            }
            Direction::Write => {
                self.ring_used()? < self.capacity as u64
                    || self.map.atomic_u32(self.tx + R_CLOSED).load(Acquire) != 0
            }
        })
    }

    pub(super) fn ring_sleep(
        &mut self,
        direction: Direction,
        until: Option<Instant>,
    ) -> Result<()> {
        let word = match direction {
            Direction::Read => self.rx + R_SLEEPING,
            Direction::Write => self.tx + W_SLEEPING,
        };
        self.map.atomic_u32(word).store(1, SeqCst);
        if self.ring_ready(direction)? {
            self.map.atomic_u32(word).store(0, SeqCst);
            return Ok(());
        }
        futex_wait(self.map.atomic_u32(word), 1, slice_until(until))?;
        self.map.atomic_u32(word).store(0, SeqCst);
        if !self.ring_ready(direction)? {
            self.check_peer();
        }
        Ok(())
    }
}
