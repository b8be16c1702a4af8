//! The messages an FMU logs while `peer fmu serve` runs one of its functions, kept for the
//! reply that carries them to the importer's logger.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::Mutex;

use crate::wire::push_log;

/// Where the C logger (c/logger.c) hands each formatted message: the C layout of its
/// `peerpipe_fmu_log_environment`, followed by the messages kept. Boxed, so that the address
/// given to the FMU as its component environment stays put.
#[repr(C)]
pub struct LogEnvironment {
    sink: unsafe extern "C" fn(*mut c_void, c_int, *const c_char, *const c_char),
    context: *mut c_void,
    kept: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for LogEnvironment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogEnvironment").finish_non_exhaustive()
    }
}

impl LogEnvironment {
    /// A new environment, boxed, its context pointing at itself.
    pub fn new() -> Box<LogEnvironment> {
        let mut env = Box::new(LogEnvironment {
            sink,
            context: std::ptr::null_mut(),
            kept: Mutex::new(Vec::new()),
        });
        env.context = (&raw mut *env).cast();
        env
    }

    /// The pointer to give the FMU as its component (or instance) environment.
    pub fn as_environment(&self) -> *mut c_void {
        self.context
    }

    /// Appends a message, as the FMU's logger does.
    pub fn push(&self, status: i32, category: &[u8], message: &[u8]) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        push_log(&mut kept, status, category, message);
    }

    /// Moves the messages kept into `out` (the reply's log part), emptying the store.
    pub fn take_into(&self, out: &mut Vec<u8>) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        out.clear();
        out.append(&mut kept);
    }
}

unsafe extern "C" fn sink(
    context: *mut c_void,
    status: c_int,
    category: *const c_char,
    message: *const c_char,
) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `context` is the address of a live `LogEnvironment` (set by `new`; the FMU
        // calls its logger only while its instance lives, and the environment outlives it);
        // category and message are NUL-terminated strings or null, as FMI says.
        unsafe {
            let env = &*(context as *const LogEnvironment);
            let text =
                |p: *const c_char| if p.is_null() { &[][..] } else { CStr::from_ptr(p).to_bytes() };
            env.push(status, text(category), text(message));
        }
    });
}

unsafe extern "C" {
    /// The FMI 2.0 logger callback of c/logger.c: formats the message and hands it to the
    /// sink of the [`LogEnvironment`] given as the component environment.
    pub fn peerpipe_fmu_logger(
        env: *mut c_void,
        instance: *const c_char,
        status: c_int,
        category: *const c_char,
        message: *const c_char,
        ...
    );
}
