//! The shared-memory links: a memfd region mapped by both processes, one channel per direction.
//!
//! The client creates the region with `memfd_create` (no name in `/dev/shm`, so nothing is
//! left behind by a crash), maps it, and hands the descriptor to the server as its stdin; the
//! server maps it and closes the descriptor. Bytes travel exactly as over a pipe: the frames
//! of wire format v1 (header, payload, padding) are what is written into the region, so the
//! frame logic of [`super::Transport`] is shared with pipes.
//!
//! Two kinds of channel:
//!
//! - **`shm-sem`**: one slot per direction and two process-shared semaphores, `empty` (the
//!   slot may be written, starts at 1) and `full` (a chunk is ready, starts at 0). A writer
//!   takes `empty`, copies up to a slot of bytes and posts `full`; the reader takes `full`,
//!   copies the chunk out and posts `empty`. With one request slot and one reply slot this is
//!   the classic "three semaphores" exchange (empty, full, done = the reply slot's `full`),
//!   with the reply slot's own `empty` added so frames larger than a slot can stream through.
//! - **`shm-ring`**: a single-producer single-consumer byte ring per direction. The writer
//!   owns `write_pos`, the reader `read_pos` (both count bytes since the start; their
//!   difference is the fill level); each publishes its position with a release store that
//!   the other side's acquire load pairs with, which hands over the bytes in between. A side
//!   that has to sleep sets its `sleeping` word and sleeps on it with a futex; the other side
//!   wakes it only when that word is set, so a spinning reader costs the writer no system
//!   call. The sleeper stores its flag then re-reads the position, the waker stores the
//!   position then reads the flag, all four sequentially consistent (Dekker's pattern): at
//!   least one of them sees the other, so no wake-up is lost. Two refinements, both measured
//!   (docs/experiments/shared-memory.md): a read or write copies at most [`RING_GRANULE`] bytes before
//!   publishing, so a large frame streams with both sides copying at once; and a writer that
//!   finds the ring empty *rewinds* to offset 0 (announcing the skipped gap in `W_START`), so
//!   small messages reuse the same cache lines instead of cycling through the whole ring.
//!
//! Neither kind can learn from the memory that the peer died, so each side also holds one end
//! of a pipe whose other end the peer holds (the child's stdout): when the peer dies, `poll`
//! reports `POLLHUP` or `POLLERR` on it. A sleeping side wakes at least every
//! [`LIVENESS_INTERVAL`] to look; a spinning side looks every few thousand empty polls. A peer
//! that closes cleanly sets its `closed` flag and wakes the other side at once.
//!
//! All `unsafe` code (mapping, atomics in the region, semaphores, futexes) is in `crate::sys`.
//! Everything read from the region is validated before use: a peer that scribbles on it gets
//! [`Error::BadRegion`], never an out-of-bounds access.
//!
//! This file holds the region (its layout, creating and attaching it) and the link that
//! dispatches on the kind; `ring` and `slot` hold the two channels.

mod ring;
mod slot;

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::Ordering::{Acquire, Release, SeqCst};
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::memfd::{MFdFlags, memfd_create};
use nix::sys::stat::{SFlag, fstat};

use super::kind::TransportKind;
use super::link::{Direction, Drain, Fill, Link, read_drained_via_chunk, write_filled_via_chunk};
use crate::error::{Error, Result};
use crate::sys::{Mapping, SEM_BYTES, futex_wait, futex_wake};

/// Bytes per direction of a shared-memory link when none is asked for: 1 MiB, the same as the
/// default pipe capacity, so the two compare like for like.
pub const DEFAULT_SHM_CAPACITY: usize = 1 << 20;
/// Smallest capacity per direction accepted: 4 KiB.
pub const MIN_SHM_CAPACITY: usize = 4096;
/// Largest capacity per direction accepted: 1 GiB.
pub const MAX_SHM_CAPACITY: usize = 1 << 30;
/// Longest a sleeping side goes without checking that its peer is alive.
pub const LIVENESS_INTERVAL: Duration = Duration::from_millis(10);
/// Most bytes a ring read or write copies before publishing its position (or a quarter of
/// the ring, if smaller): large frames then stream, the reader copying one piece out while
/// the writer copies the next in.
pub const RING_GRANULE: usize = 64 << 10;
/// Empty polls of shared memory between two reads of the clock while spinning: a poll costs a
/// few nanoseconds, a clock read tens, so the deadline is checked every few hundred ns.
const SPIN_POLLS_PER_CLOCK_READ: u32 = 16;
/// Requests that may be in flight over `shm-sem` (see `ShmLink::max_frames_in_flight`).
const SLOT_FRAMES_IN_FLIGHT: usize = 3;
/// Empty polls between two liveness checks while spinning (a check is one `poll` call).
const POLLS_PER_LIVENESS_CHECK: u32 = 4096;

