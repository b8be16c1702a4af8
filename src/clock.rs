//! The clock of a call's split: [`Stamp`]s cheap enough to take four per round trip.
//!
//! Every call is timed where it happens — the client's start and end, the server's start and
//! end (`CallTiming`, the reply's `aux`) — so those reads sit on the critical path of every
//! round trip. `Instant::now` costs 24 ns here and, like any `clock_gettime`, first waits for
//! every instruction before it to finish (the vDSO orders its `rdtsc`): the copy of the
//! message still in flight cannot overlap with what comes after. At 500 f64 over `shm-ring`,
//! the four reads cost ~80 ns of a 1.1 µs round trip (docs/experiments/clock.md).
//!
//! So on x86-64, when the kernel itself keeps time with the time-stamp counter (its
//! clocksource is `tsc`: the kernel checked that the counter runs at a constant rate and
//! agrees across CPUs, or it would have switched away), a [`Stamp`] is a plain `rdtsc`
//! (~10 ns, not waiting for earlier instructions), converted to nanoseconds at a rate
//! calibrated against the monotonic clock once per process ([`CALIBRATION`], when the first
//! stamp is taken or [`init`] is called). Anywhere else, or with `PEERPIPE_CLOCK=monotonic`
//! ([`CLOCK_ENV`]), a stamp reads `Instant` as before. [`source`] says which, and why.
//!
//! What the cheaper stamp gives up: the CPU may take it while a few dozen nanoseconds of
//! earlier work (the tail of a copy) are still in flight, or let later work start first, so a
//! span can read that much shorter or longer than one timed with ordered reads. The split
//! names where microseconds go; a span's last few tens of nanoseconds may land on either side
//! of a stamp.
//!
//! Stamps are only ever compared within one process: a server's time travels as a duration.
//!
//! ```
//! use peerpipe::clock::Stamp;
//! let start = Stamp::now();
//! std::thread::sleep(std::time::Duration::from_millis(2));
//! assert!(Stamp::now().nanos_since(start) >= 1_900_000);
//! ```

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::sys;

/// The environment variable that picks the clock: unset, empty or `auto` for the
/// time-stamp counter where the kernel trusts it, `monotonic` for `Instant` always.
pub const CLOCK_ENV: &str = "PEERPIPE_CLOCK";

/// How long the counter is compared with the monotonic clock to learn its rate: once per
/// process, spinning. Each end of the comparison is known to within ~50 ns (the closest of
/// several reads), so the rate is right to within ~5e-5: 0.05 ns in a 1 µs span.
pub const CALIBRATION: Duration = Duration::from_millis(2);

/// Slowest and fastest counter accepted, in ticks per nanosecond (50 MHz to 20 GHz): a rate
/// outside means something is wrong with the counter, and stamps fall back to `Instant`.
const PLAUSIBLE_GHZ: (f64, f64) = (0.05, 20.0);

/// Where this process's [`Stamp`]s come from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// The time-stamp counter (`rdtsc`), at `ghz` ticks per nanosecond.
    Tsc {
        /// The calibrated rate.
        ghz: f64,
    },
    /// `std::time::Instant` (`clock_gettime(CLOCK_MONOTONIC)`), and why not the counter.
    Monotonic {
        /// Why the counter is not used.
        why: String,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Tsc { ghz } => write!(f, "tsc ({ghz:.3} GHz)"),
            Source::Monotonic { why } => write!(f, "monotonic ({why})"),
        }
    }
}

/// A point in time, for measuring spans within one process: counter ticks or monotonic
/// nanoseconds, whichever [`source`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(u64);

impl Stamp {
    /// Now.
    #[inline]
    pub fn now() -> Stamp {
        let clock = clock();
        if clock.nanos_per_tick.is_some()
            && let Some(ticks) = sys::tsc()
        {
            return Stamp(ticks);
        }
        Stamp(clock.anchor.elapsed().as_nanos() as u64)
    }

    /// Nanoseconds from `earlier` to this stamp; 0 when `earlier` is later.
    #[inline]
    pub fn nanos_since(self, earlier: Stamp) -> u64 {
        let delta = self.0.saturating_sub(earlier.0);
        match clock().nanos_per_tick {
            Some(rate) => (delta as f64 * rate) as u64,
            None => delta,
        }
    }

    /// Nanoseconds from this stamp to now.
    pub fn elapsed_nanos(self) -> u64 {
        Stamp::now().nanos_since(self)
    }
}

/// The clock of this process, chosen (and calibrated) now if no stamp has been taken yet:
/// call it before timing starts so that the first stamp does not pay for [`CALIBRATION`].
pub fn init() -> Source {
    source()
}

/// Where this process's stamps come from.
pub fn source() -> Source {
    let clock = clock();
    match clock.nanos_per_tick {
        Some(rate) => Source::Tsc { ghz: 1.0 / rate },
        None => Source::Monotonic { why: clock.why.clone() },
    }
}

/// Whether `value` (of [`CLOCK_ENV`]) names a clock; the error says what it may be.
///
/// # Errors
/// A message naming the accepted values and the one found.
pub fn check_env_value(value: &str) -> Result<(), String> {
    match value {
        "" | "auto" | "monotonic" => Ok(()),
        other => {
            Err(format!("{CLOCK_ENV}: expected auto or monotonic (or unset), found {other:?}"))
        }
    }
}

struct Clock {
    anchor: Instant,
    /// Nanoseconds per counter tick; `None`: stamps are monotonic nanoseconds.
    nanos_per_tick: Option<f64>,
    /// Why the counter is not used, when it is not.
    why: String,
}

