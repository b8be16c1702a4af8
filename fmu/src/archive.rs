//! FMUs as zip files: unpacked into a directory of their own (removed when done), one entry
//! read, and a new FMU written.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::Error;

/// An FMU unpacked into a new directory, removed when this is dropped.
#[derive(Debug)]
pub struct Unpacked {
    dir: PathBuf,
}

impl Unpacked {
    /// Unpacks `fmu` into a new directory under the system's temporary directory.
    ///
    /// # Errors
    /// When `fmu` cannot be read or is not a zip file, or an entry cannot be written.
    pub fn new(fmu: &Path) -> Result<Unpacked, Error> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "peerpipe-fmu-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let unpacked = Unpacked { dir };
        let mut archive = open(fmu)?;
        fs::create_dir_all(&unpacked.dir).map_err(|e| Error::io(&unpacked.dir, e))?;
        archive
            .extract(&unpacked.dir)
            .map_err(|e| Error::new(format!("cannot unpack {}: {e}", fmu.display())))?;
        Ok(unpacked)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Unpacked {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn open(fmu: &Path) -> Result<zip::ZipArchive<fs::File>, Error> {
    let file = fs::File::open(fmu).map_err(|e| Error::io(fmu, e))?;
    zip::ZipArchive::new(file)
        .map_err(|e| Error::new(format!("{} is not an FMU (a zip file): {e}", fmu.display())))
}

/// The entry `name` of the FMU `fmu`.
///
/// # Errors
/// When `fmu` cannot be read, is not a zip file or has no entry `name`.
pub fn read_entry(fmu: &Path, name: &str) -> Result<Vec<u8>, Error> {
    let mut archive = open(fmu)?;
    let mut entry = archive
        .by_name(name)
        .map_err(|e| Error::new(format!("{} has no {name}: {e}", fmu.display())))?;
    let mut out = Vec::new();
    entry.read_to_end(&mut out).map_err(|e| Error::io(fmu, e))?;
    Ok(out)
}

/// Writes a new FMU at `path` with `entries` (name, contents), deflated.
///
/// # Errors
/// When the file cannot be written.
pub fn write(path: &Path, entries: &[(&str, &[u8])]) -> Result<(), Error> {
    let file = fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .unix_permissions(0o644);
    let failed =
        |e: &dyn std::fmt::Display| Error::new(format!("cannot write {}: {e}", path.display()));
    for (name, contents) in entries {
        zip.start_file(*name, options).map_err(|e| failed(&e))?;
        zip.write_all(contents).map_err(|e| failed(&e))?;
    }
    zip.finish().map_err(|e| failed(&e))?;
    Ok(())
}