/// First bytes of every region: "peerpipe shared memory, layout 1".
const MAGIC: [u8; 8] = *b"PPSHM\x00v1";
const LAYOUT_VERSION: u32 = 1;
/// Region header: magic, version, kind, capacity, total length; padded to two cache lines.
const REGION_HEADER: usize = 128;
const OFF_MAGIC: usize = 0;
const OFF_VERSION: usize = 8;
const OFF_KIND: usize = 12;
const OFF_CAPACITY: usize = 16;
const OFF_TOTAL: usize = 24;

// A channel: four 128-byte blocks of control words, then `capacity` bytes of data. Each block
// is written by one side only, and the words read on every message (the positions) are kept
// apart from those read only to decide whether to wake or stop (the flags), so that checking
// a flag never pulls a line the other side is about to write. 128 bytes, not 64, because
// CPUs fetch lines in adjacent pairs.
/// Ring: bytes ever written (writer's block 0).
const W_POS: usize = 0;
/// Ring: where the writer last rewound to (block 0): the bytes from the reader's position up
/// to here are a gap, not data (see `ShmLink::ring_write`).
const W_START: usize = 8;
/// Slot: semaphore `full`, posted by the writer, taken by the reader (block 0).
const SEM_FULL: usize = 0;
/// Slot: length of the chunk in the slot (block 0).
const CHUNK_LEN: usize = SEM_BYTES;
/// Slot: 1 while the slot holds a chunk not yet taken; 0 after `full` means "closed".
const CHUNK_READY: usize = SEM_BYTES + 8;
/// Both: 1 once the writer has closed its side (writer's block 1).
const W_CLOSED: usize = 128;
/// Ring: 1 while the writer sleeps waiting for room (futex word, block 1).
const W_SLEEPING: usize = 132;
/// Ring: bytes ever read (reader's block 2).
const R_POS: usize = 256;
/// Slot: semaphore `empty`, posted by the reader, taken by the writer (block 2).
const SEM_EMPTY: usize = 256;
/// Both: 1 once the reader has closed its side (reader's block 3).
const R_CLOSED: usize = 384;
/// Ring: 1 while the reader sleeps waiting for data (futex word, block 3).
const R_SLEEPING: usize = 388;
/// Where the data starts.
const DATA: usize = 512;
const _: () = assert!(CHUNK_READY + 4 <= W_CLOSED && SEM_EMPTY + SEM_BYTES <= R_CLOSED);

/// Bytes of a region with `capacity` bytes per direction (`capacity` a multiple of 64).
fn region_len(capacity: usize) -> usize {
    REGION_HEADER + 2 * (DATA + capacity)
}

fn kind_code(kind: TransportKind) -> u32 {
    match kind {
        TransportKind::Pipe => 0,
        TransportKind::ShmSem => 1,
        TransportKind::ShmRing => 2,
        TransportKind::Tcp => 3, // never written in a region
    }
}

