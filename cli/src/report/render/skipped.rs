//! The rows a run could not measure, listed under the table: those the handler cannot serve,
//! and those whose group ended in an error.

use std::io::{self, Write};

use crate::report::model::{Report, Skipped};

/// Lists the rows not measured under a heading, one line per size, handler and reason (the
/// paths and waits it applies to named on the line); nothing when none was skipped.
///
/// # Errors
/// Errors of `out`.
pub fn skipped(report: &Report, out: &mut dyn Write) -> io::Result<()> {
    if report.skipped.is_empty() {
        return Ok(());
    }
    for failed in [false, true] {
        let entries: Vec<&Skipped> = report.skipped.iter().filter(|s| s.failed == failed).collect();
        if entries.is_empty() {
            continue;
        }
        writeln!(out)?;
        if failed {
            writeln!(out, "failed: {} rows, whose group ended in an error:", entries.len())?;
        } else {
            writeln!(out, "skipped: {} rows the handler cannot serve:", entries.len())?;
        }
        // (size and handler, reason) -> the settings it applies to, in order of appearance.
        let mut lines: Vec<(String, &str, Vec<String>)> = Vec::new();
        for s in entries {
            let what = format!("{} x {} {}", s.id.dtype, s.id.elements, s.id.handler);
            let setting = format!("{} {} {} {}", s.id.path, s.id.transport, s.id.wait, s.id.pin);
            match lines.iter_mut().find(|(w, r, _)| *w == what && *r == s.reason) {
                Some((_, _, settings)) => settings.push(setting),
                None => lines.push((what, &s.reason, vec![setting])),
            }
        }
        for (what, reason, settings) in lines {
            let settings = match settings.as_slice() {
                [one] => one.clone(),
                more => format!("{} settings", more.len()),
            };
            writeln!(out, "  {what} ({settings}): {}", clip(reason, 90))?;
        }
    }
    Ok(())
}

/// At most `max` characters of `text` on one line.
pub(super) fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max {
        line.to_owned()
    } else {
        let cut: String = line.chars().take(max.saturating_sub(3)).collect();
        format!("{cut}...")
    }
}
