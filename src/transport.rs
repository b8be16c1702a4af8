//! Moving frames between two processes, and waiting for them.
//!
//! A [`Transport`] moves wire-format frames over a [`Link`], a byte stream in each direction
//! that can be read and written without waiting. Three links exist, chosen by
//! [`TransportKind`]:
//!
//! - `pipe` ([`pipe::PipeLink`]): two anonymous pipes, the default; works across `ssh`.
//! - `shm-sem` ([`shm::ShmLink`]): a memfd shared with the child, one slot per direction
//!   guarded by process-shared semaphores (empty / full).
//! - `shm-ring` ([`shm::ShmLink`]): a memfd shared with the child, a single-producer
//!   single-consumer ring per direction with futex wake-ups, so a writer fills while the
//!   reader drains.
//! - `tcp` ([`tcp::TcpLink`]): one TCP connection that the server listens for and announces,
//!   with a token, on its stdout (through `ssh`, say); its stdin and stdout stay open as the
//!   liveness channel. For `ssh` to start and authenticate, and the frames to go direct.
//!
//! Frames keep the same layout everywhere (the 32-byte header, payload and padding of wire
//! format v1 are what travels through the shared region too), so the frame logic here is
//! written once. Every wait is an explicit choice of [`Wait`] strategy bounded by a
//! [`Deadline`]:
//!
//! - [`Wait::Block`] sleeps in the kernel (`ppoll` on a pipe, a futex or semaphore wait on
//!   shared memory);
//! - [`Wait::Spin`] retries without sleeping, burning its core;
//! - [`Wait::Hybrid`] spins for a budget, then blocks;
//! - [`Wait::Auto`], the default, spins while spinning pays and blocks while it does not,
//!   learned per connection (docs/WAITING.md says how).
//!
//! A frame goes out as one vectored write of header, payload and padding; the payload can be
//! the caller's own memory. A frame comes in as the header, then the payload read straight
//! into the destination buffer. This module knows nothing of handlers, peers or reports.
//!
//! This file holds [`Transport`] (frames and waits over a link) and hands on the items of the
//! others: `kind` the [`TransportKind`]s; `link` the [`Link`] trait the links implement;
//! `deadline` the [`Deadline`]s; `target` where a guessed frame is read to; `wait` the
//! [`Wait`] strategies, one wait's run and what [`Wait::Auto`] learns; `placement` where the
//! two sides run, for it; `backoff` its doubling ladders; `auto_counts` what its waits saw;
//! `pipe`, `shm` and `tcp` the links.

use std::io::{IoSlice, IoSliceMut};

use crate::error::{Error, Result};
use crate::frame::{HEADER_LEN, Header, Kind, check_padding, padding_len};
use target::{Contiguous, FrameTarget, Scatter, Split};
use wait::{Waiter, Waiting};

mod auto_counts;
mod backoff;
mod deadline;
mod kind;
mod link;
pub mod pipe;
pub(crate) mod placement;
pub mod shm;
mod target;
pub mod tcp;
pub(crate) mod wait;

pub use auto_counts::AutoCounts;
pub use deadline::{DEADLINE_SPIN, Deadline, INTERRUPT_CHECK, timespec_for};
pub use kind::TransportKind;
pub use link::{Direction, Drain, Fill, Link};
pub use pipe::PipeLink;
pub use shm::{DEFAULT_SHM_CAPACITY, ShmLink};
pub use target::MAX_SCATTER;
pub use tcp::TcpLink;
pub(crate) use wait::AutoWaiter;
pub use wait::{DEFAULT_SPIN_BUDGET, Wait};

/// Smallest zero-copy payload that [`crate::Peer::call`] lends to a pipe with `vmsplice`
/// instead of copying it, and from which the raw floor does the same (see
/// docs/experiments/round-trip.md, "Large payloads on pipes", for the measurement behind it).
pub const LEND_MIN_BYTES: usize = 256 << 10;

/// The zero bytes padding is cut from (a frame pads to a multiple of 8).
const ZERO_PADDING: [u8; 8] = [0; 8];

/// Most pieces [`Transport::send_frame_pieces`] writes after a header: a PARTS table and
/// each of [`crate::parts::MAX_PARTS`] parts with its padding.
pub const MAX_SEND_PIECES: usize = 1 + 2 * crate::parts::MAX_PARTS;

/// Pieces [`Transport::send_frame_pieces`] writes from a small array: a table and 8 parts with
/// their padding.
const FEW_PIECES: usize = 17;