/// One end of a shared-memory link ([`TransportKind::ShmSem`] or [`TransportKind::ShmRing`]).
#[derive(Debug)]
pub struct ShmLink {
    kind: TransportKind,
    map: Mapping,
    capacity: usize,
    /// Ring: most bytes copied per read or write (see [`RING_GRANULE`]).
    granule: usize,
    /// Offset of the channel this end writes.
    tx: usize,
    /// Offset of the channel this end reads.
    rx: usize,
    /// Ring: our own copies of the positions we own (never re-read from the region).
    write_pos: u64,
    read_pos: u64,
    /// Ring: `write_pos % capacity` and `read_pos % capacity`, kept up to date by addition
    /// (a 64-bit division per copy cost ~5 ns each, several per frame).
    write_offset: usize,
    read_offset: usize,
    /// Ring: where this writer last rewound to (see `ring_write`).
    write_start: u64,
    /// Slot: `empty` of the outgoing slot was taken by a sleep and not yet used.
    holding_empty: bool,
    /// Slot: `full` of the incoming slot was taken by a sleep and not yet used.
    holding_full: bool,
    /// Slot: the incoming chunk being copied out: (length, bytes already taken).
    chunk: Option<(usize, usize)>,
    /// The end of a pipe the peer holds the other end of; see the module docs.
    liveness: OwnedFd,
    idle_polls: u32,
    peer_gone: bool,
    /// [`Link::shutdown_write`] was called.
    write_closed: bool,
}

impl TransportKind {
    /// The transport this process's stdin was set up for by the client that spawned it: a
    /// pipe, or the shared region of `peer --transport shm-sem|shm-ring` (see
    /// [`ShmLink::kind_of`]). Pass it to [`crate::server::stdio_transport_of`] to serve
    /// whatever the client chose.
    ///
    /// # Errors
    /// As [`ShmLink::kind_of`].
    pub fn of_stdin() -> Result<TransportKind> {
        ShmLink::kind_of(std::io::stdin().as_fd())
    }
}

impl ShmLink {
    /// Creates a region of `kind` with `capacity` bytes per direction (rounded up to a
    /// multiple of 64) and this process's end of it, the client's. Returns the memfd to hand
    /// to the server (as its stdin when spawning: see `Peer::spawn`); `liveness` is this
    /// side's end of a pipe whose other end the server holds (its stdout).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `Pipe` or a capacity outside
    /// [`MIN_SHM_CAPACITY`]..=[`MAX_SHM_CAPACITY`]; [`Error::Sys`] when the memfd, its size,
    /// the mapping or a semaphore cannot be made.
    pub fn create(
        kind: TransportKind,
        capacity: usize,
        liveness: OwnedFd,
    ) -> Result<(ShmLink, OwnedFd)> {
        if !kind.is_shared_memory() {
            return Err(Error::InvalidArgument {
                what: "shared-memory transport",
                reason: "pipe is not a shared-memory transport".into(),
            });
        }
        if !(MIN_SHM_CAPACITY..=MAX_SHM_CAPACITY).contains(&capacity) {
            return Err(Error::InvalidArgument {
                what: "shared-memory capacity",
                reason: format!(
                    "expected {MIN_SHM_CAPACITY} to {MAX_SHM_CAPACITY} bytes, found {capacity}"
                ),
            });
        }
        let capacity = capacity.next_multiple_of(64);
        let len = region_len(capacity);
        let fd = memfd_create(c"peerpipe-shm", MFdFlags::MFD_CLOEXEC)?;
        nix::unistd::ftruncate(&fd, len as i64)?;
        let map = Mapping::map_shared(fd.as_fd(), len)?;
        // A new memfd reads as zeros: positions, flags and lengths start at 0.
        map.write(OFF_MAGIC, &MAGIC);
        map.write(OFF_VERSION, &LAYOUT_VERSION.to_ne_bytes());
        map.write(OFF_KIND, &kind_code(kind).to_ne_bytes());
        map.write(OFF_CAPACITY, &(capacity as u64).to_ne_bytes());
        map.write(OFF_TOTAL, &(len as u64).to_ne_bytes());
        let channels = [REGION_HEADER, REGION_HEADER + DATA + capacity];
        if kind == TransportKind::ShmSem {
            for channel in channels {
                map.sem_init(channel + SEM_EMPTY, 1)?;
                map.sem_init(channel + SEM_FULL, 0)?;
            }
        }
        let link = ShmLink::new(kind, map, capacity, channels[0], channels[1], liveness);
        Ok((link, fd))
    }

