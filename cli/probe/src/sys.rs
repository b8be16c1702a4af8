//! The crate's only `unsafe` code: one shared page holding a process-shared semaphore and a
//! futex word, and the calls on them.
#![allow(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes of the page.
const LEN: usize = 4096;
/// Where the futex word lies in the page, past the semaphore.
const WORD_AT: usize = 64;
const _: () = assert!(std::mem::size_of::<libc::sem_t>() <= WORD_AT);

/// A shared anonymous page: a semaphore at its start (process-shared, initially zero) and a
/// 32-bit futex word at [`WORD_AT`] (zero). Unmapped when dropped.
pub(crate) struct SharedPage {
    base: NonNull<u8>,
}

impl SharedPage {
    /// Maps the page and initialises its semaphore and word.
    pub(crate) fn new() -> io::Result<SharedPage> {
        // SAFETY: a new anonymous mapping at an address the kernel chooses; no existing memory
        // is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let page = SharedPage { base: NonNull::new(base.cast()).expect("mmap returned null") };
        // SAFETY: the semaphore's bytes are the page's first (page-aligned, inside it: checked
        // at compile time above); nothing else uses them yet.
        check(unsafe { libc::sem_init(page.sem(), 1, 0) })?;
        page.word().store(0, Ordering::SeqCst);
        Ok(page)
    }

    fn sem(&self) -> *mut libc::sem_t {
        self.base.as_ptr().cast()
    }

    fn word(&self) -> &AtomicU32 {
        // SAFETY: `WORD_AT + 4 <= LEN` and `WORD_AT` is a multiple of 4, so the word lies
        // inside the page, aligned; the page lives as long as `self` and is only accessed
        // atomically here.
        unsafe { &*self.base.as_ptr().add(WORD_AT).cast::<AtomicU32>() }
    }

    /// `sem_post`.
    pub(crate) fn sem_post(&self) -> io::Result<()> {
        // SAFETY: the semaphore was initialised in `new` and lives as long as `self`.
        check(unsafe { libc::sem_post(self.sem()) })
    }

    /// `sem_trywait`: whether the semaphore was taken (`false` when it was zero).
    pub(crate) fn sem_try_wait(&self) -> io::Result<bool> {
        // SAFETY: as for `sem_post`.
        match check(unsafe { libc::sem_trywait(self.sem()) }) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `FUTEX_WAKE` of up to `waiters` sleepers on the word (a shared futex: no private flag).
    pub(crate) fn futex_wake(&self, waiters: i32) -> io::Result<()> {
        // SAFETY: the word is a valid, aligned 32-bit atomic for the call; FUTEX_WAKE does not
        // touch memory.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.word().as_ptr(),
                libc::FUTEX_WAKE,
                waiters,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            )
        };
        if rc < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the semaphore was initialised and nobody waits on it (this process only).
        unsafe { libc::sem_destroy(self.sem()) };
        // SAFETY: `base` and `LEN` are what `mmap` returned; no reference into the page
        // outlives `self` (the word is borrowed from `&self`).
        let result = unsafe { libc::munmap(self.base.as_ptr().cast(), LEN) };
        debug_assert_eq!(result, 0, "munmap failed");
    }
}

/// The OS error for a C call's `-1`.
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == -1 { Err(io::Error::last_os_error()) } else { Ok(()) }
}
