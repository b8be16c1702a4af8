//! The crate's only `unsafe` code: a shared mapping, process-shared semaphores and futexes,
//! and one step between `fork` and `exec`.
//!
//! Every other module is `unsafe`-free (the crate root denies `unsafe_code`; this module alone
//! allows it). What lives here is the smallest set of operations the shared-memory transports
//! need, each behind a safe, bounds-checked method:
//!
//! - [`Mapping`]: a `MAP_SHARED` mapping of a memfd, unmapped on drop. Its bytes are copied
//!   in and out with [`Mapping::write`] and [`Mapping::read`], or lent as a byte slice for
//!   the duration of one closure call ([`Mapping::write_with`], which needs `&mut self`, and
//!   [`Mapping::read_with`]) to a codec that converts in place; no reference into it outlives
//!   a call. The synchronisation words are lent out only as atomics
//!   ([`Mapping::atomic_u32`], [`Mapping::atomic_u64`]).
//! - [`tighten_timer_slack`]: a 1 µs timer slack for a thread that sleeps towards deadlines.
//! - Process-shared POSIX semaphores living in the mapping ([`Mapping::sem_init`],
//!   [`Mapping::sem_post`], [`Mapping::sem_try_wait`], [`Mapping::sem_wait_for`]).
//! - [`futex_wait`] and [`futex_wake`] on a 32-bit atomic in the mapping (shared futexes: no
//!   `FUTEX_PRIVATE_FLAG`, since the waiter and the waker are different processes).
//! - [`vmsplice_lend`]: sending into a pipe by lending pages instead of copying them.
//! - [`tsc`]: the CPU's time-stamp counter, for `clock`.
//! - [`die_with_spawning_thread`]: a child that the kernel kills when the thread that
//!   spawned it ends (`PR_SET_PDEATHSIG`, set between `fork` and `exec`).
//!
//! Offsets are checked against the mapping's length and alignment on every call; a bad offset
//! is a bug in the caller (the layouts are computed, never read from the peer unchecked), so it
//! panics rather than touching memory outside the mapping.
//!
//! About the memory model: Rust's model speaks of threads, not processes. Two processes that
//! map the same pages and touch the synchronisation words only through atomics behave, on
//! every platform Rust supports, like two threads sharing that memory; this is what every
//! shared-memory IPC library relies on. The data bytes are handed over by acquire/release pairs
//! on those words (or by the semaphores, which synchronise memory), so each byte range has one
//! writer at a time. A misbehaving peer that ignores the protocol can make us copy garbage
//! bytes, never read or write outside the mapping: every length and position taken from the
//! shared memory is validated by the caller before use.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use std::num::NonZeroUsize;
use std::os::fd::BorrowedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::mman::{MapFlags, ProtFlags, mmap, munmap};
use nix::time::{ClockId, clock_gettime};

use crate::error::{Error, Result};

/// Bytes reserved for one semaphore in a layout (glibc's `sem_t` is 32 bytes on 64-bit
/// targets, 16 on 32-bit ones).
pub(crate) const SEM_BYTES: usize = 32;
const _: () = assert!(std::mem::size_of::<libc::sem_t>() <= SEM_BYTES);
const _: () = assert!(std::mem::align_of::<libc::sem_t>() <= 8);