    /// Maps the region behind `fd` (made by [`ShmLink::create`] in the client) as the server's
    /// end, checking that it is a region of `kind` and that its layout is consistent, then
    /// closes `fd` (the mapping keeps the memory). `liveness` is the server's end of the pipe
    /// whose other end the client holds.
    ///
    /// # Errors
    /// [`Error::BadRegion`] naming what was expected and found when `fd` is not a regular
    /// file (a pipe, say: the server was not started by a shared-memory client) or the
    /// region's header or size do not match; [`Error::Sys`] when it cannot be mapped.
    pub fn attach(kind: TransportKind, fd: OwnedFd, liveness: OwnedFd) -> Result<ShmLink> {
        let stat = fstat(&fd)?;
        let file_type = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        if file_type != SFlag::S_IFREG {
            let found = match file_type {
                SFlag::S_IFIFO => "a pipe",
                SFlag::S_IFCHR => "a character device (a terminal or /dev/null?)",
                SFlag::S_IFSOCK => "a socket",
                _ => "not a regular file",
            };
            return Err(Error::BadRegion {
                detail: format!(
                    "expected a memfd from a shared-memory client on the server's stdin, found \
                     {found}; a {kind} server must be spawned by a client of the same \
                     transport (e.g. `peer --transport {kind}`), on the same machine"
                ),
            });
        }
        let size = stat.st_size.max(0) as u64;
        let smallest = region_len(MIN_SHM_CAPACITY) as u64;
        let largest = region_len(MAX_SHM_CAPACITY.next_multiple_of(64)) as u64;
        if !(smallest..=largest).contains(&size) {
            return Err(Error::BadRegion {
                detail: format!("expected {smallest} to {largest} bytes, found {size}"),
            });
        }
        let map = Mapping::map_shared(fd.as_fd(), size as usize)?;
        drop(fd);
        let mut magic = [0u8; 8];
        map.read(OFF_MAGIC, &mut magic);
        if magic != MAGIC {
            return Err(Error::BadRegion {
                detail: format!("expected magic {MAGIC:02x?}, found {magic:02x?}"),
            });
        }
        let version = read_u32(&map, OFF_VERSION);
        if version != LAYOUT_VERSION {
            return Err(Error::BadRegion {
                detail: format!("expected layout version {LAYOUT_VERSION}, found {version}"),
            });
        }
        let code = read_u32(&map, OFF_KIND);
        if code != kind_code(kind) {
            let found = TransportKind::ALL
                .into_iter()
                .find(|k| kind_code(*k) == code && k.is_shared_memory())
                .map_or_else(|| format!("unknown kind {code}"), |k| k.to_string());
            return Err(Error::BadRegion {
                detail: format!("expected a {kind} region, found {found}"),
            });
        }
        let capacity = read_u64(&map, OFF_CAPACITY);
        let total = read_u64(&map, OFF_TOTAL);
        let consistent = capacity.is_multiple_of(64)
            && (MIN_SHM_CAPACITY as u64..=MAX_SHM_CAPACITY as u64 + 63).contains(&capacity)
            && total == size
            && region_len(capacity as usize) as u64 == size;
        if !consistent {
            return Err(Error::BadRegion {
                detail: format!(
                    "capacity {capacity} and total {total} do not describe a region of {size} \
                     bytes"
                ),
            });
        }
        let capacity = capacity as usize;
        let channels = [REGION_HEADER, REGION_HEADER + DATA + capacity];
        Ok(ShmLink::new(kind, map, capacity, channels[1], channels[0], liveness))
    }

