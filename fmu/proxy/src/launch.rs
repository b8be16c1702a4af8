//! Starting an instance's server: `peer fmu serve` on the original FMU carried in the
//! proxy's resources, locally or behind the launcher `peer fmu wrap --server` gave.

use std::path::{Path, PathBuf};

use peerpipe::transport::TransportKind;
use peerpipe::{Options, Peer};
use peerpipe_fmu::Error;
use peerpipe_fmu::config::ServerConfig;

/// The `peer` program of a local server: `$PEERPIPE_PEER`, else the one the proxy was made
/// with (when it is still there), else `peer` on `PATH`.
fn local_peer(config: &ServerConfig) -> Result<PathBuf, Error> {
    if let Some(peer) = std::env::var_os("PEERPIPE_PEER").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(peer));
    }
    if let Some(peer) = config.peer.as_ref().map(PathBuf::from).filter(|p| p.is_file()) {
        return Ok(peer);
    }
    peerpipe::peer::find_peer_binary(None).map_err(|e| Error::new(e.to_string()))
}

/// `text` quoted for `sh`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Starts the server of one instance of the proxy whose resources are at `resources`; true
/// with it when the server runs on this machine.
///
/// # Errors
/// When the configuration cannot be read, or the server cannot be started or does not
/// answer within the timeout.
pub fn start(resources: &Path) -> Result<(Peer, bool), Error> {
    let config = ServerConfig::read(resources)?;
    let options = Options {
        timeout: Some(config.effective_timeout()?),
        transport: config.transport,
        ..Options::default()
    };
    let peer = match &config.launcher {
        None => local_peer(&config)?,
        // Where the launcher starts it: as the proxy was told, else `peer` on its PATH.
        Some(_) => PathBuf::from(config.peer.as_deref().unwrap_or("peer")),
    };
    let fmu = config.original(resources);
    let mut argv =
        vec![peer.display().to_string(), "fmu".into(), "serve".into(), fmu.display().to_string()];
    if config.transport == TransportKind::Tcp {
        argv.extend(["--transport".into(), "tcp".into()]);
    }
    let started = match &config.launcher {
        None => Peer::spawn_argv(&argv, options),
        Some(launcher) => {
            let line: Vec<String> = argv.iter().map(|a| quote(a)).collect();
            Peer::spawn_shell(&format!("{launcher} {}", line.join(" ")), options)
        }
    };
    let started = started.map_err(|e| Error::new(format!("cannot start the FMU's server: {e}")))?;
    Ok((started, config.launcher.is_none()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_the_shell() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
    }
}
