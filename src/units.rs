//! Durations as people type and read them: `250ms`, `2s`, `500us`, `1.5ms`.

use std::time::Duration;

use crate::error::{Error, Result};

/// Parses a duration: a non-negative decimal number followed by a unit, one of `ns`, `us`
/// (or `µs`), `ms`, `s`, `m`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the text when the number or the unit is missing or wrong.
///
/// ```
/// use std::time::Duration;
/// use peerpipe::units::parse_duration;
/// assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
/// assert_eq!(parse_duration("1.5us").unwrap(), Duration::from_nanos(1500));
/// assert!(parse_duration("10").is_err()); // a unit is required
/// ```
pub fn parse_duration(text: &str) -> Result<Duration> {
    let bad = |reason: &str| Error::InvalidArgument {
        what: "duration",
        reason: format!("{reason} in {text:?} (expected e.g. 500us, 250ms, 2s)"),
    };
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    if number.is_empty() {
        return Err(bad("missing number"));
    }
    let value: f64 = number.parse().map_err(|_| bad("unparsable number"))?;
    let nanos_per_unit = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "" => return Err(bad("missing unit")),
        _ => return Err(bad("unknown unit")),
    };
    let nanos = (value * nanos_per_unit).round();
    if !nanos.is_finite() || nanos > u64::MAX as f64 {
        return Err(bad("too large"));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// Formats a duration with a unit chosen by magnitude and three significant digits:
/// `850ns`, `12.3us`, `4.56ms`, `2.00s`.
///
/// ```
/// use std::time::Duration;
/// use peerpipe::units::format_duration;
/// assert_eq!(format_duration(Duration::from_nanos(850)), "850ns");
/// assert_eq!(format_duration(Duration::from_nanos(12_345)), "12.3us");
/// assert_eq!(format_duration(Duration::from_micros(50)), "50us");
/// ```
pub fn format_duration(duration: Duration) -> String {
    format_nanos(duration.as_nanos() as f64)
}

/// Like [`format_duration`], from nanoseconds as `f64`.
pub fn format_nanos(nanos: f64) -> String {
    let (value, unit) = if nanos < 1e3 {
        (nanos, "ns")
    } else if nanos < 1e6 {
        (nanos / 1e3, "us")
    } else if nanos < 1e9 {
        (nanos / 1e6, "ms")
    } else {
        (nanos / 1e9, "s")
    };
    let text = if value >= 100.0 || value.fract() == 0.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    };
    format!("{text}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_parses() {
        assert_eq!(parse_duration("7ns").unwrap(), Duration::from_nanos(7));
        assert_eq!(parse_duration("500us").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("500µs").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("0ms").unwrap(), Duration::ZERO);
    }

    #[test]
    fn bad_durations_name_the_problem() {
        for (text, reason) in [
            ("ms", "missing number"),
            ("12", "missing unit"),
            ("3 parsecs", "unknown unit"),
            ("1.2.3s", "unparsable number"),
            ("-5ms", "missing number"),
        ] {
            let message = parse_duration(text).unwrap_err().to_string();
            assert!(message.contains(reason), "{text}: {message}");
        }
    }

    #[test]
    fn formatting_picks_the_unit_by_magnitude() {
        assert_eq!(format_nanos(999.0), "999ns");
        assert_eq!(format_nanos(1_500.0), "1.50us");
        assert_eq!(format_nanos(4_560_000.0), "4.56ms");
        assert_eq!(format_nanos(2e9), "2s");
    }
}