/// Pipe capacity requested by default: 1 MiB (Linux's default `pipe-max-size`).
pub const DEFAULT_PIPE_CAPACITY: usize = 1 << 20;

/// Frames over a [`Link`]: the one place where headers, payloads, padding, deadlines and
/// wait strategies meet the bytes.
#[derive(Debug)]
pub struct Transport {
    link: Box<dyn Link>,
    waits: Waiter,
    /// Bytes read ahead of the frame they belong to (a speculative read that guessed wrong);
    /// every read drains them first.
    pushback: Vec<u8>,
    pushback_read: usize,
}

/// What [`Transport::recv_frame`] read.
// `repr(u64)`: a word-sized tag puts the header bytes at offset 8, so moving a `Received`
// copies them whole and `Header::parse` reads its words back without waiting on a row of
// narrow stores (laid out by the compiler at offset 1, they cost ~25 ns per round trip here).
#[derive(Debug)]
#[repr(u64)]
pub enum Received {
    /// The stream ended exactly at a frame boundary.
    End,
    /// A header (unvalidated); its payload has not been read.
    Header([u8; HEADER_LEN]),
    /// A valid DATA header whose payload was exactly as long as the guess, now read into the
    /// guess buffer, and whose padding was checked to be zero.
    Whole([u8; HEADER_LEN]),
    /// A header (valid, with the guessed length) whose payload or padding then failed: the
    /// stream ended inside them ([`Error::Truncated`]) or the padding was not zero. The header
    /// is returned so that the error can be addressed to its seq.
    Broken([u8; HEADER_LEN], Error),
}

impl Transport {
    /// Frames over `link`, waiting with `wait`.
    pub fn new(link: impl Link + 'static, wait: Wait) -> Transport {
        Transport::from_box(Box::new(link), wait)
    }

    /// Frames over a read end and a write end of two pipes (see [`PipeLink::new`]).
    ///
    /// # Errors
    /// [`Error::Sys`] when `fcntl` fails (e.g. a descriptor is not open).
    pub fn pipe(
        rx: std::os::fd::OwnedFd,
        tx: std::os::fd::OwnedFd,
        wait: Wait,
    ) -> Result<Transport> {
        Ok(Transport::new(PipeLink::new(rx, tx)?, wait))
    }

    /// Two connected pipe transports in this process: what one writes, the other reads.
    /// Useful to run a server on a thread, in tests and examples.
    ///
    /// # Errors
    /// [`Error::Sys`] when the pipes cannot be created.
    pub fn pipe_pair(wait: Wait) -> Result<(Transport, Transport)> {
        Transport::pair(TransportKind::Pipe, wait)
    }

    /// Two connected transports of `kind` in this process (the shared-memory kinds with
    /// [`DEFAULT_SHM_CAPACITY`] per direction): the first is the client's end.
    ///
    /// # Errors
    /// [`Error::Sys`] when the pipes, memfd or mappings cannot be created.
    pub fn pair(kind: TransportKind, wait: Wait) -> Result<(Transport, Transport)> {
        let (a, b): (Box<dyn Link>, Box<dyn Link>) = match kind {
            TransportKind::Pipe => {
                let (a, b) = PipeLink::pair()?;
                (Box::new(a), Box::new(b))
            }
            TransportKind::Tcp => {
                let (a, b) = TcpLink::pair()?;
                (Box::new(a), Box::new(b))
            }
            shm => {
                let (a, b) = ShmLink::pair(shm, DEFAULT_SHM_CAPACITY)?;
                (Box::new(a), Box::new(b))
            }
        };
        Ok((Transport::from_box(a, wait), Transport::from_box(b, wait)))
    }

    /// Frames over an already boxed link.
    pub fn from_box(link: Box<dyn Link>, wait: Wait) -> Transport {
        Transport {
            link,
            waits: Waiter { strategy: wait, auto: AutoWaiter::new(Default::default(), None) },
            pushback: Vec::new(),
            pushback_read: 0,
        }
    }

    /// Ends the outgoing stream (half-close): the peer sees the end of the stream after the
    /// bytes already sent, while this side can still read its answers.
    ///
    /// # Errors
    /// See [`Link::shutdown_write`].
    pub fn shutdown_write(&mut self) -> Result<()> {
        self.link.shutdown_write()
    }

