//! The pipe link: two anonymous pipes, non-blocking, waited on with `ppoll`.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Instant;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, ppoll};

use super::deadline::timespec_for;
use super::kind::TransportKind;
use super::link::{Direction, Link};
use crate::error::{Error, Result};

/// Bytes over two pipe ends: `rx` to read from, `tx` to write to, both non-blocking.
#[derive(Debug)]
pub struct PipeLink {
    rx: OwnedFd,
    /// `None` after [`Link::shutdown_write`].
    tx: Option<OwnedFd>,
}

impl PipeLink {
    /// Wraps a read end and a write end, switching both to non-blocking mode.
    ///
    /// # Errors
    /// [`Error::Sys`] when `fcntl` fails (e.g. a descriptor is not open).
    pub fn new(rx: OwnedFd, tx: OwnedFd) -> Result<PipeLink> {
        set_nonblocking(rx.as_fd())?;
        set_nonblocking(tx.as_fd())?;
        Ok(PipeLink { rx, tx: Some(tx) })
    }

    /// Two connected links over two new `O_CLOEXEC` pipes.
    ///
    /// # Errors
    /// [`Error::Sys`] when the pipes cannot be created.
    pub fn pair() -> Result<(PipeLink, PipeLink)> {
        let (a_rx, b_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        let (b_rx, a_tx) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        Ok((PipeLink::new(a_rx, a_tx)?, PipeLink::new(b_rx, b_tx)?))
    }
}

impl Link for PipeLink {
    fn kind(&self) -> TransportKind {
        TransportKind::Pipe
    }

    fn try_read(&mut self, bufs: &mut [IoSliceMut<'_>]) -> Result<Option<usize>> {
        loop {
            // One buffer: plain read(2), cheaper than readv(2) of one iovec.
            let read = match &mut *bufs {
                [one] => nix::unistd::read(self.rx.as_fd(), one),
                more => nix::sys::uio::readv(self.rx.as_fd(), more),
            };
            return match read {
                Ok(n) => Ok(Some(n)),
                Err(Errno::EAGAIN) => Ok(None),
                Err(Errno::EINTR) => continue,
                Err(e) => Err(e.into()),
            };
        }
    }

    fn try_write(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        // Not `ok_or`: it builds (and drops) an error on every write.
        let Some(tx) = self.tx.as_ref() else {
            return Err(Error::PeerClosed { context: "after shutdown_write" });
        };
        loop {
            let written = match bufs {
                [one] => nix::unistd::write(tx.as_fd(), one),
                more => nix::sys::uio::writev(tx.as_fd(), more),
            };
            return match written {
                Ok(n) => Ok(Some(n)),
                Err(Errno::EAGAIN) => Ok(None),
                Err(Errno::EINTR) => continue,
                Err(Errno::EPIPE) => Err(Error::PeerClosed { context: "while sending" }),
                Err(e) => Err(e.into()),
            };
        }
    }

    /// Lends the pages with `vmsplice(2)` instead of copying them (see
    /// `crate::sys::vmsplice_lend` for why that is sound only when the caller waits for the
    /// answer before touching the bytes).
    fn try_write_lent(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>> {
        // Not `ok_or`: it builds (and drops) an error on every write.
        let Some(tx) = self.tx.as_ref() else {
            return Err(Error::PeerClosed { context: "after shutdown_write" });
        };
        loop {
            return match crate::sys::vmsplice_lend(tx.as_fd(), bufs) {
                Ok(n) => Ok(Some(n)),
                Err(Errno::EAGAIN) => Ok(None),
                Err(Errno::EINTR) => continue,
                Err(Errno::EPIPE) => Err(Error::PeerClosed { context: "while sending" }),
                Err(e) => Err(e.into()),
            };
        }
    }

    fn sleep(&mut self, direction: Direction, until: Option<Instant>) -> Result<()> {
        let (fd, events) = match (direction, &self.tx) {
            (Direction::Write, Some(tx)) => (tx.as_fd(), PollFlags::POLLOUT),
            // Nothing to wait for once shut down: the next write reports it.
            (Direction::Write, None) => return Ok(()),
            (Direction::Read, _) => (self.rx.as_fd(), PollFlags::POLLIN),
        };
        let mut fds = [PollFd::new(fd, events)];
        let timeout = until.map(|at| timespec_for(at.saturating_duration_since(Instant::now())));
        match ppoll(&mut fds, timeout, None) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn shutdown_write(&mut self) -> Result<()> {
        // Dropping the only write end is what makes the reader see the end of the stream.
        self.tx = None;
        Ok(())
    }

    fn capacity(&self) -> Option<usize> {
        let rx = fcntl(self.rx.as_fd(), FcntlArg::F_GETPIPE_SZ).ok()? as usize;
        match &self.tx {
            Some(tx) => Some(rx.min(fcntl(tx.as_fd(), FcntlArg::F_GETPIPE_SZ).ok()? as usize)),
            None => Some(rx),
        }
    }

    fn set_capacity(&mut self, bytes: usize) -> Result<usize> {
        let request = i32::try_from(bytes).unwrap_or(i32::MAX);
        let mut granted = usize::MAX;
        for fd in std::iter::once(self.rx.as_fd()).chain(self.tx.as_ref().map(AsFd::as_fd)) {
            // Refusal (EPERM, EINVAL) is not fatal: the pipe keeps its current size.
            let _ = fcntl(fd, FcntlArg::F_SETPIPE_SZ(request));
            let size = fcntl(fd, FcntlArg::F_GETPIPE_SZ)?;
            granted = granted.min(size as usize);
        }
        Ok(granted)
    }
}

fn set_nonblocking(fd: BorrowedFd<'_>) -> Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}