static CLOCK: OnceLock<Clock> = OnceLock::new();

#[inline]
fn clock() -> &'static Clock {
    CLOCK.get_or_init(|| {
        let wanted = std::env::var(CLOCK_ENV).unwrap_or_default();
        let kernel = std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        );
        choose(&wanted, kernel.as_deref().ok())
    })
}

/// The clock for `wanted` (the value of [`CLOCK_ENV`]) on a kernel whose clocksource is
/// `kernel_clocksource` (`None`: not known).
fn choose(wanted: &str, kernel_clocksource: Option<&str>) -> Clock {
    let anchor = Instant::now();
    let monotonic = |why: String| Clock { anchor, nanos_per_tick: None, why };
    if let Err(e) = check_env_value(wanted) {
        return monotonic(e);
    }
    if wanted == "monotonic" {
        return monotonic(format!("{CLOCK_ENV}=monotonic"));
    }
    if sys::tsc().is_none() {
        return monotonic("no time-stamp counter on this architecture".into());
    }
    match kernel_clocksource.map(str::trim) {
        Some("tsc") => {}
        Some(other) => {
            return monotonic(format!("the kernel keeps time with {other:?}, not the tsc"));
        }
        None => return monotonic("the kernel's clocksource is not known".into()),
    }
    match calibrate() {
        Some(rate) => Clock { anchor, nanos_per_tick: Some(rate), why: String::new() },
        None => monotonic("the time-stamp counter's rate is implausible".into()),
    }
}

/// Nanoseconds per counter tick, from [`CALIBRATION`] of spinning between two readings of
/// both clocks; `None` when the rate is outside [`PLAUSIBLE_GHZ`].
fn calibrate() -> Option<f64> {
    let (instant0, ticks0) = reading()?;
    while instant0.elapsed() < CALIBRATION {
        std::hint::spin_loop();
    }
    let (instant1, ticks1) = reading()?;
    let ticks = ticks1.checked_sub(ticks0).filter(|&t| t > 0)? as f64;
    let nanos = instant1.duration_since(instant0).as_nanos() as f64;
    let ghz = ticks / nanos;
    (PLAUSIBLE_GHZ.0..=PLAUSIBLE_GHZ.1).contains(&ghz).then(|| nanos / ticks)
}

/// One counter reading and the instant it was taken: of several tries, the one bracketed
/// most closely by two `Instant` reads, placed in the middle of its bracket.
fn reading() -> Option<(Instant, u64)> {
    let mut best: Option<(Duration, Instant, u64)> = None;
    for _ in 0..9 {
        let before = Instant::now();
        let ticks = sys::tsc()?;
        let after = Instant::now();
        let bracket = after.duration_since(before);
        if best.is_none_or(|(closest, _, _)| bracket < closest) {
            best = Some((bracket, before + bracket / 2, ticks));
        }
    }
    best.map(|(_, instant, ticks)| (instant, ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_agrees_with_the_monotonic_clock() {
        // A correctness check of the rate, not a timing threshold: both clocks measure the
        // same span, however long the machine makes it.
        init();
        let start = (Instant::now(), Stamp::now());
        std::thread::sleep(Duration::from_millis(20));
        let stamped = Stamp::now().nanos_since(start.1) as f64;
        let monotonic = start.0.elapsed().as_nanos() as f64;
        let ratio = stamped / monotonic;
        assert!(
            (0.99..=1.01).contains(&ratio),
            "{stamped} ns against {monotonic} ns ({})",
            source()
        );
    }

    #[test]
    fn a_stamp_before_an_earlier_one_is_a_zero_span() {
        let later = Stamp::now();
        let earlier = Stamp(later.0.saturating_sub(1000));
        assert_eq!(earlier.nanos_since(later), 0);
        assert!(later.nanos_since(earlier) > 0);
    }

    #[test]
    fn the_counter_is_used_only_where_the_kernel_keeps_time_with_it() {
        let tsc_here = sys::tsc().is_some();
        let clock = choose("", Some("tsc\n"));
        assert_eq!(clock.nanos_per_tick.is_some(), tsc_here, "{}", clock.why);
        if let Some(rate) = clock.nanos_per_tick {
            let ghz = 1.0 / rate;
            assert!((PLAUSIBLE_GHZ.0..=PLAUSIBLE_GHZ.1).contains(&ghz), "{ghz} GHz");
        }
        let clock = choose("", Some("kvm-clock\n"));
        assert_eq!(clock.nanos_per_tick, None);
        assert!(clock.why.contains("\"kvm-clock\""), "{}", clock.why);
        let clock = choose("", None);
        assert_eq!(clock.nanos_per_tick, None);
        assert!(clock.why.contains("not known"), "{}", clock.why);
    }

    #[test]
    fn the_environment_picks_the_monotonic_clock_or_is_refused_by_name() {
        let clock = choose("monotonic", Some("tsc"));
        assert_eq!(clock.nanos_per_tick, None);
        assert_eq!(clock.why, "PEERPIPE_CLOCK=monotonic");
        let clock = choose("rdtsc", Some("tsc"));
        assert_eq!(clock.nanos_per_tick, None);
        assert!(clock.why.contains("found \"rdtsc\""), "{}", clock.why);
        assert!(check_env_value("auto").is_ok() && check_env_value("").is_ok());
        let err = check_env_value("fast").unwrap_err();
        assert_eq!(err, "PEERPIPE_CLOCK: expected auto or monotonic (or unset), found \"fast\"");
    }
}