/// A shared, read-write mapping of a whole memfd; unmapped on drop.
#[derive(Debug)]
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: `Mapping` is a pointer to memory that stays mapped for its whole life and is only
// accessed through atomics or bounds-checked copies; nothing in it is tied to a thread.
unsafe impl Send for Mapping {}
// SAFETY: as for `Send`: every access through `&Mapping` is an atomic operation or a copy,
// which are sound to run from several threads (the transports never share one anyway).
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the first `len` bytes of `fd` shared and read-write, with the pages faulted in
    /// up front (`MAP_POPULATE`) so the first round trip does not pay for page faults.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `len == 0`; [`Error::Sys`] when `mmap` fails.
    pub(crate) fn map_shared(fd: BorrowedFd<'_>, len: usize) -> Result<Mapping> {
        let length = NonZeroUsize::new(len).ok_or_else(|| Error::InvalidArgument {
            what: "shared mapping length",
            reason: "must be at least 1 byte".into(),
        })?;
        // SAFETY: a fresh mapping chosen by the kernel (no address hint) cannot alias any Rust
        // object; `fd` is a valid descriptor for the call's duration (it is borrowed).
        let base = unsafe {
            mmap(
                None,
                length,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED | MapFlags::MAP_POPULATE,
                fd,
                0,
            )
        }?;
        Ok(Mapping { base: base.cast(), len })
    }

    /// A new private region of `len` bytes (a memfd nobody else has, closed once mapped), for
    /// the tests of these primitives inside one process.
    ///
    /// # Errors
    /// [`Error::Sys`] when the memfd or the mapping cannot be made.
    #[cfg(test)]
    pub(crate) fn private(len: usize) -> Result<Mapping> {
        use nix::sys::memfd::{MFdFlags, memfd_create};
        use std::os::fd::AsFd;
        let fd = memfd_create(c"peerpipe-private", MFdFlags::MFD_CLOEXEC)?;
        nix::unistd::ftruncate(&fd, len as i64)?;
        Mapping::map_shared(fd.as_fd(), len)
    }

    /// Panics unless `offset..offset + size` lies inside the mapping and `offset` is a
    /// multiple of `align`; returns the address.
    fn at(&self, offset: usize, size: usize, align: usize) -> *mut u8 {
        let end = offset.checked_add(size).expect("offset overflows");
        assert!(end <= self.len, "{offset}..{end} outside a mapping of {} bytes", self.len);
        assert!(offset.is_multiple_of(align), "offset {offset} not aligned to {align}");
        // The mapping is page-aligned, so an aligned offset gives an aligned address.
        // SAFETY: `offset + size <= len`, so the result stays inside the mapping.
        unsafe { self.base.as_ptr().add(offset) }
    }

    /// The 32-bit atomic at `offset` (4-byte aligned).
    ///
    /// # Panics
    /// When `offset` is out of bounds or misaligned.
    pub(crate) fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        let ptr = self.at(offset, 4, 4).cast::<AtomicU32>();
        // SAFETY: in bounds and aligned (checked by `at`); the mapping outlives the borrow;
        // `AtomicU32` has the layout of `u32` and any bit pattern is valid; all accesses to
        // this word, here and in the peer, are atomic.
        unsafe { &*ptr }
    }

    /// The 64-bit atomic at `offset` (8-byte aligned).
    ///
    /// # Panics
    /// When `offset` is out of bounds or misaligned.
    pub(crate) fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        let ptr = self.at(offset, 8, 8).cast::<AtomicU64>();
        // SAFETY: as for `atomic_u32`, with 8-byte size and alignment.
        unsafe { &*ptr }
    }

    /// Copies `src` into the mapping at `offset`.
    ///
    /// # Panics
    /// When the range is out of bounds.
    pub(crate) fn write(&self, offset: usize, src: &[u8]) {
        let dst = self.at(offset, src.len(), 1);
        // SAFETY: the destination range is inside the mapping (checked) and cannot overlap
        // `src`, a Rust slice, which never points into this mapping (no reference to its
        // bytes is ever handed out). The protocol gives this side exclusive use of the range.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) }
    }

    /// Copies `dst.len()` bytes from the mapping at `offset` into `dst`.
    ///
    /// # Panics
    /// When the range is out of bounds.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) {
        let src = self.at(offset, dst.len(), 1);
        // SAFETY: the source range is inside the mapping (checked); `dst` is a Rust slice,
        // never inside the mapping. Bytes are plain data: whatever the peer wrote is a valid
        // `u8`.
        unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) }
    }

    /// Lends `offset..offset + len` to `f` as a byte slice to write into in place (the codec
    /// encodes straight into a ring this way), for the duration of the call. `&mut self`: no
    /// other lend of this mapping can be alive meanwhile in this process.
    ///
    /// # Panics
    /// When the range is out of bounds.
    pub(crate) fn write_with<R>(
        &mut self,
        offset: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> R {
        let dst = self.at(offset, len, 1);
        // SAFETY: the range is inside the mapping (checked by `at`), which stays mapped while
        // `f` runs (it borrows `self`). `&mut self` rules out any other slice of this mapping
        // in this process during the call, and the slice cannot outlive it (it is only the
        // closure's argument). The protocol gives this side the range exclusively until it
        // publishes its position, so the peer does not touch it; a peer that breaks the
        // protocol can only change the values of plain bytes, which every reader validates.
        // Every bit pattern is a valid `u8`.
        f(unsafe { std::slice::from_raw_parts_mut(dst, len) })
    }

    /// Lends `offset..offset + len` to `f` as a byte slice to read in place (the codec
    /// decodes straight out of a ring this way), for the duration of the call.
    ///
    /// # Panics
    /// When the range is out of bounds.
    pub(crate) fn read_with<R>(&self, offset: usize, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let src = self.at(offset, len, 1);
        // SAFETY: in bounds and mapped for the call, as for `write_with`; no mutable slice of
        // this mapping can exist meanwhile (`write_with` needs `&mut self`). The protocol
        // leaves the range to this side until it publishes its read position, so the peer
        // does not write it; if it broke the protocol and did, the bytes would only hold
        // other values (plain data, decoded, never trusted as lengths or offsets).
        f(unsafe { std::slice::from_raw_parts(src, len) })
    }

    fn sem(&self, offset: usize) -> *mut libc::sem_t {
        self.at(offset, SEM_BYTES, 8).cast()
    }

    /// Initialises a process-shared semaphore at `offset` with `value`. Only the creator of a
    /// region does this, before any other process maps it.
    ///
    /// # Errors
    /// [`Error::Sys`] when `sem_init` fails.
    pub(crate) fn sem_init(&self, offset: usize, value: u32) -> Result<()> {
        // SAFETY: the semaphore's bytes are inside the mapping and aligned (checked); no other
        // process uses them yet (the region has not been handed over).
        let rc = unsafe { libc::sem_init(self.sem(offset), 1, value) };
        Errno::result(rc)?;
        Ok(())
    }

    /// Posts the semaphore at `offset`.
    ///
    /// # Errors
    /// [`Error::Sys`] when `sem_post` fails (`EOVERFLOW`, or `EINVAL` for bytes that are not
    /// a semaphore, e.g. overwritten by a misbehaving peer).
    pub(crate) fn sem_post(&self, offset: usize) -> Result<()> {
        // SAFETY: in bounds and aligned (checked). glibc's semaphore operations are atomic
        // operations on these bytes plus futex calls: whatever the bytes hold, they stay
        // inside them.
        let rc = unsafe { libc::sem_post(self.sem(offset)) };
        Errno::result(rc)?;
        Ok(())
    }

    /// Takes the semaphore at `offset` if it can be taken now; `Ok(false)` when it is zero.
    ///
    /// # Errors
    /// [`Error::Sys`] for failures other than `EAGAIN` and `EINTR`.
    pub(crate) fn sem_try_wait(&self, offset: usize) -> Result<bool> {
        // SAFETY: as for `sem_post`.
        let rc = unsafe { libc::sem_trywait(self.sem(offset)) };
        match Errno::result(rc) {
            Ok(_) => Ok(true),
            Err(Errno::EAGAIN | Errno::EINTR) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits up to `timeout` to take the semaphore at `offset`; `Ok(false)` when it was not
    /// taken (timeout or signal).
    ///
    /// # Errors
    /// [`Error::Sys`] for failures other than `ETIMEDOUT` and `EINTR`.
    pub(crate) fn sem_wait_for(&self, offset: usize, timeout: Duration) -> Result<bool> {
        // sem_timedwait takes an absolute CLOCK_REALTIME time.
        let now = clock_gettime(ClockId::CLOCK_REALTIME)?;
        let until = Duration::new(now.tv_sec() as u64, now.tv_nsec() as u32) + timeout;
        let abstime = libc::timespec {
            tv_sec: until.as_secs() as libc::time_t,
            tv_nsec: until.subsec_nanos() as _,
        };
        // SAFETY: as for `sem_post`; `abstime` is a valid timespec on our stack.
        let rc = unsafe { libc::sem_timedwait(self.sem(offset), &abstime) };
        match Errno::result(rc) {
            Ok(_) => Ok(true),
            Err(Errno::ETIMEDOUT | Errno::EINTR | Errno::EAGAIN) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` are exactly what `mmap` returned; no reference into the mapping
        // outlives `self` (atomics are borrowed from `&self`).
        let result = unsafe { munmap(self.base.cast(), self.len) };
        // munmap of a mapping we own fails only if the arguments are wrong: a bug.
        debug_assert!(result.is_ok(), "munmap failed: {result:?}");
    }
}

/// Sleeps while `word` holds `expected`, for at most `timeout`; returns on a wake-up, a
/// change of value, the timeout or a signal (the caller re-checks its condition).
///
/// # Errors
/// [`Error::Sys`] for failures other than `EAGAIN`, `ETIMEDOUT` and `EINTR`.
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) -> Result<()> {
    let relative = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as _,
    };
    // SAFETY: `word` is a valid, aligned 32-bit atomic for the duration of the call; the
    // timespec lives on our stack; FUTEX_WAIT only reads the word.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &relative as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    match Errno::result(rc) {
        Ok(_) => Ok(()),
        Err(Errno::EAGAIN | Errno::ETIMEDOUT | Errno::EINTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Wakes up to `waiters` processes sleeping in [`futex_wait`] on `word`.
///
/// # Errors
/// [`Error::Sys`] when the call fails.
pub(crate) fn futex_wake(word: &AtomicU32, waiters: i32) -> Result<()> {
    // SAFETY: `word` is a valid, aligned 32-bit atomic; FUTEX_WAKE does not touch memory.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            waiters,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    Errno::result(rc)?;
    Ok(())
}

/// Timer slack this crate asks for on a thread that sleeps towards a deadline: 1 µs.
pub(crate) const TIMER_SLACK_NS: u64 = 1_000;

thread_local! {
    static SLACK_SET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Sets the calling thread's timer slack (`prctl(PR_SET_TIMERSLACK)`) to [`TIMER_SLACK_NS`],
/// once per thread. Linux lets a timed sleep of a normal thread end up to 50 µs late (the
/// default slack) so that wake-ups can be merged; a deadline of 200 µs then fires 70–90 µs
/// late. This changes only how precisely this thread's timers fire (it wakes a little more
/// often); a failure is ignored (the deadline is then kept by spinning a longer stretch).
pub(crate) fn tighten_timer_slack() {
    SLACK_SET.with(|set| {
        if !set.replace(true) {
            let _ = nix::sys::prctl::set_timerslack(TIMER_SLACK_NS as libc::c_ulong);
        }
    });
}

/// The CPU's time-stamp counter (`rdtsc`), on x86-64; `None` elsewhere.
///
/// Not ordered: the CPU may read the counter before the instructions ahead of it have
/// finished, or let later ones start first (see `clock`, which decides whether the counter
/// can be trusted as a clock at all).
#[inline]
pub(crate) fn tsc() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` reads a register and touches no memory; every x86-64 CPU has it, and
        // an operating system that forbids it in user mode (CR4.TSD) is not one Rust targets.
        Some(unsafe { core::arch::x86_64::_rdtsc() })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// Writes `bufs` into the pipe `fd` with `vmsplice(2)`: the pipe takes references to the
/// pages instead of a copy of the bytes (`SPLICE_F_NONBLOCK`: `EAGAIN` when the pipe is full).
///
/// The reader gets the bytes that are in those pages *when it reads*, not when this returns.
/// So the caller must leave the bytes untouched until it knows they have been read. peerpipe's
/// client lends only a request's payload, and only inside `Peer::call`, which returns after
/// the reply has arrived: a server answers only after reading its whole request, so by then
/// the pipe no longer refers to the pages. Headers and padding, which live in temporaries, are
/// never lent.
///
/// # Errors
/// The `vmsplice` errno (`EAGAIN`, `EPIPE`, `EINTR`, ...).
pub(crate) fn vmsplice_lend(
    fd: BorrowedFd<'_>,
    bufs: &[std::io::IoSlice<'_>],
) -> nix::Result<usize> {
    // SAFETY: the memory behind `bufs` is valid for the call (the slices borrow it). What
    // `vmsplice` adds to `write` is that the pipe keeps referring to those pages after the
    // call; the kernel holds its own references, so the pages stay valid even if freed, and a
    // later modification can only change the bytes the reader sees, which the contract above
    // rules out (see `Peer::call`). No Rust reference is invalidated.
    unsafe { nix::fcntl::vmsplice(fd, bufs, nix::fcntl::SpliceFFlags::SPLICE_F_NONBLOCK) }
}

/// Makes the process `command` starts receive SIGKILL from the kernel when the thread that
/// spawns it ends — with the whole process, however it ends (`prctl(PR_SET_PDEATHSIG)`, set in
/// the child between `fork` and `exec`). When this process is already gone by the time the
/// child sets it, the child does not start: the spawn fails instead.
///
/// The signal comes when the *thread* that forked ends, not the process: only for children
/// whose whole life lies inside one call on the spawning thread (the report's groups). The
/// kernel clears it when the child executes a set-user-ID or set-group-ID program, or one with
/// file capabilities.
pub(crate) fn die_with_spawning_thread(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    let pre_exec = move || -> std::io::Result<()> {
        nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
            .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
        // The parent may have died between fork and prctl: then no signal will ever come.
        if nix::unistd::getppid() != parent {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: it makes two system calls (prctl, getppid) through
    // nix's thin wrappers and builds an `io::Error` from an errno, none of which allocates,
    // takes a lock or touches state shared with other threads of the parent.
    unsafe {
        command.pre_exec(pre_exec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    fn mapping(len: usize) -> Mapping {
        Mapping::private(len).unwrap()
    }

    #[test]
    fn a_child_tied_to_its_spawning_thread_is_killed_when_that_thread_ends() {
        use std::os::unix::process::ExitStatusExt;
        let mut child = std::thread::spawn(|| {
            let mut command = std::process::Command::new("sleep");
            command.arg("30");
            die_with_spawning_thread(&mut command);
            command.spawn().expect("spawn sleep")
        })
        .join()
        .expect("the spawning thread");
        // The thread has ended: the kernel sends the child SIGKILL, long before 30 s.
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            if std::time::Instant::now() > until {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the tied child outlived its spawning thread by 10 s");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    }

    #[test]
    fn bytes_written_are_read_back_and_atomics_share_the_memory() {
        let m = mapping(4096);
        m.write(100, b"hello");
        let mut out = [0u8; 5];
        m.read(100, &mut out);
        assert_eq!(&out, b"hello");
        m.atomic_u64(8).store(0x0102_0304_0506_0708, Ordering::SeqCst);
        let mut raw = [0u8; 8];
        m.read(8, &mut raw);
        assert_eq!(u64::from_ne_bytes(raw), 0x0102_0304_0506_0708);
    }

    #[test]
    fn lent_ranges_write_and_read_the_same_bytes_as_copies() {
        let mut m = mapping(4096);
        m.write_with(200, 6, |dst| dst.copy_from_slice(b"peerpp"));
        let mut out = [0u8; 6];
        m.read(200, &mut out);
        assert_eq!(&out, b"peerpp");
        assert_eq!(m.read_with(201, 3, |src| src.to_vec()), b"eer");
    }

    #[test]
    #[should_panic(expected = "outside a mapping")]
    fn a_lent_range_past_the_end_panics() {
        let mut m = mapping(4096);
        m.write_with(4000, 97, |_| ());
    }

    #[test]
    #[should_panic(expected = "outside a mapping")]
    fn a_range_past_the_end_panics_instead_of_touching_memory() {
        let m = mapping(4096);
        m.write(4090, &[0u8; 7]);
    }

    #[test]
    #[should_panic(expected = "not aligned")]
    fn a_misaligned_atomic_panics() {
        let m = mapping(4096);
        let _ = m.atomic_u64(4);
    }

    #[test]
    fn semaphores_count_and_time_out() {
        let m = mapping(4096);
        m.sem_init(64, 1).unwrap();
        assert!(m.sem_try_wait(64).unwrap());
        assert!(!m.sem_try_wait(64).unwrap());
        assert!(!m.sem_wait_for(64, Duration::from_millis(1)).unwrap());
        m.sem_post(64).unwrap();
        assert!(m.sem_wait_for(64, Duration::from_secs(1)).unwrap());
    }

    #[test]
    fn a_futex_wait_returns_at_once_when_the_value_differs_and_wakes_on_wake() {
        let m = mapping(4096);
        let word = m.atomic_u32(0);
        word.store(7, Ordering::SeqCst);
        futex_wait(word, 8, Duration::from_secs(10)).unwrap(); // value differs: no sleep
        std::thread::scope(|s| {
            s.spawn(|| {
                while word.load(Ordering::SeqCst) == 7 {
                    futex_wait(word, 7, Duration::from_millis(100)).unwrap();
                }
            });
            std::thread::sleep(Duration::from_millis(5));
            word.store(9, Ordering::SeqCst);
            futex_wake(word, 1).unwrap();
        });
        assert_eq!(word.load(Ordering::SeqCst), 9);
    }
}
