//! Two wait strategies compared round by round. The report measures every wait of a
//! placement in the same rounds
//! ([`ConfigRecord::waits_share_rounds`](super::model::ConfigRecord::waits_share_rounds)),
//! so a row at one wait and the row that differs from it only by its wait have one burst each
//! in every round, moments apart: the median over rounds of the ratio of their p50s, taken in
//! the state the machine was in most, says how the two waits compare on this machine without
//! a change of speed between them.

use crate::pairing::{PairedRatio, paired_ratio};

use super::format;
use super::key::RowId;
use super::model::{Report, Row};
use super::states;

/// `row` against the same row at another wait, paired round by round.
#[derive(Clone, Copy, Debug)]
pub struct WaitComparison<'a> {
    /// The row at the other wait.
    pub other: &'a Row,
    /// Median over the compared rounds of `row`'s p50 ÷ `other`'s p50 in the same round, with
    /// its 95 % interval.
    pub ratio: PairedRatio,
    /// Rounds compared: those of `row`'s main state ([`states::main_state`]) that `other`
    /// also ran in that state; every round when the rounds carry no state.
    pub rounds: usize,
}

/// `row` against every row that differs from it only by its wait, in the report's order;
/// empty when the report's waits did not share their rounds or no other wait was measured
/// there.
pub fn compare<'a>(report: &'a Report, row: &Row) -> Vec<WaitComparison<'a>> {
    if !report.config.waits_share_rounds {
        return Vec::new();
    }
    let main = states::main_state(&states::figures(&row.rounds)).map(|m| m.state);
    report
        .rows
        .iter()
        .filter(|other| {
            other.id.wait != row.id.wait
                && RowId { wait: row.id.wait, ..other.id.clone() } == row.id
        })
        .filter(|other| other.rounds.len() == row.rounds.len())
        .filter_map(|other| {
            let (mine, theirs): (Vec<u64>, Vec<u64>) = row
                .rounds
                .iter()
                .zip(&other.rounds)
                .filter(|(a, b)| main.is_none() || (a.state == main && b.state == main))
                .map(|(a, b)| (a.p50_ns, b.p50_ns))
                .unzip();
            let ratio = paired_ratio(&mine, &theirs)?;
            Some(WaitComparison { other, ratio, rounds: mine.len() })
        })
        .collect()
}

impl WaitComparison<'_> {
    /// True when the interval lies on one side of 1.00x: the run tells which wait is faster.
    pub fn is_resolved(&self) -> bool {
        let [lo, hi] = self.ratio.ci;
        !(lo <= 1.0 && 1.0 <= hi)
    }

    /// The ratio as the report prints it: `0.27x [0.25-0.30]`, with `, no difference
    /// resolved` when the interval reaches 1.00x. Unlike a ratio to the floor, a wide interval
    /// on one side of 1.00x is still a result: one wait is faster, by that much or more.
    pub fn text(&self) -> String {
        let PairedRatio { median, ci: [lo, hi] } = self.ratio;
        let ratio = |x| format::ratio_or_dash(x);
        let text = format!("{}x [{}-{}]", ratio(median), ratio(lo), ratio(hi));
        if self.is_resolved() { text } else { format!("{text}, no difference resolved") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::key::{Handler, Placement, Workload};
    use crate::report::model::{Percentiles, Round};
    use peerpipe::DataPath;
    use peerpipe::transport::{TransportKind, Wait};

    fn row(wait: Wait, pin: Placement, p50s: &[(u64, Option<u32>)]) -> Row {
        let rounds = p50s
            .iter()
            .map(|&(p50_ns, state)| Round {
                p50_ns,
                p99_ns: None,
                floor_p50_ns: Some(1_000),
                client_cpu: None,
                server_cpu: None,
                preemptions: None,
                generation: 0,
                probe_ns: None,
                compute_ns: None,
                state,
            })
            .collect();
        Row {
            id: RowId {
                dtype: Workload::F64,
                elements: 500,
                bytes: 4000,
                transport: TransportKind::Pipe,
                path: DataPath::Codec,
                handler: Handler::Echo,
                wait,
                pin,
            },
            iterations: 100,
            rtt_ns: Percentiles::default(),
            transfer_ns: Percentiles::default(),
            encode_ns: Percentiles::default(),
            decode_ns: Percentiles::default(),
            server_ns: Percentiles::default(),
            client_cpu_ns: f64::NAN,
            server_cpu_ns: f64::NAN,
            mb_per_s: 0.0,
            ratio_to_baseline: None,
            ratio_ci: None,
            rounds,
            shared_core_share: None,
            client_waits: None,
        }
    }

    fn report(rows: Vec<Row>, share: bool) -> Report {
        let mut report = Report::of(vec![], rows);
        report.config.waits_share_rounds = share;
        report
    }

    /// Ten rounds in state 0 where `a` is `x` and `b` is 1000, and two in state 1 where `a`
    /// is 9000: the slow state must not move the comparison.
    fn rounds(x: u64) -> Vec<(u64, Option<u32>)> {
        let mut rounds = vec![(x, Some(0)); 10];
        rounds.extend([(9_000, Some(1)); 2]);
        rounds
    }

    #[test]
    fn a_wait_is_compared_round_by_round_with_each_other_wait_of_its_row_in_its_main_state() {
        let block = row(Wait::Block, Placement::Free, &rounds(1_000));
        let spin = row(Wait::Spin, Placement::Free, &rounds(500));
        let auto = row(Wait::auto(), Placement::Free, &rounds(1_100));
        // The same wait elsewhere, and another placement, are not its comparisons.
        let split = row(Wait::Block, Placement::Split, &rounds(10));
        let report = report(vec![block, spin, split, auto.clone()], true);
        let compared = compare(&report, &auto);
        let against: Vec<Wait> = compared.iter().map(|c| c.other.id.wait).collect();
        assert_eq!(against, [Wait::Block, Wait::Spin]);
        assert!(compared.iter().all(|c| c.rounds == 10));
        let medians: Vec<f64> = compared.iter().map(|c| c.ratio.median).collect();
        assert_eq!(medians, [1.1, 2.2]);
        assert!(compared.iter().all(WaitComparison::is_resolved));
        assert_eq!(compared[0].text(), "1.10x [1.10-1.10]");
        let close =
            WaitComparison { ratio: PairedRatio { median: 1.01, ci: [0.97, 1.06] }, ..compared[0] };
        assert_eq!(close.text(), "1.01x [0.97-1.06], no difference resolved");
        let far =
            WaitComparison { ratio: PairedRatio { median: 0.12, ci: [0.04, 0.23] }, ..compared[0] };
        assert_eq!(far.text(), "0.12x [0.04-0.23]");
    }

    #[test]
    fn waits_measured_in_groups_of_their_own_are_not_compared() {
        let block = row(Wait::Block, Placement::Free, &rounds(1_000));
        let auto = row(Wait::auto(), Placement::Free, &rounds(1_100));
        let report = report(vec![block, auto.clone()], false);
        assert!(compare(&report, &auto).is_empty());
    }
}
