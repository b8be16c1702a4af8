//! `peer fmu serve MODEL.fmu`: unpacks the FMU, loads its binary and serves its functions on
//! this process's stdin and stdout until the proxy says BYE or goes away.

use std::path::Path;
use std::time::Duration;

use peerpipe::server::{StdioOptions, serve_stdio};

use crate::Error;
use crate::archive::{Unpacked, read_entry};
use crate::fmi2_server::Fmi2Server;
use crate::fmi3_server::Fmi3Server;
use crate::model::{FmiVersion, ModelDescription};

/// Reads the model description of the FMU `fmu`.
///
/// # Errors
/// When the file is missing, not a zip, or its description is not one this crate serves.
pub fn model_description(fmu: &Path) -> Result<ModelDescription, Error> {
    if !fmu.is_file() {
        return Err(Error::new(format!("{}: no such FMU", fmu.display())));
    }
    let text = read_entry(fmu, "modelDescription.xml")?;
    let text = String::from_utf8(text)
        .map_err(|_| Error::new(format!("{}: modelDescription.xml is not UTF-8", fmu.display())))?;
    ModelDescription::parse(&text)
}

/// Serves the FMU `fmu` on stdin and stdout with `options`.
///
/// # Errors
/// When the FMU cannot be opened (before anything is read from stdin), or the conversation
/// fails.
pub fn serve(fmu: &Path, options: &StdioOptions) -> Result<(), Error> {
    let model = model_description(fmu)?;
    let unpacked = Unpacked::new(fmu)?;
    let failed = |e: peerpipe::Error| Error::new(format!("serving {}: {e}", fmu.display()));
    watch_parent(unpacked.dir().to_path_buf());
    match model.version {
        FmiVersion::V2 => {
            let mut server = Fmi2Server::open(unpacked, model)?;
            serve_stdio(&mut server, options).map_err(failed)?;
        }
        FmiVersion::V3 => {
            let mut server = Fmi3Server::open(unpacked, model)?;
            serve_stdio(&mut server, options).map_err(failed)?;
        }
    }
    Ok(())
}

/// Ends this process, removing the unpacked FMU at `dir`, when the process that started it
/// ends, however it ends — a server busy inside the FMU, or stalled there, reads nothing from
/// the proxy and would not see it go — or when SIGTERM, SIGINT or SIGHUP comes (which the proxy
/// sends a server that stopped answering). Those signals are blocked in every thread of the
/// process (the FMU's included, started later) and taken here.
fn watch_parent(dir: std::path::PathBuf) {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let parent = std::os::unix::process::parent_id();
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        signals.add(signal);
    }
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), None).is_ok();
    std::thread::spawn(move || {
        let poll = libc::timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        loop {
            let signalled = if blocked {
                // SAFETY: waits up to `poll` for one of `signals`, blocked in every thread;
                // both pointers are valid for the call, and no siginfo is asked for.
                unsafe { libc::sigtimedwait(signals.as_ref(), std::ptr::null_mut(), &poll) > 0 }
            } else {
                std::thread::sleep(Duration::from_millis(100));
                false
            };
            if signalled || std::os::unix::process::parent_id() != parent {
                let _ = std::fs::remove_dir_all(&dir);
                // SAFETY: `_exit` ends the process at once; nothing of this process is used
                // after it.
                unsafe { libc::_exit(3) };
            }
        }
    });
}
