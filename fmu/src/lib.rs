//! FMUs out of process: `peer fmu wrap` makes a proxy FMU whose binary (the
//! `peerpipe-fmu-proxy` library) starts a `peer fmu serve` server per instance and calls it
//! over peerpipe, one round trip per step; `peer fmu serve` loads the original FMU's binary
//! and serves its functions. FMI 2.0 and 3.0 co-simulation; see docs/USAGE.md, "FMUs out of
//! process".

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod archive;
pub mod binary;
pub mod cli;
pub mod config;
pub mod fmi2;
pub mod fmi2_server;
pub mod fmi3;
pub mod fmi3_server;
mod functions;
pub mod log;
pub mod model;
mod reply;
pub mod serve;
pub mod wire;
pub mod wrap;

use std::path::Path;

/// What went wrong, in words for the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Error {
        Error { message: message.into() }
    }

    /// An I/O error about `path`.
    pub fn io(path: &Path, error: std::io::Error) -> Error {
        Error::new(format!("{}: {error}", path.display()))
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The `file://` URI of `path` (made absolute), as FMI gives resource locations: every byte
/// outside the unreserved characters and `/` percent-encoded.
pub fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut uri = String::from("file://");
    for &b in absolute.as_os_str().as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                uri.push(b as char)
            }
            _ => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri
}

/// The path of a `file://` URI (percent-decoded), or `None` for another scheme.
pub fn uri_path(uri: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://").or_else(|| uri.strip_prefix("file:"))?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(std::ffi::OsString::from_vec(out).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip() {
        let path = Path::new("/tmp/a b%c/résumé");
        let uri = file_uri(path);
        assert_eq!(uri, "file:///tmp/a%20b%25c/r%C3%A9sum%C3%A9");
        assert_eq!(uri_path(&uri).unwrap(), path);
        assert_eq!(uri_path("file:/x/y").unwrap(), Path::new("/x/y"));
        assert_eq!(uri_path("http://x"), None);
    }
}
