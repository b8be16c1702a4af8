//! [`AutoCounts`], listed once: the report's JSON and table and Python's `RemoteRhs.stats()`
//! are made from [`AutoCounts::fields`], under these names.

/// Declares [`AutoCounts`] and the list of its fields from one list.
macro_rules! auto_counts {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// What the waits of one connection under [`Wait::Auto`](super::Wait::Auto) saw,
        /// counted since it started.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct AutoCounts {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl AutoCounts {
            /// Every count with its name, in declaration order.
            pub fn fields(&self) -> impl Iterator<Item = (&'static str, u64)> + use<> {
                [$((stringify!($name), self.$name)),*].into_iter()
            }

            /// The count named `name`, to set; `None` for a name that is not one.
            pub fn field_mut(&mut self, name: &str) -> Option<&mut u64> {
                match name {
                    $(stringify!($name) => Some(&mut self.$name),)*
                    _ => None,
                }
            }

            /// Adds what was counted between `before` and `after` (two readings of one
            /// connection, in that order), count by count; a count that went down adds 0.
            pub fn add_between(&mut self, before: &AutoCounts, after: &AutoCounts) {
                $(self.$name += after.$name.saturating_sub(before.$name);)*
            }
        }
    };
}

auto_counts! {
    /// Waits that spun (probes included).
    spun,
    /// Waits that spun and saw their data within the spin.
    hits,
    /// Waits that did not spin: they yielded once (while yields pay), then slept if need be.
    slept_at_once,
    /// Probes: spins while the connection was sleeping.
    probes,
    /// Switches from spinning to sleeping.
    stopped_spinning,
    /// Waits whose spin ran out and whose yield ran another task first.
    contended,
    /// Waits that did not spin whose yield handed the core to another task: yielding stopped.
    dear_yields,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_count_is_listed_once_and_set_by_its_name() {
        let mut counts = AutoCounts::default();
        let names: Vec<_> = counts.fields().map(|(name, _)| name).collect();
        for (i, name) in names.iter().enumerate() {
            *counts.field_mut(name).unwrap() = i as u64 + 1;
        }
        let listed: Vec<_> = counts.fields().collect();
        assert_eq!(listed.len(), names.len());
        for (i, (name, value)) in listed.into_iter().enumerate() {
            assert_eq!((name, value), (names[i], i as u64 + 1));
        }
        assert_eq!(counts.spun, 1);
        assert_eq!(counts.dear_yields, names.len() as u64);
        assert!(counts.field_mut("moves").is_none());
        let later = AutoCounts { spun: 5, hits: 0, ..counts };
        let mut between = AutoCounts::default();
        between.add_between(&counts, &later);
        assert_eq!((between.spun, between.hits, between.probes), (4, 0, 0));
        let mut sum = counts;
        sum.add_between(&counts, &later);
        assert_eq!(sum.spun, 5);
    }
}
