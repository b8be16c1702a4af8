//! What the importer gave at `fmi2Instantiate` for messages: its logger and environment, and
//! the instance's name.

use std::ffi::{CString, c_void};

use peerpipe_fmu::fmi2::{self, CallbackFunctions, Logger, Status};
use peerpipe_fmu::fmi3::LogMessage;

/// The importer's logger, called with the instance's name.
#[derive(Debug)]
pub struct ImporterLog {
    logger: Option<Logger>,
    log_message: Option<LogMessage>,
    environment: *mut c_void,
    name: CString,
}

// SAFETY: the logger and its environment are the importer's, which FMI lets the FMU call from
// whatever thread calls the FMU; the pointer is never dereferenced here.
unsafe impl Send for ImporterLog {}

impl ImporterLog {
    /// The logger of `callbacks` (null: none), for instance `name`.
    pub fn new(callbacks: *const CallbackFunctions, name: CString) -> ImporterLog {
        // SAFETY: FMI hands a valid callbacks structure, or null, which is refused here.
        let callbacks = unsafe { callbacks.as_ref() };
        ImporterLog {
            logger: callbacks.and_then(|c| c.logger),
            log_message: None,
            environment: callbacks.map_or(std::ptr::null_mut(), |c| c.component_environment),
            name,
        }
    }

    /// FMI 3.0's `logMessage` (null: none) with its instance environment, for instance `name`.
    pub fn v3(
        log_message: Option<LogMessage>,
        environment: *mut c_void,
        name: CString,
    ) -> ImporterLog {
        ImporterLog { logger: None, log_message, environment, name }
    }

    /// The instance's name.
    pub fn name(&self) -> &CString {
        &self.name
    }

    /// Gives the importer's logger `message` (as text: a `%` is escaped, since FMI's message
    /// is a format).
    pub fn log(&self, status: Status, category: &[u8], message: &[u8]) {
        let clean = |bytes: &[u8]| {
            CString::new(bytes.iter().copied().filter(|&b| b != 0).collect::<Vec<u8>>())
                .unwrap_or_default()
        };
        let category = clean(category);
        if let Some(log_message) = self.log_message {
            let message = clean(message);
            // SAFETY: the importer's callback, with its own environment, and NUL-terminated
            // strings that live through the call.
            unsafe { log_message(self.environment, status, category.as_ptr(), message.as_ptr()) };
            return;
        }
        let Some(logger) = self.logger else { return };
        let mut escaped = Vec::with_capacity(message.len());
        for &b in message {
            if b == b'%' {
                escaped.push(b'%');
            }
            escaped.push(b);
        }
        let message = clean(&escaped);
        // SAFETY: the importer's logger, with its own environment, and NUL-terminated strings
        // that live through the call; the message has no conversion left unescaped, so no
        // variadic argument is read.
        unsafe {
            logger(
                self.environment,
                self.name.as_ptr(),
                status,
                category.as_ptr(),
                message.as_ptr(),
            )
        };
    }

    /// Logs an error of the proxy itself and returns `fmi2Error`.
    pub fn error(&self, message: &str) -> Status {
        self.log(fmi2::ERROR, b"logStatusError", message.as_bytes());
        fmi2::ERROR
    }
}