    /// Which transport `fd` — a server's stdin — was set up for: [`TransportKind::Pipe`] when
    /// it is not a regular file (a pipe, socket or terminal), else the kind written in the
    /// header of the shared region it holds, read with `pread` (the file offset is untouched
    /// and nothing is mapped; [`ShmLink::attach`] checks the rest). This lets a server
    /// spawned by `peer --spawn CMD --transport KIND` serve without being told KIND.
    ///
    /// # Errors
    /// [`Error::BadRegion`] when a regular file does not start with a region header of a
    /// shared-memory kind; [`Error::Sys`] when it cannot be examined.
    pub fn kind_of(fd: BorrowedFd<'_>) -> Result<TransportKind> {
        let stat = fstat(fd)?;
        if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return Ok(TransportKind::Pipe);
        }
        let mut head = [0u8; OFF_KIND + 4];
        let got = nix::sys::uio::pread(fd, &mut head, 0)?;
        if got < head.len() || head[OFF_MAGIC..OFF_MAGIC + 8] != MAGIC {
            return Err(Error::BadRegion {
                detail: format!(
                    "expected a pipe or a shared region (magic {MAGIC:02x?}) on stdin, found a \
                     regular file starting with {:02x?}",
                    &head[..got.min(8)]
                ),
            });
        }
        let code = u32::from_le_bytes(head[OFF_KIND..OFF_KIND + 4].try_into().expect("4 bytes"));
        TransportKind::ALL
            .into_iter()
            .find(|k| k.is_shared_memory() && kind_code(*k) == code)
            .ok_or_else(|| Error::BadRegion {
                detail: format!("expected a shm-sem or shm-ring region, found kind {code}"),
            })
    }

    /// Two connected ends in this process, each with its own mapping of one region, and a
    /// pipe standing for the peer's liveness: the first end is the client's.
    ///
    /// # Errors
    /// As [`ShmLink::create`] and [`ShmLink::attach`].
    pub fn pair(kind: TransportKind, capacity: usize) -> Result<(ShmLink, ShmLink)> {
        let (client_alive, server_alive) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (client, fd) = ShmLink::create(kind, capacity, client_alive)?;
        let server = ShmLink::attach(kind, fd, server_alive)?;
        Ok((client, server))
    }

    fn new(
        kind: TransportKind,
        map: Mapping,
        capacity: usize,
        tx: usize,
        rx: usize,
        liveness: OwnedFd,
    ) -> ShmLink {
        // Start from where the region is (zero for a new one); from here on these are ours.
        let write_pos = map.atomic_u64(tx + W_POS).load(Acquire);
        let read_pos = map.atomic_u64(rx + R_POS).load(Acquire);
        let write_start = map.atomic_u64(tx + W_START).load(Acquire);
        ShmLink {
            kind,
            map,
            capacity,
            granule: RING_GRANULE.min(capacity / 4),
            tx,
            rx,
            write_pos,
            read_pos,
            write_offset: (write_pos % capacity as u64) as usize,
            read_offset: (read_pos % capacity as u64) as usize,
            write_start,
            holding_empty: false,
            holding_full: false,
            chunk: None,
            liveness,
            idle_polls: 0,
            peer_gone: false,
            write_closed: false,
        }
    }

    /// Whether the peer is gone: its end of the liveness pipe is closed. Latches.
    fn check_peer(&mut self) -> bool {
        if !self.peer_gone {
            let mut fds = [PollFd::new(self.liveness.as_fd(), PollFlags::empty())];
            if let Ok(n) = poll(&mut fds, PollTimeout::ZERO)
                && n > 0
            {
                let events = fds[0].revents().unwrap_or(PollFlags::empty());
                self.peer_gone = events.intersects(PollFlags::POLLHUP | PollFlags::POLLERR);
            }
        }
        self.peer_gone
    }

    /// Counts an empty poll; every [`POLLS_PER_LIVENESS_CHECK`] of them, checks the peer.
    fn idle_peer_gone(&mut self) -> bool {
        self.idle_polls += 1;
        if self.idle_polls >= POLLS_PER_LIVENESS_CHECK {
            self.idle_polls = 0;
            return self.check_peer();
        }
        self.peer_gone
    }

    /// `(offset + n) % capacity` for an `offset` below the capacity and `n` at most one ring.
    fn wrapped(&self, offset: usize, n: usize) -> usize {
        debug_assert!(offset < self.capacity && n <= self.capacity);
        let sum = offset + n;
        if sum >= self.capacity { sum - self.capacity } else { sum }
    }

    fn data(&self, channel: usize) -> usize {
        channel + DATA
    }
}

/// How long one sleep may last: until `until`, but never more than [`LIVENESS_INTERVAL`].
fn slice_until(until: Option<Instant>) -> Duration {
    match until {
        Some(at) => at.saturating_duration_since(Instant::now()).min(LIVENESS_INTERVAL),
        None => LIVENESS_INTERVAL,
    }
}

fn read_u32(map: &Mapping, offset: usize) -> u32 {
    let mut raw = [0u8; 4];
    map.read(offset, &mut raw);
    u32::from_ne_bytes(raw)
}

