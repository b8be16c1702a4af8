//! How a proxy FMU starts its servers: the file `peer fmu wrap` writes into the proxy's
//! resources (`resources/peerpipe-fmu/server.conf`, `key=value` lines) and the proxy reads at
//! `fmi2Instantiate`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use peerpipe::transport::TransportKind;

use crate::Error;

/// The directory of the proxy's own files under the FMU's `resources/`.
pub const DIR: &str = "peerpipe-fmu";
/// The original FMU, inside [`DIR`].
pub const ORIGINAL: &str = "original.fmu";
/// This file, inside [`DIR`].
pub const FILE: &str = "server.conf";
/// The environment variable overriding the reply timeout of every proxy instance (`30s`,
/// `500ms`).
pub const TIMEOUT_VAR: &str = "PEERPIPE_FMU_TIMEOUT";
/// How long a proxy waits for a reply when nothing says otherwise: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a proxy starts a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// The `peer` program; `None`: `$PEERPIPE_PEER`, else `peer` on `PATH`.
    pub peer: Option<String>,
    /// A command line in front of `peer fmu serve` (`ssh host`, `srun -N1 -n1`); `None` runs
    /// the server locally.
    pub launcher: Option<String>,
    /// The transport between proxy and server.
    pub transport: TransportKind,
    /// How long a call waits for its reply (and the server for its start).
    pub timeout: Duration,
    /// The original FMU's path where the server runs; `None`: the copy inside the proxy.
    pub remote_fmu: Option<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            peer: None,
            launcher: None,
            transport: TransportKind::Pipe,
            timeout: DEFAULT_TIMEOUT,
            remote_fmu: None,
        }
    }
}

impl ServerConfig {
    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = String::from("# How the proxy starts `peer fmu serve` (peer fmu wrap)\n");
        let mut line = |key: &str, value: &str| text.push_str(&format!("{key}={value}\n"));
        if let Some(peer) = &self.peer {
            line("peer", peer);
        }
        if let Some(launcher) = &self.launcher {
            line("server", launcher);
        }
        line("transport", self.transport.name());
        line("timeout", &format!("{}ms", self.timeout.as_millis()));
        if let Some(remote) = &self.remote_fmu {
            line("remote-fmu", remote);
        }
        text
    }

    /// Parses the file's text.
    ///
    /// # Errors
    /// On an unknown key or a bad value.
    pub fn parse(text: &str) -> Result<ServerConfig, Error> {
        let mut config = ServerConfig::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| Error::new(format!("{FILE}: {line:?} is not key=value")))?;
            let bad = |e: &dyn std::fmt::Display| Error::new(format!("{FILE}: {key}: {e}"));
            match key {
                "peer" => config.peer = Some(value.to_owned()),
                "server" => config.launcher = Some(value.to_owned()),
                "transport" => config.transport = value.parse().map_err(|e| bad(&e))?,
                "timeout" => config.timeout = parse_timeout(value).map_err(|e| bad(&e))?,
                "remote-fmu" => config.remote_fmu = Some(value.to_owned()),
                _ => return Err(Error::new(format!("{FILE}: unknown key {key:?}"))),
            }
        }
        Ok(config)
    }

    /// Reads the file of the proxy whose resources are at `resources`.
    ///
    /// # Errors
    /// When it cannot be read or parsed.
    pub fn read(resources: &Path) -> Result<ServerConfig, Error> {
        let path = resources.join(DIR).join(FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        ServerConfig::parse(&text)
    }

    /// The timeout, or `$PEERPIPE_FMU_TIMEOUT` when set.
    ///
    /// # Errors
    /// When the variable is set but not a duration.
    pub fn effective_timeout(&self) -> Result<Duration, Error> {
        match std::env::var(TIMEOUT_VAR) {
            Ok(value) => parse_timeout(&value)
                .map_err(|e| Error::new(format!("{TIMEOUT_VAR}={value:?}: {e}"))),
            Err(_) => Ok(self.timeout),
        }
    }

    /// The original FMU a server of the proxy at `resources` loads.
    pub fn original(&self, resources: &Path) -> PathBuf {
        match &self.remote_fmu {
            Some(path) => PathBuf::from(path),
            None => resources.join(DIR).join(ORIGINAL),
        }
    }
}

/// A timeout: a duration (`30s`, `500ms`) that is not zero.
///
/// # Errors
/// A message when it is not.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    match peerpipe::units::parse_duration(text) {
        Ok(d) if d.is_zero() => Err("a timeout of zero".into()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_it_writes() {
        let config = ServerConfig {
            peer: Some("/opt/peer".into()),
            launcher: Some("srun -N1 -n1".into()),
            transport: TransportKind::Tcp,
            timeout: Duration::from_millis(1500),
            remote_fmu: Some("/shared/m.fmu".into()),
        };
        assert_eq!(ServerConfig::parse(&config.to_text()).unwrap(), config);
        assert_eq!(ServerConfig::parse("").unwrap(), ServerConfig::default());
        assert!(ServerConfig::parse("colour=red").unwrap_err().to_string().contains("colour"));
        assert!(ServerConfig::parse("timeout=0s").is_err());
    }
}
