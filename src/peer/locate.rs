//! Locating the `peer` binary: an explicit path as given, else `$PEERPIPE_PEER`, else `PATH`.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The environment variable naming the `peer` binary, looked at by [`find_peer_binary`].
pub const PEER_ENV: &str = "PEERPIPE_PEER";

/// Finds this crate's `peer` binary.
///
/// - `explicit` a path (it has a `/`): that path, when it is an executable file; otherwise
///   the error says why it cannot be started. A path is never replaced by another binary.
///   A relative path is relative to the current directory, as for [`std::process::Command`]:
///   `target/release/peer` exists only in a peerpipe checkout.
/// - `explicit` a bare name (such as `peer`), or `None`: the path in the environment
///   variable `PEERPIPE_PEER` ([`PEER_ENV`]), then each directory of `PATH`, for that name or
///   `peer` — where `cargo install --path cli` (in a peerpipe clone) puts it.
///
/// # Errors
/// [`Error::CannotStart`] naming an explicit path that does not exist (`NotFound`) or is not
/// an executable file (`PermissionDenied`); [`Error::PeerNotFound`] naming every place looked
/// at, in order, and what was wrong there, when a name is found nowhere.
///
/// # Examples
/// ```
/// use std::path::Path;
/// use peerpipe::ErrorKind;
/// let err = peerpipe::peer::find_peer_binary(Some(Path::new("/nonexistent/peer"))).unwrap_err();
/// assert_eq!(err.kind(), ErrorKind::NotFound);
/// assert_eq!(
///     err.to_string(),
///     "cannot start \"/nonexistent/peer\": No such file or directory (os error 2)"
/// );
/// ```
pub fn find_peer_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    let mut looked = Vec::new();
    let bare = explicit.is_some_and(|p| p.components().count() == 1 && !p.is_absolute());
    if let Some(path) = explicit.filter(|_| !bare) {
        return match executable(path) {
            Ok(()) => Ok(path.to_path_buf()),
            Err(why) => Err(cannot_start(path.as_os_str(), why)),
        };
    }
    match std::env::var_os(PEER_ENV).filter(|v| !v.is_empty()) {
        Some(value) => {
            let path = PathBuf::from(value);
            match executable(&path) {
                Ok(()) => return Ok(path),
                Err(why) => looked.push(format!("{PEER_ENV}={} ({why})", path.display())),
            }
        }
        None => looked.push(format!("{PEER_ENV} (not set)")),
    }
    let name = match explicit {
        Some(path) if bare => path.as_os_str().to_owned(),
        Some(path) => path.file_name().map_or_else(|| "peer".into(), ToOwned::to_owned),
        None => "peer".into(),
    };
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path_var).collect();
    for dir in &dirs {
        let candidate = dir.join(&name);
        if executable(&candidate).is_ok() {
            return Ok(candidate);
        }
    }
    let shown = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(":");
    looked.push(format!(
        "{} on PATH ({})",
        Path::new(&name).display(),
        if dirs.is_empty() { "PATH is empty".to_owned() } else { format!("not in {shown}") }
    ));
    Err(Error::PeerNotFound { looked: looked.join(", "), env: PEER_ENV })
}

/// [`Error::CannotStart`] for `program`, for the reason [`executable`] gave.
pub(super) fn cannot_start(program: &std::ffi::OsStr, why: &str) -> Error {
    let errno = match why {
        "no such file" => nix::errno::Errno::ENOENT,
        _ => nix::errno::Errno::EACCES,
    };
    Error::CannotStart {
        program: program.to_string_lossy().into_owned(),
        source: std::io::Error::from_raw_os_error(errno as i32),
    }
}

/// Ok when `path` is a file with an execute bit; otherwise what is wrong with it.
pub(super) fn executable(path: &Path) -> std::result::Result<(), &'static str> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Err(_) => Err("no such file"),
        Ok(meta) if !meta.is_file() => Err("not a file"),
        Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Err("not executable"),
        Ok(_) => Ok(()),
    }
}
