//! `peer fmu serve MODEL.fmu`: unpacks the FMU, loads its binary and serves its functions on
//! this process's stdin and stdout until the proxy says BYE or goes away.

use std::path::Path;
use std::time::Duration;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

use peerpipe::parts::PartsOut;
use peerpipe::server::{Handler, Request, Response, StdioOptions, serve_stdio};

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
    // Copies of stdin and stdout, which the transport moves elsewhere: the watcher polls them.
    let stdio = (
        std::io::stdin().as_fd().try_clone_to_owned(),
        std::io::stdout().as_fd().try_clone_to_owned(),
    );
    let stdio = match stdio {
        (Ok(stdin), Ok(stdout)) => Some((stdin, stdout)),
        _ => None,
    };
    watch_parent(unpacked.dir().to_path_buf(), stdio);
    match model.version {
        FmiVersion::V2 => {
            let mut server = Watched(Fmi2Server::open(unpacked, model)?);
            serve_stdio(&mut server, options).map_err(failed)?;
        }
        FmiVersion::V3 => {
            let mut server = Watched(Fmi3Server::open(unpacked, model)?);
            serve_stdio(&mut server, options).map_err(failed)?;
        }
    }
    Ok(())
}

/// True while the FMU runs one of its functions (the server reads nothing then).
static IN_CALL: AtomicBool = AtomicBool::new(false);

/// A handler whose calls are marked in [`IN_CALL`].
struct Watched<H>(H);

impl<H: Handler> Handler for Watched<H> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn functions(&self) -> Vec<String> {
        self.0.functions()
    }

    fn handle<'a>(
        &'a mut self,
        request: Request<'a>,
        out: &mut PartsOut,
    ) -> Result<Response<'a>, String> {
        IN_CALL.store(true, Ordering::SeqCst);
        let result = self.0.handle(request, out);
        IN_CALL.store(false, Ordering::SeqCst);
        result
    }
}

/// True when the proxy has closed its end of this server's stdin or stdout — it is gone
/// (killed, or it ended) — seen without reading: `POLLHUP` on stdin (a pipe) or `POLLRDHUP`
/// (a socket, as sshd gives), `POLLERR` on stdout.
fn proxy_gone(stdin: &OwnedFd, stdout: &OwnedFd) -> bool {
    let mut fds = [
        libc::pollfd { fd: stdin.as_raw_fd(), events: libc::POLLIN | libc::POLLRDHUP, revents: 0 },
        libc::pollfd { fd: stdout.as_raw_fd(), events: 0, revents: 0 },
    ];
    // SAFETY: two valid pollfd entries, polled without waiting.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, 0) };
    ready > 0
        && (fds[0].revents & libc::POLLHUP != 0
            || fds[1].revents & (libc::POLLERR | libc::POLLHUP) != 0)
}

/// Ends this process, removing the unpacked FMU at `dir`, when the process that started it
/// ends, however it ends, or the proxy closes its end of stdin or stdout while the FMU runs a
/// function (through ssh, the process that started the server is the remote sshd, which stays)
/// — a server busy inside the FMU, or stalled there, reads nothing from the proxy and would
/// not see it go — or when SIGTERM, SIGINT or SIGHUP comes (which the proxy sends a server that
/// stopped answering). Those signals are blocked in every thread of the process (the FMU's
/// included, started later) and taken here. Between calls the conversation itself sees the
/// proxy go, at the end of its stream, and ends cleanly.
fn watch_parent(dir: std::path::PathBuf, stdio: Option<(OwnedFd, OwnedFd)>) {
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
            let gone = IN_CALL.load(Ordering::SeqCst)
                && stdio.as_ref().is_some_and(|(stdin, stdout)| proxy_gone(stdin, stdout));
            if signalled || gone || std::os::unix::process::parent_id() != parent {
                let _ = std::fs::remove_dir_all(&dir);
                // SAFETY: `_exit` ends the process at once; nothing of this process is used
                // after it.
                unsafe { libc::_exit(3) };
            }
        }
    });
}