fn read_u64(map: &Mapping, offset: usize) -> u64 {
    let mut raw = [0u8; 8];
    map.read(offset, &mut raw);
    u64::from_ne_bytes(raw)
}

impl Link for ShmLink {
    fn kind(&self) -> TransportKind {
        self.kind
    }

    fn try_read(&mut self, bufs: &mut [IoSliceMut<'_>]) -> Result<Option<usize>> {
        match self.kind {
            TransportKind::ShmSem => self.slot_read(bufs),
            _ => self.ring_read(bufs),
        }
    }

    fn try_write(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        match self.kind {
            TransportKind::ShmSem => self.slot_write(bufs),
            _ => self.ring_write(bufs),
        }
    }

    fn try_write_filled(
        &mut self,
        at: usize,
        len: usize,
        fill: &mut Fill<'_>,
    ) -> Result<Option<usize>> {
        match self.kind {
            TransportKind::ShmRing => self.ring_write_filled(at, len, fill),
            _ => write_filled_via_chunk(self, at, len, fill),
        }
    }

    fn try_read_drained(&mut self, max: usize, drain: &mut Drain<'_>) -> Result<Option<usize>> {
        match self.kind {
            TransportKind::ShmRing => self.ring_read_drained(max, drain),
            _ => read_drained_via_chunk(self, max, drain),
        }
    }

    fn sleep(&mut self, direction: Direction, until: Option<Instant>) -> Result<()> {
        match self.kind {
            TransportKind::ShmSem => self.slot_sleep(direction, until),
            _ => self.ring_sleep(direction, until),
        }
    }

    fn shutdown_write(&mut self) -> Result<()> {
        self.close_outgoing()
    }

    fn capacity(&self) -> Option<usize> {
        Some(self.capacity)
    }

    /// A slot holds one frame (of at most the capacity) whatever its size, so three requests
    /// may be in flight: one whose reply waits in the reply slot, one whose reply the server
    /// is writing, one in the request slot. A fourth would wait for the request slot while
    /// the server waits for the reply slot: a deadlock. Rings are bounded by bytes only.
    fn max_frames_in_flight(&self) -> Option<usize> {
        (self.kind == TransportKind::ShmSem).then_some(SLOT_FRAMES_IN_FLIGHT)
    }

    fn spin_polls_per_clock_read(&self) -> u32 {
        SPIN_POLLS_PER_CLOCK_READ
    }

    fn set_capacity(&mut self, _bytes: usize) -> Result<usize> {
        Ok(self.capacity)
    }
}

impl ShmLink {
    /// Marks the outgoing channel closed and wakes its reader (once).
    fn close_outgoing(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.write_closed, true) {
            return Ok(());
        }
        self.map.atomic_u32(self.tx + W_CLOSED).store(1, Release);
        match self.kind {
            // The close token: `full` with no chunk ready.
            TransportKind::ShmSem => self.map.sem_post(self.tx + SEM_FULL),
            _ => futex_wake(self.map.atomic_u32(self.tx + R_SLEEPING), 1),
        }
    }
}