    /// Which kind of link this transport runs over.
    pub fn kind(&self) -> TransportKind {
        self.link.kind()
    }

    /// The wait strategy.
    pub fn wait(&self) -> Wait {
        self.waits.strategy
    }

    /// Changes the wait strategy (what [`Wait::Auto`] learned so far starts over).
    pub fn set_wait(&mut self, wait: Wait) {
        self.waits.strategy = wait;
        self.waits.auto.restart();
    }

    /// Under [`Wait::Auto`], watches where the peer (process `peer_pid`) runs:
    ///
    /// - while the two may run on one CPU only, the same one, no wait spins;
    /// - spinning does not resume on the strength of dear sleeps or a probe while the peer
    ///   last ran on this side's CPU;
    /// - under `auto` (not `auto:stay`, `Wait::Auto { move_thread: false }`), once this side's sleeps show
    ///   the two handing one core to each other, it moves its thread to an idle CPU and spins
    ///   there (docs/WAITING.md says when and how).
    ///
    /// `Peer` asks it for the client's side, and a server started on stdio for its parent.
    /// Under [`Wait::Auto`] the peer's `/proc/PID/stat` is kept open from now until the
    /// transport is dropped: one descriptor, for reads that cost half as much inside a wait.
    pub fn watch_peer(&mut self, peer_pid: u32) {
        let auto = matches!(self.waits.strategy, Wait::Auto { .. });
        self.waits.auto.watch_peer(peer_pid, auto);
    }

    /// Moves to an idle CPU made under [`Transport::watch_peer`] so far.
    pub fn moves(&self) -> u64 {
        self.waits.auto.moves()
    }

    /// What [`Wait::Auto`] has learned of this connection so far.
    pub fn auto_wait(&self) -> &AutoWaiter {
        &self.waits.auto
    }

    /// Asks for `bytes` of capacity in each direction and returns the capacity granted: on
    /// pipes `F_SETPIPE_SZ` (a refusal, e.g. above `/proc/sys/fs/pipe-max-size`, leaves the
    /// capacity as it was); shared-memory capacity is fixed when the region is created.
    ///
    /// # Errors
    /// [`Error::Sys`] only when the capacity cannot even be read back (`F_GETPIPE_SZ`), i.e.
    /// a descriptor is not a pipe.
    pub fn set_capacity(&mut self, bytes: usize) -> Result<usize> {
        self.link.set_capacity(bytes)
    }

    /// See [`Link::max_frames_in_flight`].
    pub fn max_frames_in_flight(&self) -> Option<usize> {
        self.link.max_frames_in_flight()
    }

    /// Bytes that can be in flight in each direction (the smaller pipe's capacity, or the
    /// ring or slot size), or `None` when unknown (a descriptor is not a pipe).
    pub fn capacity(&self) -> Option<usize> {
        self.link.capacity()
    }

    /// Writes one frame (header, payload, zero padding) with `writev`, handling partial writes
    /// and `EINTR`, waiting for room with the wait strategy until `deadline`.
    ///
    /// # Errors
    /// [`Error::PeerClosed`] when the reader is gone (on pipes `EPIPE`; SIGPIPE is ignored
    /// by Rust programs, so it is an error value, not a signal); [`Error::Timeout`] at the deadline,
    /// with part of the frame possibly written; [`Error::Sys`] for other failures.
    pub fn send_frame(
        &mut self,
        header: &[u8; HEADER_LEN],
        payload: &[u8],
        deadline: Deadline,
    ) -> Result<()> {
        let mut slices = [
            IoSlice::new(header),
            IoSlice::new(payload),
            IoSlice::new(&ZERO_PADDING[..padding_len(payload.len())]),
        ];
        self.write_all(&mut slices, deadline, false)
    }

    /// Writes one frame whose payload is `pieces` one after another (a PARTS table and its
    /// parts, each already padded as the format wants), then the frame's padding: one
    /// vectored write where the link takes it whole, no copy into one buffer.
    ///
    /// # Errors
    /// As [`Transport::send_frame`]; [`Error::InvalidArgument`] for more than
    /// [`MAX_SEND_PIECES`] pieces (nothing is written).
    pub fn send_frame_pieces(
        &mut self,
        header: &[u8; HEADER_LEN],
        pieces: &[&[u8]],
        deadline: Deadline,
    ) -> Result<()> {
        match pieces.len() {
            // A few parts without initialising room for the most.
            n if n <= FEW_PIECES => {
                self.write_pieces::<{ FEW_PIECES + 2 }>(header, pieces, deadline)
            }
            n if n <= MAX_SEND_PIECES => {
                self.write_pieces::<{ MAX_SEND_PIECES + 2 }>(header, pieces, deadline)
            }
            n => Err(Error::InvalidArgument {
                what: "frame pieces",
                reason: format!("{n} pieces, at most {MAX_SEND_PIECES}"),
            }),
        }
    }

