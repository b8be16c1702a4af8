//! Two reports' machine states: when they are one state.
//!
//! [`same_state`]: two states of two reports are the same when their 4 KiB probes' medians are
//! less than [`ACROSS_RUNS_FACTOR`] (1.2x) apart — closer than two states of one run ever are
//! ([`states::STATE_FACTOR`]), for states that one run does not hold together can lie closer —
//! and their second CPUs computed alike ([`same_compute`]). Their ranges are not compared: a
//! probe caught mid-change can stretch a range toward the next state. `peer compare` and
//! `peer repeat` both ask it.

use super::model::MachineState;
#[cfg(doc)]
use super::states;

/// Two reports' states are the same state only when their medians are less than this factor
/// apart ([`same_state`]). On a 2-core KVM guest, the main states of 50 runs of one
/// command, over days, had medians of 0.90–0.96 µs or 3.31–3.69 µs (1.07x and 1.11x within
/// each), and between them states at 1.14–1.45 µs came and went, in which an echo row added
/// ~630 ns to its floor where it added ~410 ns at 0.93 µs. At [`states::STATE_FACTOR`], a run
/// whose main state sat at 1.31 µs was compared with one at 0.94 µs, and two runs of one
/// command were called different.
pub const ACROSS_RUNS_FACTOR: f64 = 1.2;

/// Two reports' states compute alike only when their `compute_ns` are less than this factor
/// apart ([`same_compute`]). On the same guest, over 20 series of ten runs, the second CPU's
/// copy took ~570 ns (550–650 in most runs) and 1.25x that or more in 45 of the 60 runs whose
/// echo server answered in 180–250 ns instead of 140–150 (ratio ~1.31 instead of ~1.22), and in
/// 9 of the 236 others.
pub const COMPUTE_ACROSS_RUNS_FACTOR: f64 = 1.25;

/// Whether two probe figures (ns), of two runs, are of the same state of the machine: less than
/// [`ACROSS_RUNS_FACTOR`] apart.
pub fn same_state_ns(a_ns: u64, b_ns: u64) -> bool {
    within_factor(a_ns, b_ns, ACROSS_RUNS_FACTOR)
}

/// Whether the larger of `a` and `b` is less than `factor` times the smaller (0 counted as 1).
pub(crate) fn within_factor(a: u64, b: u64, factor: f64) -> bool {
    let (lo, hi) = (a.min(b).max(1), a.max(b));
    (hi as f64) < factor * lo as f64
}

/// Whether state `a` of one report and state `b` of another are the same state of the
/// machine: their medians are ([`same_state_ns`]), and so is how fast the second CPU computed
/// in them ([`same_compute`]).
///
/// # Examples
/// ```
/// use peerpipe_cli::report::MachineState;
/// use peerpipe_cli::report::across_runs::same_state;
/// let state = |probe_ns, compute_ns| MachineState { id: 0, probe_ns, min_ns: probe_ns,
///     max_ns: probe_ns, rounds: 10, compute_ns };
/// assert!(same_state(&state(900, None), &state(1_050, None)));
/// assert!(!same_state(&state(900, None), &state(1_100, None)));
/// assert!(!same_state(&state(900, None), &state(3_500, None)));
/// // The same transfers, the second CPU computing at two thirds of the speed.
/// assert!(!same_state(&state(1_100, Some(1_200)), &state(1_120, Some(1_800))));
/// assert!(same_state(&state(1_100, Some(1_200)), &state(1_120, Some(1_260))));
/// ```
pub fn same_state(a: &MachineState, b: &MachineState) -> bool {
    same_state_ns(a.probe_ns, b.probe_ns) && same_compute(a.compute_ns, b.compute_ns)
}

/// Two runs' states compute alike when their `compute_ns` are less than
/// [`COMPUTE_ACROSS_RUNS_FACTOR`] apart, or when either is unknown (a report without it).
pub fn same_compute(a_ns: Option<u64>, b_ns: Option<u64>) -> bool {
    match (a_ns, b_ns) {
        (Some(a), Some(b)) => within_factor(a, b, COMPUTE_ACROSS_RUNS_FACTOR),
        _ => true,
    }
}

/// The states `a` and `b` (two reports' [`Machine::states`](super::model::Machine::states)) share:
/// each state of `a` with the nearest state of `b` that is the [`same_state`], as `(a id,
/// b id)`, in `a`'s order.
pub fn shared_states(a: &[MachineState], b: &[MachineState]) -> Vec<(u32, u32)> {
    let apart = |x: &MachineState, y: &MachineState| {
        (x.probe_ns.max(1) as f64 / y.probe_ns.max(1) as f64).ln().abs()
    };
    a.iter()
        .filter_map(|x| {
            let nearest = b
                .iter()
                .filter(|y| same_state(x, y))
                .min_by(|y, z| apart(x, y).total_cmp(&apart(x, z)))?;
            Some((x.id, nearest.id))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(id: u32, probe_ns: u64, min_ns: u64, max_ns: u64) -> MachineState {
        MachineState { id, probe_ns, min_ns, max_ns, rounds: 10, compute_ns: None }
    }

    #[test]
    fn states_of_two_reports_are_matched_by_the_clustering_rule() {
        let fast = state(0, 900, 850, 1_100);
        let slow = state(1, 3_500, 3_300, 3_700);
        assert!(same_state(&fast, &state(0, 950, 900, 1_000)));
        assert!(!same_state(&fast, &slow));
        assert!(same_state(&slow, &state(0, 3_000, 2_900, 3_100)));
        // A range stretched by a probe caught mid-change does not make two states one.
        assert!(!same_state(&state(0, 1_400, 1_050, 3_000), &slow));
        // A: both states; B: only the slow one, and a third (~0.4 us) A never saw.
        let b = [state(0, 400, 380, 420), state(1, 3_400, 3_350, 3_450)];
        assert_eq!(shared_states(&[fast, slow], &b), [(1, 1)]);
        assert!(shared_states(&[fast], &b).is_empty());
        assert!(shared_states(&[], &b).is_empty());
    }
}