impl Drop for ShmLink {
    /// Closes both directions and wakes the peer, so it sees the end of the stream (after
    /// every byte already written) at once instead of at its next liveness check.
    fn drop(&mut self) {
        // Best effort: the peer may be gone, and a failed wake only delays it.
        let _ = self.close_outgoing();
        self.map.atomic_u32(self.rx + R_CLOSED).store(1, Release);
        let _ = match self.kind {
            TransportKind::ShmSem => self.map.sem_post(self.rx + SEM_EMPTY),
            _ => futex_wake(self.map.atomic_u32(self.rx + W_SLEEPING), 1),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_of_the_other_kind_is_refused_by_name() {
        let (alive, _peer) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        let (_client, fd) = ShmLink::create(TransportKind::ShmSem, 4096, alive).unwrap();
        let (_a, b) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        let err = ShmLink::attach(TransportKind::ShmRing, fd, b).unwrap_err();
        assert_eq!(
            err.to_string(),
            "shared-memory region invalid: expected a shm-ring region, found shm-sem"
        );
    }

    #[test]
    fn the_kind_of_a_servers_stdin_is_read_from_its_region_or_is_a_pipe() {
        for kind in [TransportKind::ShmSem, TransportKind::ShmRing] {
            let (alive, _peer) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
            let (_client, memfd) = ShmLink::create(kind, 4096, alive).unwrap();
            assert_eq!(ShmLink::kind_of(memfd.as_fd()).unwrap(), kind);
            // The offset is untouched and the region still attaches as that kind.
            let (_a, b) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
            ShmLink::attach(kind, memfd, b).unwrap();
        }
        let (r, _w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        assert_eq!(ShmLink::kind_of(r.as_fd()).unwrap(), TransportKind::Pipe);
        let file = memfd_create("not-a-region", MFdFlags::MFD_CLOEXEC).unwrap();
        nix::unistd::write(&file, b"hello, world, not a region").unwrap();
        let err = ShmLink::kind_of(file.as_fd()).unwrap_err();
        assert!(err.to_string().contains("regular file starting with"), "{err}");
    }

    #[test]
    fn a_pipe_on_stdin_is_refused_with_a_hint() {
        let (r, _w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        let (_a, b) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
        let err = ShmLink::attach(TransportKind::ShmRing, r, b).unwrap_err();
        assert!(err.to_string().contains("found a pipe"), "{err}");
    }

    #[test]
    fn capacities_outside_the_limits_are_refused() {
        for capacity in [0, MIN_SHM_CAPACITY - 1, MAX_SHM_CAPACITY + 1] {
            let (alive, _peer) = nix::unistd::pipe2(OFlag::O_CLOEXEC).unwrap();
            let err = ShmLink::create(TransportKind::ShmRing, capacity, alive).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument { .. }), "{capacity}: {err}");
        }
    }

    #[test]
    fn a_reader_sees_impossible_positions_as_a_bad_region() {
        let (client, mut server) = ShmLink::pair(TransportKind::ShmRing, 4096).unwrap();
        // The client scribbles a write position far past the ring.
        client.map.atomic_u64(client.tx + W_POS).store(1 << 40, SeqCst);
        let mut buf = [0u8; 8];
        let err = server.try_read(&mut [IoSliceMut::new(&mut buf)]).unwrap_err();
        assert!(matches!(err, Error::BadRegion { .. }), "{err}");
    }

    /// Writes all of `bytes` with as many `try_write` calls as it takes (the ring copies at
    /// most a granule per call); panics if the ring fills up.
    fn write_all(link: &mut ShmLink, bytes: &[u8]) {
        let mut done = 0;
        while done < bytes.len() {
            done += link.try_write(&[IoSlice::new(&bytes[done..])]).unwrap().expect("room");
        }
    }

    fn read_exact(link: &mut ShmLink, buf: &mut [u8]) {
        let mut done = 0;
        while done < buf.len() {
            done += link.try_read(&mut [IoSliceMut::new(&mut buf[done..])]).unwrap().expect("data");
        }
    }

    #[test]
    fn ring_bytes_wrap_around_the_end_in_order() {
        let (mut a, mut b) = ShmLink::pair(TransportKind::ShmRing, 4096).unwrap();
        // One message always stays in the ring, so the writer never rewinds and the
        // positions go round the end of the ring again and again.
        let message = |round: u8| -> Vec<u8> { (0..1500).map(|i| (i as u8) ^ round).collect() };
        write_all(&mut a, &message(0));
        for round in 1..20u8 {
            write_all(&mut a, &message(round));
            let mut got = vec![0u8; 1500];
            read_exact(&mut b, &mut got);
            assert_eq!(got, message(round - 1), "round {round}");
        }
        assert!(a.write_pos > 4 * 4096, "the ring wrapped several times: {}", a.write_pos);
    }

    #[test]
    fn bytes_filled_and_drained_in_place_wrap_around_the_ring_in_order() {
        let (mut a, mut b) = ShmLink::pair(TransportKind::ShmRing, 4096).unwrap();
        let stream: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        // Keep 1500 bytes in the ring so the writer never rewinds and pieces wrap the end.
        write_all(&mut a, &stream[..1500]);
        let (mut written, mut read) = (1500, Vec::new());
        while read.len() < stream.len() {
            let mut fill = |at: usize, dst: &mut [u8]| {
                dst.copy_from_slice(&stream[at..at + dst.len()]);
                Ok(())
            };
            if written < stream.len() {
                let len = (stream.len() - written).min(777);
                written += a.try_write_filled(written, len, &mut fill).unwrap().unwrap_or(0);
            }
            let mut drain = |src: &[u8]| {
                read.extend_from_slice(src);
                Ok(())
            };
            b.try_read_drained(999, &mut drain).unwrap();
        }
        assert_eq!(read, stream);
        assert!(a.write_pos > 4 * 4096, "the ring wrapped several times: {}", a.write_pos);
    }

    #[test]
    fn an_emptied_ring_rewinds_to_offset_0_and_the_reader_skips_the_gap() {
        let (mut a, mut b) = ShmLink::pair(TransportKind::ShmRing, 4096).unwrap();
        for round in 0..5u8 {
            write_all(&mut a, &[round; 700]);
            assert_eq!(a.write_pos % 4096, 700, "round {round} starts at offset 0");
            let mut got = [0u8; 700];
            read_exact(&mut b, &mut got);
            assert_eq!(got, [round; 700]);
        }
    }

    #[test]
    fn a_rewind_further_than_a_ring_is_a_bad_region() {
        let (a, mut b) = ShmLink::pair(TransportKind::ShmRing, 4096).unwrap();
        a.map.atomic_u64(a.tx + W_START).store(10_000, SeqCst);
        a.map.atomic_u64(a.tx + W_POS).store(10_100, SeqCst);
        let err = b.try_read(&mut [IoSliceMut::new(&mut [0u8; 8])]).unwrap_err();
        assert!(err.to_string().contains("rewound from 0 to 10000"), "{err}");
    }

    #[test]
    fn a_full_ring_refuses_more_until_read() {
        let (mut a, mut b) = ShmLink::pair(TransportKind::ShmRing, 4096).unwrap();
        write_all(&mut a, &[7u8; 4096]);
        assert_eq!(a.try_write(&[IoSlice::new(&[7u8; 10])]).unwrap(), None);
        let mut buf = vec![0u8; 100];
        read_exact(&mut b, &mut buf);
        assert_eq!(a.try_write(&[IoSlice::new(&[7u8; 500])]).unwrap(), Some(100));
    }

    #[test]
    fn a_slot_streams_chunks_larger_frames_through() {
        let (mut a, mut b) = ShmLink::pair(TransportKind::ShmSem, 4096).unwrap();
        assert_eq!(a.try_write(&[IoSlice::new(&[1u8; 5000])]).unwrap(), Some(4096));
        assert_eq!(a.try_write(&[IoSlice::new(&[1u8; 904])]).unwrap(), None, "slot still full");
        let mut buf = vec![0u8; 5000];
        assert_eq!(b.try_read(&mut [IoSliceMut::new(&mut buf)]).unwrap(), Some(4096));
        assert_eq!(a.try_write(&[IoSlice::new(&[1u8; 904])]).unwrap(), Some(904));
        assert_eq!(b.try_read(&mut [IoSliceMut::new(&mut buf[4096..])]).unwrap(), Some(904));
        assert!(buf.iter().all(|&b| b == 1));
    }

    #[test]
    fn a_dropped_end_reads_as_the_end_of_the_stream_after_its_bytes() {
        for kind in [TransportKind::ShmSem, TransportKind::ShmRing] {
            let (mut a, mut b) = ShmLink::pair(kind, 4096).unwrap();
            a.try_write(&[IoSlice::new(b"last words")]).unwrap();
            drop(a);
            let mut buf = [0u8; 10];
            assert_eq!(b.try_read(&mut [IoSliceMut::new(&mut buf)]).unwrap(), Some(10), "{kind}");
            assert_eq!(&buf, b"last words");
            assert_eq!(b.try_read(&mut [IoSliceMut::new(&mut buf)]).unwrap(), Some(0), "{kind}");
            let err = b.try_write(&[IoSlice::new(b"x")]).unwrap_err();
            assert!(matches!(err, Error::PeerClosed { .. }), "{kind}: {err}");
        }
    }
}