    /// Writes one frame already laid out as `slices` — its header first, its padding (if any)
    /// last — in one vectored write where the link takes it whole: for a caller that builds
    /// the `iovec` array itself, with no second array to copy it into.
    ///
    /// # Errors
    /// As [`Transport::send_frame`].
    pub(crate) fn send_frame_slices(
        &mut self,
        slices: &mut [IoSlice<'_>],
        deadline: Deadline,
    ) -> Result<()> {
        self.write_all(slices, deadline, false)
    }

    /// [`Transport::send_frame_pieces`] with room for `N - 2` pieces.
    fn write_pieces<const N: usize>(
        &mut self,
        header: &[u8; HEADER_LEN],
        pieces: &[&[u8]],
        deadline: Deadline,
    ) -> Result<()> {
        let mut slices = [IoSlice::new(&[]); N];
        slices[0] = IoSlice::new(header);
        let mut len = 0;
        for (slot, piece) in slices[1..].iter_mut().zip(pieces) {
            *slot = IoSlice::new(piece);
            len += piece.len();
        }
        let mut used = pieces.len() + 1;
        if padding_len(len) > 0 {
            slices[used] = IoSlice::new(&ZERO_PADDING[..padding_len(len)]);
            used += 1;
        }
        self.write_all(&mut slices[..used], deadline, false)
    }

    /// [`Transport::send_frame`] for a caller that leaves `payload` untouched until the peer
    /// has answered: the payload may be lent to the link instead of copied
    /// ([`Link::try_write_lent`]; `vmsplice` on a pipe). Header and padding are copied.
    ///
    /// # Errors
    /// As [`Transport::send_frame`].
    pub fn send_frame_lent(
        &mut self,
        header: &[u8; HEADER_LEN],
        payload: &[u8],
        deadline: Deadline,
    ) -> Result<()> {
        let padding = &ZERO_PADDING[..padding_len(payload.len())];
        self.write_all(&mut [IoSlice::new(header)], deadline, false)?;
        self.write_all(&mut [IoSlice::new(payload)], deadline, true)?;
        self.write_all(&mut [IoSlice::new(padding)], deadline, false)
    }

    /// Writes one frame whose payload of `len` bytes `fill` produces straight into the link
    /// ([`Link::try_write_filled`]: into the ring itself over `shm-ring`), waiting for room
    /// with the wait strategy until `deadline`. An encoder that runs here is timed by the
    /// caller inside `fill`; what is left of the send is moving bytes and waiting.
    ///
    /// # Errors
    /// As [`Transport::send_frame`], and those of `fill`.
    pub fn send_frame_filled(
        &mut self,
        header: &[u8; HEADER_LEN],
        len: usize,
        fill: &mut Fill<'_>,
        mut deadline: Deadline,
    ) -> Result<()> {
        self.write_all(&mut [IoSlice::new(header)], deadline, false)?;
        let mut at = 0;
        let mut spin = Waiting::default();
        while at < len {
            match self.link.try_write_filled(at, len - at, fill)? {
                Some(written) => {
                    at += written;
                    self.waits.waited(&mut spin);
                }
                None => self.wait_for_room(&mut deadline, &mut spin)?,
            }
        }
        let padding = &ZERO_PADDING[..padding_len(len)];
        self.write_all(&mut [IoSlice::new(padding)], deadline, false)
    }

    /// Reads a payload of exactly `len` bytes, handing it to `drain` in order as it arrives
    /// ([`Link::try_read_drained`]: straight out of the ring over `shm-ring`), then its
    /// padding, which must be zero.
    ///
    /// # Errors
    /// As [`Transport::recv_payload`], and those of `drain`.
    pub fn recv_payload_drained(
        &mut self,
        len: usize,
        drain: &mut Drain<'_>,
        deadline: Deadline,
    ) -> Result<()> {
        // Read-ahead bytes first.
        let pending = &self.pushback[self.pushback_read..];
        let n = pending.len().min(len);
        if n > 0 {
            drain(&pending[..n])?;
            self.pushback_consumed(n);
        }
        let (got, deadline) =
            self.read_until(len, n, deadline, |link, got| link.try_read_drained(len - got, drain))?;
        if got < len {
            return Err(Error::Truncated {
                what: "payload",
                expected: len as u64,
                got: got as u64,
            });
        }
        self.recv_padding(len, deadline)
    }

    /// Writes `bytes` as they are, without framing: the raw-bytes baseline uses this.
    ///
    /// # Errors
    /// As [`Transport::send_frame`].
    pub fn send_bytes(&mut self, bytes: &[u8], deadline: Deadline) -> Result<()> {
        self.write_all(&mut [IoSlice::new(bytes)], deadline, false)
    }

    /// [`Transport::send_bytes`] for a caller that leaves `bytes` untouched until the peer has
    /// read all of them (for example until its answer arrives): they may be lent to the link
    /// instead of copied, as [`Transport::send_frame_lent`] lends a payload.
    ///
    /// # Errors
    /// As [`Transport::send_frame`].
    pub fn send_bytes_lent(&mut self, bytes: &[u8], deadline: Deadline) -> Result<()> {
        self.write_all(&mut [IoSlice::new(bytes)], deadline, true)
    }

    /// Writes all of `slices` (lent to the link when `lend`), waiting for room.
    fn write_all(
        &mut self,
        slices: &mut [IoSlice<'_>],
        mut deadline: Deadline,
        lend: bool,
    ) -> Result<()> {
        let mut remaining = slices;
        IoSlice::advance_slices(&mut remaining, 0);
        let mut spin = Waiting::default();
        while !remaining.is_empty() {
            let written = if lend {
                self.link.try_write_lent(remaining)?
            } else {
                self.link.try_write(remaining)?
            };
            match written {
                Some(written) => {
                    IoSlice::advance_slices(&mut remaining, written);
                    self.waits.waited(&mut spin);
                }
                None => self.wait_for_room(&mut deadline, &mut spin)?,
            }
        }
        Ok(())
    }

    /// Reads until `buf` is full or the stream ends, waiting with the wait strategy until
    /// `deadline`. Returns the number of bytes read: `buf.len()`, or fewer only at end of stream.
    ///
    /// # Errors
    /// [`Error::Timeout`] at the deadline (some bytes may have been read into `buf`);
    /// [`Error::Sys`] for read failures other than `EINTR`/`EAGAIN`.
    pub fn recv_exact(&mut self, buf: &mut [u8], deadline: Deadline) -> Result<usize> {
        let filled = self.take_pushback(buf);
        let want = buf.len();
        let read = |link: &mut dyn Link, filled: usize| {
            link.try_read(&mut [IoSliceMut::new(&mut buf[filled..])])
        };
        Ok(self.read_until(want, filled, deadline, read)?.0)
    }

    /// Reads with `read` (given the link and the bytes so far) until `want` bytes have come
    /// or the stream ends, `already` of them taken before the call, waiting with the wait
    /// strategy until `deadline`. Returns how many came and the deadline as it stands after
    /// them (armed once data arrived, see [`Deadline::once_data_arrives`]).
    fn read_until(
        &mut self,
        want: usize,
        already: usize,
        mut deadline: Deadline,
        mut read: impl FnMut(&mut dyn Link, usize) -> Result<Option<usize>>,
    ) -> Result<(usize, Deadline)> {
        let mut got = already;
        if got > 0 {
            deadline = deadline.on_data();
        }
        let mut spin = Waiting::default();
        while got < want {
            match read(self.link.as_mut(), got)? {
                Some(0) => break,
                Some(n) => {
                    got += n;
                    self.waits.waited(&mut spin);
                    deadline = deadline.on_data();
                }
                None => self.wait_for_data(&mut deadline, &mut spin)?,
            }
        }
        Ok((got, deadline))
    }

    /// Copies read-ahead bytes into the start of `buf`; returns how many.
    fn take_pushback(&mut self, buf: &mut [u8]) -> usize {
        let available = &self.pushback[self.pushback_read..];
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.pushback_consumed(n);
        n
    }

    /// Marks `n` more read-ahead bytes as taken; the buffer empties once all are.
    fn pushback_consumed(&mut self, n: usize) {
        self.pushback_read += n;
        if self.pushback_read == self.pushback.len() {
            self.pushback.clear();
            self.pushback_read = 0;
        }
    }

    /// Reads the next frame, guessing that its payload is exactly `payload_guess.len()` bytes:
    /// header, payload and padding then arrive in as few `readv` calls as the data allows (one,
    /// when the whole frame is in the pipe), the payload straight into `payload_guess`.
    ///
    /// Only a valid DATA header is followed by its payload. When the header announces another
    /// length, is a control frame (HELLO, ERROR, BYE), or is not a valid header at all, the bytes
    /// read past it are kept and served first by the next read, and [`Received::Header`] is
    /// returned: read the payload with [`Transport::recv_payload`] after validating the
    /// header. Nothing is allocated or waited for on the strength of the unvalidated header:
    /// the guess is the caller's own buffer.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the stream ends inside the header; the errors of
    /// [`Transport::recv_exact`]. A guessed frame whose payload or padding then fails is
    /// [`Received::Broken`]. On error the contents of `payload_guess` are unspecified.
    pub fn recv_frame(&mut self, payload_guess: &mut [u8], deadline: Deadline) -> Result<Received> {
        let pad = padding_len(payload_guess.len());
        let mut target =
            Split { header: [0; HEADER_LEN], payload: payload_guess, padding: [0; 8], pad };
        self.recv_guessed(&mut target, deadline)
    }

    /// Like [`Transport::recv_frame`], into one contiguous buffer laid out as the frame is:
    /// the header in `frame[..32]`, a payload of `guess` bytes in `frame[32..32 + guess]`, its
    /// padding after it. One plain `read` fills it; a payload in an 8-byte-aligned `frame`
    /// stays 8-byte aligned, so it can be viewed in place.
    ///
    /// # Errors
    /// As [`Transport::recv_frame`]; [`Error::LengthMismatch`] when `frame` is shorter than
    /// `32 + guess + padding`.
    pub fn recv_frame_contiguous(
        &mut self,
        frame: &mut [u8],
        guess: usize,
        deadline: Deadline,
    ) -> Result<Received> {
        let total = HEADER_LEN + guess + padding_len(guess);
        if frame.len() < total {
            return Err(Error::LengthMismatch {
                what: "contiguous frame buffer",
                expected: total as u64,
                found: frame.len() as u64,
            });
        }
        self.recv_guessed(&mut Contiguous { frame: &mut frame[..total], guess }, deadline)
    }

    /// Like [`Transport::recv_frame`], the guessed payload scattered over `payload`'s buffers
    /// in order — a PARTS reply straight into the caller's buffers — its length their total.
    ///
    /// # Errors
    /// As [`Transport::recv_frame`]; [`Error::InvalidArgument`] for more than [`MAX_SCATTER`]
    /// buffers (nothing is read).
    pub fn recv_frame_scattered(
        &mut self,
        payload: &mut [&mut [u8]],
        deadline: Deadline,
    ) -> Result<Received> {
        if payload.len() > MAX_SCATTER {
            return Err(Error::InvalidArgument {
                what: "scattered payload",
                reason: format!("{} buffers, at most {MAX_SCATTER}", payload.len()),
            });
        }
        let guess = payload.iter().map(|b| b.len()).sum();
        let pad = padding_len(guess);
        let mut target = Scatter { header: [0; HEADER_LEN], payload, guess, padding: [0; 8], pad };
        self.recv_guessed(&mut target, deadline)
    }

    /// The guessed read behind [`Transport::recv_frame`] and
    /// [`Transport::recv_frame_contiguous`].
    fn recv_guessed(
        &mut self,
        target: &mut impl FrameTarget,
        deadline: Deadline,
    ) -> Result<Received> {
        if self.pushback_read < self.pushback.len() {
            // Read-ahead bytes pending (rare): take the plain path.
            return Ok(match self.recv_header(deadline)? {
                Some(header) => Received::Header(header),
                None => Received::End,
            });
        }
        let mut deadline = deadline;
        let guess = target.guess();
        let pad = padding_len(guess);
        let total = HEADER_LEN + guess + pad;
        let mut filled = 0;
        let mut matched = false;
        let mut spin = Waiting::default();
        while filled < total {
            match target.read_from(self.link.as_mut(), filled)? {
                Some(0) => {
                    let error = match filled {
                        0 => return Ok(Received::End),
                        got if got < HEADER_LEN => {
                            return Err(Error::Truncated {
                                what: "header",
                                expected: HEADER_LEN as u64,
                                got: got as u64,
                            });
                        }
                        got if got < HEADER_LEN + guess => Error::Truncated {
                            what: "payload",
                            expected: guess as u64,
                            got: (got - HEADER_LEN) as u64,
                        },
                        got => Error::Truncated {
                            what: "padding",
                            expected: pad as u64,
                            got: (got - HEADER_LEN - guess) as u64,
                        },
                    };
                    return Ok(Received::Broken(target.header(), error));
                }
                Some(n) => {
                    filled += n;
                    self.waits.waited(&mut spin);
                    deadline = deadline.on_data();
                }
                None => {
                    self.wait_for_data(&mut deadline, &mut spin)?;
                    continue;
                }
            }
            if !matched && filled >= HEADER_LEN {
                // Only a valid DATA or PARTS header that announces exactly the guessed length is
                // followed further; anything else (a control frame included, whose kind the
                // caller must judge before any payload is read) goes back to the caller.
                let header = target.header();
                let announced = Header::parse(&header, u64::MAX)
                    .ok()
                    .filter(|h| matches!(h.kind, Kind::Data | Kind::Parts))
                    .and_then(|h| h.payload_bytes().ok());
                if announced != Some(guess as u64) {
                    // Wrong guess: keep what was read past the header for the next read.
                    target.append_after_header(filled - HEADER_LEN, &mut self.pushback);
                    return Ok(Received::Header(header));
                }
                matched = true;
            }
        }
        match check_padding(target.padding()) {
            Ok(()) => Ok(Received::Whole(target.header())),
            Err(error) => Ok(Received::Broken(target.header(), error)),
        }
    }

    /// Reads one 32-byte header. Returns `None` when the stream ends exactly here, at a frame
    /// boundary; the bytes are not validated (see [`crate::frame::Header::parse`]).
    ///
    /// # Errors
    /// [`Error::Truncated`] when the stream ends inside the header; the errors of
    /// [`Transport::recv_exact`].
    pub fn recv_header(&mut self, deadline: Deadline) -> Result<Option<[u8; HEADER_LEN]>> {
        let mut header = [0u8; HEADER_LEN];
        match self.recv_exact(&mut header, deadline)? {
            0 => Ok(None),
            HEADER_LEN => Ok(Some(header)),
            got => Err(Error::Truncated {
                what: "header",
                expected: HEADER_LEN as u64,
                got: got as u64,
            }),
        }
    }

    /// Reads a payload of exactly `payload.len()` bytes straight into `payload`, then its
    /// padding, which must be zero.
    ///
    /// # Errors
    /// [`Error::Truncated`] naming the payload or the padding when the stream ends early;
    /// [`Error::NonzeroPadding`]; the errors of [`Transport::recv_exact`]. On error the
    /// contents of `payload` are unspecified.
    pub fn recv_payload(&mut self, payload: &mut [u8], deadline: Deadline) -> Result<()> {
        let got = self.recv_exact(payload, deadline)?;
        if got < payload.len() {
            return Err(Error::Truncated {
                what: "payload",
                expected: payload.len() as u64,
                got: got as u64,
            });
        }
        self.recv_padding(payload.len(), deadline)
    }

    /// Reads the padding after a payload of `payload_len` bytes, which must be there in full
    /// and zero ([`Error::Truncated`] naming the padding, [`Error::NonzeroPadding`]).
    fn recv_padding(&mut self, payload_len: usize, deadline: Deadline) -> Result<()> {
        let mut padding = [0u8; 8];
        let padding = &mut padding[..padding_len(payload_len)];
        let got = self.recv_exact(padding, deadline)?;
        if got < padding.len() {
            return Err(Error::Truncated {
                what: "padding",
                expected: padding.len() as u64,
                got: got as u64,
            });
        }
        check_padding(padding)
    }

    /// [`Waiter::ready`] for room to write.
    fn wait_for_room(&mut self, deadline: &mut Deadline, spin: &mut Waiting) -> Result<()> {
        let full = "the peer to read (pipe or ring full)";
        self.waits.ready(self.link.as_mut(), Direction::Write, deadline, spin, full)
    }

    /// [`Waiter::ready`] for bytes to read.
    fn wait_for_data(&mut self, deadline: &mut Deadline, spin: &mut Waiting) -> Result<()> {
        self.waits.ready(self.link.as_mut(), Direction::Read, deadline, spin, "data from the peer")
    }
}

#[cfg(test)]
mod tests;
