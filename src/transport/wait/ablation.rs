//! Switches that turn one mechanism of [`super::Wait::Auto`] off, for
//! `benches/waits_ablation.sh` only: with the cargo feature `wait-ablation`, the names in
//! `PEERPIPE_WAIT_ABLATE` (comma-separated, read once per process) are off; without it,
//! [`off`] is the constant `false` and every check of it compiles to nothing. Not an API.

/// One mechanism of `auto`, by the name `PEERPIPE_WAIT_ABLATE` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "wait-ablation"), allow(dead_code))]
pub(crate) enum Mechanism {
    /// `stop`: two misses in a row stop the spinning.
    Stop = 0,
    /// `probe`: probes while sleeping.
    Probe,
    /// `resume`: dear sleeps in a row resume the spinning.
    Resume,
    /// `yield`: one yield before sleeping (after a spin, or instead of one).
    Yield,
    /// `dearyield`: a dear yield stops such yields, yield probes start them again.
    DearYield,
    /// `spinyield`: a yield every 20 µs of a spin, which ends it when it runs another task.
    SpinYield,
    /// `confine`: the two masks read; confined, no spin and no yield.
    Confine,
    /// `move`: this thread moved to an idle CPU after hand-overs.
    Move,
}

#[cfg(feature = "wait-ablation")]
mod switches {
    use std::sync::OnceLock;

    use super::Mechanism;

    /// Every mechanism's name, in the order of [`Mechanism`].
    pub(crate) const NAMES: [&str; 8] =
        ["stop", "probe", "resume", "yield", "dearyield", "spinyield", "confine", "move"];

    static OFF: OnceLock<u32> = OnceLock::new();

    /// The mechanisms named in `text`, one bit each; an unknown name is reported and ignored.
    pub(crate) fn parse(text: &str) -> u32 {
        let mut off = 0;
        for name in text.split(',').map(str::trim).filter(|name| !name.is_empty()) {
            match NAMES.iter().position(|known| *known == name) {
                Some(bit) => off |= 1 << bit,
                None => eprintln!("PEERPIPE_WAIT_ABLATE: no mechanism {name:?} (known: {NAMES:?})"),
            }
        }
        off
    }

    /// Whether `mechanism` is off in this process.
    #[inline]
    pub(crate) fn off(mechanism: Mechanism) -> bool {
        let off = OFF
            .get_or_init(|| std::env::var("PEERPIPE_WAIT_ABLATE").map_or(0, |text| parse(&text)));
        off & (1 << mechanism as u32) != 0
    }
}

#[cfg(feature = "wait-ablation")]
pub(crate) use switches::off;

/// Whether `mechanism` is off: never, without the feature `wait-ablation`.
#[cfg(not(feature = "wait-ablation"))]
#[inline(always)]
pub(crate) const fn off(_mechanism: Mechanism) -> bool {
    false
}

#[cfg(all(test, feature = "wait-ablation"))]
mod tests {
    use super::switches::{NAMES, parse};

    #[test]
    fn names_turn_their_mechanisms_off_and_unknown_ones_nothing() {
        assert_eq!(parse(""), 0);
        assert_eq!(parse("stop, move"), 1 | 1 << (NAMES.len() - 1));
        assert_eq!(parse("sleepy"), 0);
    }
}
