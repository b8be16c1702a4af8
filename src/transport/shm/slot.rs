//! The `shm-sem` channel: one slot per direction guarded by two process-shared semaphores,
//! `empty` and `full` (the module documentation of [`super`] and docs/PROTOCOL.md §13 give
//! the protocol).

use super::*;

impl ShmLink {
    pub(super) fn slot_take_chunk(&mut self) -> Result<Option<usize>> {
        if self.map.atomic_u32(self.rx + CHUNK_READY).load(Acquire) == 0 {
            if self.map.atomic_u32(self.rx + W_CLOSED).load(Acquire) != 0 {
                // The close token: leave it for any later read, which also sees the end.
                self.map.sem_post(self.rx + SEM_FULL)?;
                return Ok(Some(0));
            }
            return Err(Error::BadRegion {
                detail: "the peer posted `full` without a chunk in the slot".into(),
            });
        }
        let len = self.map.atomic_u64(self.rx + CHUNK_LEN).load(Acquire);
        if len == 0 || len > self.capacity as u64 {
            return Err(Error::BadRegion {
                detail: format!("expected a chunk of 1 to {} bytes, found {len}", self.capacity),
            });
        }
        self.chunk = Some((len as usize, 0));
        Ok(None)
    }

    pub(super) fn slot_read(&mut self, bufs: &mut [IoSliceMut<'_>]) -> Result<Option<usize>> {
        if self.chunk.is_none() {
            let taken = std::mem::take(&mut self.holding_full)
                || self.map.sem_try_wait(self.rx + SEM_FULL)?;
            if !taken {
                let closed = self.map.atomic_u32(self.rx + W_CLOSED).load(Acquire) != 0;
                // A closing writer posts `full`, so `closed` alone means the token is coming.
                if !closed && self.idle_peer_gone() {
                    return Ok(Some(0));
                }
                return Ok(None);
            }
            self.idle_polls = 0;
            if let Some(end) = self.slot_take_chunk()? {
                return Ok(Some(end));
            }
        }
        let (len, mut taken) = self.chunk.expect("a chunk was just taken");
        let data = self.data(self.rx);
        let mut total = 0;
        for buf in bufs.iter_mut() {
            let n = buf.len().min(len - taken);
            self.map.read(data + taken, &mut buf[..n]);
            taken += n;
            total += n;
            if taken == len {
                break;
            }
        }
        if taken == len {
            self.chunk = None;
            self.map.atomic_u32(self.rx + CHUNK_READY).store(0, Release);
            self.map.sem_post(self.rx + SEM_EMPTY)?;
        } else {
            self.chunk = Some((len, taken));
        }
        Ok(Some(total))
    }

    pub(super) fn slot_write(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        if self.write_closed {
            return Err(Error::PeerClosed { context: "after shutdown_write" });
        }
        if self.map.atomic_u32(self.tx + R_CLOSED).load(Acquire) != 0 {
            return Err(Error::PeerClosed { context: "while sending" });
        }
        let taken = std::mem::take(&mut self.holding_empty)
            || self.map.sem_try_wait(self.tx + SEM_EMPTY)?;
        if !taken {
            if self.idle_peer_gone() {
                return Err(Error::PeerClosed { context: "while sending" });
            }
            return Ok(None);
        }
        self.idle_polls = 0;
        let data = self.data(self.tx);
        let mut total = 0;
        for buf in bufs {
            let n = buf.len().min(self.capacity - total);
            self.map.write(data + total, &buf[..n]);
            total += n;
            if total == self.capacity {
                break;
            }
        }
        if total == 0 {
            // Nothing to send: give the slot back untouched.
            self.map.sem_post(self.tx + SEM_EMPTY)?;
            return Ok(Some(0));
        }
        self.map.atomic_u64(self.tx + CHUNK_LEN).store(total as u64, SeqCst);
        self.map.atomic_u32(self.tx + CHUNK_READY).store(1, Release);
        self.map.sem_post(self.tx + SEM_FULL)?;
        Ok(Some(total))
    }

    pub(super) fn slot_sleep(
        &mut self,
        direction: Direction,
        until: Option<Instant>,
    ) -> Result<()> {
        let (sem, holding) = match direction {
            Direction::Read => (self.rx + SEM_FULL, &mut self.holding_full),
            Direction::Write => (self.tx + SEM_EMPTY, &mut self.holding_empty),
        };
        if *holding {
            return Ok(());
        }
        *holding = self.map.sem_wait_for(sem, slice_until(until))?;
        if !*holding {
            self.check_peer();
        }
        Ok(())
    }
}
