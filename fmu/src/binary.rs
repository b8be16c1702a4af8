//! Loading an FMU's binary into `peer fmu serve`, with the Python library first when the
//! binary expects to be loaded into a Python process (as pythonfmu's do).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;

/// The environment variable naming the Python whose library a Python-inside FMU gets
/// (default: `python3` on `PATH`).
pub const PYTHON_VAR: &str = "PEERPIPE_FMU_PYTHON";

/// Loads the binary at `path`. When it lacks Python's C API (symbols `Py…` it expects from
/// the process), loads the library of `$PEERPIPE_FMU_PYTHON` (else `python3`) first, with
/// its symbols global, and tries again.
///
/// # Errors
/// When the binary, or the Python library it needs, cannot be loaded.
pub fn load(path: &Path) -> Result<libloading::Library, Error> {
    let failed = |e: libloading::Error| {
        let detail = std::error::Error::source(&e).map(|s| format!(": {s}")).unwrap_or_default();
        format!("cannot load the FMU's binary {}: {e}{detail}", path.display())
    };
    let first = match open(path) {
        Ok(library) => return Ok(library),
        Err(e) => failed(e),
    };
    if !first.contains("undefined symbol: Py") && !first.contains("undefined symbol: _Py") {
        return Err(Error::new(first));
    }
    let python = libpython().map_err(|e| Error::new(format!("{first}; it needs Python: {e}")))?;
    // SAFETY: Python's own library, loaded with its symbols global so that the FMU's binary
    // finds them; it stays loaded for the life of the process (leaked below).
    let global = unsafe {
        libloading::os::unix::Library::open(
            Some(&python),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_GLOBAL,
        )
    }
    .map_err(|e| Error::new(format!("{first}; loading {}: {e}", python.display())))?;
    std::mem::forget(global);
    open(path).map_err(|e| Error::new(failed(e)))
}

fn open(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: loading runs the library's initialisers; an FMU binary is loaded to be run,
    // which is what the user asked for by serving it.
    unsafe { libloading::Library::new(path) }
}

/// The shared library of the Python that `$PEERPIPE_FMU_PYTHON` (else `python3`) is.
fn libpython() -> Result<PathBuf, String> {
    let python = std::env::var(PYTHON_VAR).unwrap_or_else(|_| "python3".into());
    let script = "import os, sysconfig; v = sysconfig.get_config_var; \
                  print(v('Py_ENABLE_SHARED') or 0, os.path.join(v('LIBDIR') or '', v('INSTSONAME') or ''))";
    let output = Command::new(&python)
        .args(["-c", script])
        .output()
        .map_err(|e| format!("cannot run {python} (set ${PYTHON_VAR}): {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    match text.trim().split_once(' ') {
        Some(("1", library)) if Path::new(library).is_file() => Ok(PathBuf::from(library)),
        Some(("1", library)) => Err(format!("{python}'s library {library} is not there")),
        _ => Err(format!(
            "{python} has no shared library (built without --enable-shared); set ${PYTHON_VAR} \
             to a Python that has one"
        )),
    }
}
