//! `peer fmu wrap MODEL.fmu REMOTE.fmu`: a proxy FMU of the same model description, whose
//! binary starts a `peer fmu serve` server per instance.

use std::path::{Path, PathBuf};

use crate::Error;
use crate::config::{self, ServerConfig};
use crate::fmi2;
use crate::model::{FmiVersion, ModelDescription};
use crate::serve::model_description;

/// The environment variable naming the proxy library `peer fmu wrap` puts in proxy FMUs.
pub const PROXY_VAR: &str = "PEERPIPE_FMU_PROXY";
/// The file name of the proxy library, as cargo builds it.
pub const PROXY_FILE: &str = "libpeerpipe_fmu_proxy.so";

/// The proxy library: `explicit`, else `$PEERPIPE_FMU_PROXY`, else the library beside the
/// running program (where cargo builds both).
///
/// # Errors
/// Naming every place looked at, when none holds it.
pub fn find_proxy_library(explicit: Option<&Path>) -> Result<PathBuf, Error> {
    let mut looked = Vec::new();
    let candidates = explicit
        .map(Path::to_path_buf)
        .into_iter()
        .chain(std::env::var_os(PROXY_VAR).map(PathBuf::from))
        .chain(std::env::current_exe().ok().and_then(|e| Some(e.parent()?.join(PROXY_FILE))));
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(candidate);
        }
        looked.push(candidate.display().to_string());
    }
    Err(Error::new(format!(
        "the proxy library {PROXY_FILE} is not at {}: build it with `cargo build -p \
         peerpipe-fmu-proxy`, or name it with --proxy-library or ${PROXY_VAR}",
        looked.join(", ")
    )))
}

/// The proxy's model description: the original's, without its model-exchange and
/// scheduled-execution interfaces (the proxy is co-simulation only) and, since every instance
/// has a process of its own, without the once-per-process restriction.
pub fn proxy_description(text: &str, model: &ModelDescription) -> String {
    let cs = model.co_simulation.range.clone();
    let element = text[cs.clone()].replace(
        "canBeInstantiatedOnlyOncePerProcess=\"true\"",
        "canBeInstantiatedOnlyOncePerProcess=\"false\"",
    );
    let mut edits: Vec<(std::ops::Range<usize>, &str)> = vec![(cs, &element)];
    edits.extend(model.model_exchange.clone().map(|r| (r, "")));
    edits.extend(model.scheduled_execution.clone().map(|r| (r, "")));
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = text.to_owned();
    for (range, replacement) in edits {
        out.replace_range(range, replacement);
    }
    out
}

/// Writes the proxy FMU of `original` at `proxy`, with `library` as its binary and `server`
/// saying how it starts its servers.
///
/// # Errors
/// When `original` is not a co-simulation FMU of FMI 2.0, or a file cannot be read or written.
pub fn wrap(
    original: &Path,
    proxy: &Path,
    library: &Path,
    server: &ServerConfig,
) -> Result<(), Error> {
    let model = model_description(original)?;
    if std::path::absolute(original).ok() == std::path::absolute(proxy).ok() {
        return Err(Error::new("the proxy would overwrite the original: name another file"));
    }
    let text = String::from_utf8(crate::archive::read_entry(original, "modelDescription.xml")?)
        .map_err(|_| Error::new("modelDescription.xml is not UTF-8"))?;
    let description = proxy_description(&text, &model);
    let library_bytes = std::fs::read(library).map_err(|e| Error::io(library, e))?;
    let original_bytes = std::fs::read(original).map_err(|e| Error::io(original, e))?;
    let platform = match model.version {
        FmiVersion::V2 => fmi2::PLATFORM,
        FmiVersion::V3 => crate::fmi3::PLATFORM,
    };
    let binary = format!("binaries/{platform}/{}.so", model.co_simulation.model_identifier);
    let original_entry = format!("resources/{}/{}", config::DIR, config::ORIGINAL);
    let config_entry = format!("resources/{}/{}", config::DIR, config::FILE);
    let config_text = server.to_text();
    crate::archive::write(
        proxy,
        &[
            ("modelDescription.xml", description.as_bytes()),
            (&binary, &library_bytes),
            (&original_entry, &original_bytes),
            (&config_entry, config_text.as_bytes()),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_model_exchange_and_the_once_per_process_flag() {
        let text = r#"<fmiModelDescription fmiVersion="2.0" guid="g" modelName="m"><CoSimulation modelIdentifier="m" canBeInstantiatedOnlyOncePerProcess="true"/><ModelExchange modelIdentifier="m"/><ModelVariables/></fmiModelDescription>"#;
        let model = ModelDescription::parse(text).unwrap();
        let out = proxy_description(text, &model);
        assert!(!out.contains("ModelExchange"), "{out}");
        assert!(
            out.contains("canBeInstantiatedOnlyOncePerProcess=\"false\"/><ModelVariables/>"),
            "{out}"
        );
        let before = text.replace(
            r#"<CoSimulation modelIdentifier="m" canBeInstantiatedOnlyOncePerProcess="true"/><ModelExchange modelIdentifier="m"/>"#,
            r#"<ModelExchange modelIdentifier="m"/><CoSimulation modelIdentifier="m" canBeInstantiatedOnlyOncePerProcess="true"/>"#,
        );
        let model = ModelDescription::parse(&before).unwrap();
        let out = proxy_description(&before, &model);
        assert!(
            !out.contains("ModelExchange") && out.contains("\"false\"/><ModelVariables"),
            "{out}"
        );
        // FMI 3.0: scheduled execution goes too, around the co-simulation element.
        let v3 = r#"<fmiModelDescription fmiVersion="3.0" instantiationToken="t" modelName="m"><ScheduledExecution modelIdentifier="m"/><CoSimulation modelIdentifier="m" canBeInstantiatedOnlyOncePerProcess="true"/><ModelExchange modelIdentifier="m"/><ModelVariables/></fmiModelDescription>"#;
        let model = ModelDescription::parse(v3).unwrap();
        let out = proxy_description(v3, &model);
        assert_eq!(
            out,
            r#"<fmiModelDescription fmiVersion="3.0" instantiationToken="t" modelName="m"><CoSimulation modelIdentifier="m" canBeInstantiatedOnlyOncePerProcess="false"/><ModelVariables/></fmiModelDescription>"#
        );
    }
}
