//! The report's numbers as text, and the one derived rate: the helpers that measuring (the
//! private `group` module), the table ([`render`](super::render)), the summary
//! ([`summary`](super::summary)) and the files ([`export`](super::export)) share. Below all of
//! them; it imports none.

use peerpipe::units::format_nanos;

/// Payload megabytes (10^6) per second, both directions, at a round trip of `p50` ns; 0 for a
/// round trip of 0 ns.
pub fn mb_per_s(bytes: u64, p50: u64) -> f64 {
    if p50 == 0 { 0.0 } else { 2.0 * bytes as f64 / p50 as f64 * 1e3 }
}

/// Nanoseconds as people read them (`850ns`, `3.50us`): [`format_nanos`].
pub fn ns(value: u64) -> String {
    format_nanos(value as f64)
}

/// A row's added time (`states::headline_figures`), rounded to whole nanoseconds: `840ns`,
/// `-120ns` when the row was faster than its floor, `-` when unknown.
///
/// # Examples
/// ```
/// use peerpipe_cli::report::format::added_ns;
/// assert_eq!(added_ns(Some(839.6)), "840ns");
/// assert_eq!(added_ns(Some(-1_240.0)), "-1.24us");
/// assert_eq!(added_ns(None), "-");
/// ```
pub fn added_ns(value: Option<f64>) -> String {
    match value {
        Some(ns) if ns < 0.0 => format!("-{}", format_nanos((-ns).round())),
        Some(ns) => format_nanos(ns.round()),
        None => "-".to_owned(),
    }
}

/// A CPU time in nanoseconds, `-` when unknown (NaN).
pub fn cpu_ns(value: f64) -> String {
    if value.is_finite() { format_nanos(value) } else { "-".to_owned() }
}

/// A ratio with three significant digits at most: `1.38`, `12.4`, `123`. A non-finite ratio
/// is printed as Rust prints it; [`ratio_or_dash`] prints `-` instead.
pub fn ratio(ratio: f64) -> String {
    if ratio >= 99.5 {
        format!("{ratio:.0}")
    } else if ratio >= 9.995 {
        format!("{ratio:.1}")
    } else {
        format!("{ratio:.2}")
    }
}

/// [`ratio`], or `-` for NaN and infinities.
pub fn ratio_or_dash(value: f64) -> String {
    if value.is_finite() { ratio(value) } else { "-".to_owned() }
}

/// A rate with three significant digits, `-` for NaN.
pub fn rate(value: f64) -> String {
    if !value.is_finite() {
        "-".to_owned()
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 10.0 {
        format!("{value:.1}")
    } else if value >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// `4000 B`, `512 KiB`, `8 MiB`: binary units only when exact.
pub fn bytes(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_use_binary_units_only_when_exact() {
        assert_eq!(bytes(4000), "4000 B");
        assert_eq!(bytes(524_288), "512 KiB");
        assert_eq!(bytes(8 << 20), "8 MiB");
        assert_eq!(bytes(0), "0 B");
    }

    #[test]
    fn ratios_keep_three_significant_digits_and_dash_the_unknown() {
        assert_eq!(ratio(1.384), "1.38");
        assert_eq!(ratio(12.44), "12.4");
        assert_eq!(ratio(123.4), "123");
        assert_eq!(ratio_or_dash(f64::NAN), "-");
        assert_eq!(ratio_or_dash(f64::INFINITY), "-");
        assert_eq!(ratio_or_dash(2.0), "2.00");
    }

    #[test]
    fn rates_keep_three_digits_and_nan_is_a_dash() {
        assert_eq!(rate(f64::NAN), "-");
        assert_eq!(rate(1234.4), "1234");
        assert_eq!(rate(12.34), "12.3");
        assert_eq!(rate(0.0021), "0.002");
    }

    #[test]
    fn megabytes_per_second_count_both_directions() {
        assert_eq!(mb_per_s(1000, 0), 0.0);
        assert_eq!(mb_per_s(1000, 2000), 1000.0);
    }
}
