//! Hand-built reports for the tests of the report's outputs (no processes, no clocks):
//! [`sample`] is a whole run, [`row`], [`base`] and [`report`] build others, and
//! [`with_probes`] gives one the machine's states.

use peerpipe_cli::report::key::RowId;
use peerpipe_cli::report::states;
use peerpipe_cli::report::{BaselineRow, ConfigRecord, Machine, Percentiles, Report, Round, Row};

/// Six percentiles around a p50.
pub fn pct(p50: u64) -> Percentiles {
    Percentiles {
        min: p50 * 9 / 10,
        p50,
        p90: p50 * 11 / 10,
        p99: p50 * 2,
        p999: p50 * 3,
        max: p50 * 4,
    }
}

/// A row whose p50 round trip is `rtt` with the given p50 phases.
pub fn row(dtype: &str, elements: u64, handler: &str, path: &str, wait: &str, rtt: u64) -> Row {
    let width = if dtype == "f64" { 8 } else { 4 };
    Row {
        id: RowId {
            dtype: dtype.parse().unwrap(),
            elements,
            bytes: elements * width,
            transport: "pipe".parse().unwrap(),
            path: path.parse().unwrap(),
            handler: handler.parse().unwrap(),
            wait: wait.parse().unwrap(),
            pin: "free".parse().unwrap(),
        },
        iterations: 1000,
        rtt_ns: pct(rtt),
        transfer_ns: pct(rtt * 9 / 10),
        encode_ns: pct(rtt / 40),
        decode_ns: pct(rtt / 40),
        server_ns: pct(rtt / 20),
        client_cpu_ns: rtt as f64 * 0.6,
        server_cpu_ns: rtt as f64 * 0.5,
        mb_per_s: 2.0 * (elements * width) as f64 / rtt as f64 * 1e3,
        ratio_to_baseline: Some(1.25),
        ratio_ci: Some([1.2, 1.3]),
        rounds: rounds(rtt, Some(rtt * 4 / 5)),
        shared_core_share: Some(0.0),
        client_waits: None,
    }
}

pub fn base(bytes: u64, wait: &str, p50: u64) -> BaselineRow {
    BaselineRow {
        bytes,
        transport: "pipe".parse().unwrap(),
        wait: wait.parse().unwrap(),
        pin: "free".parse().unwrap(),
        lent: false,
        iterations: 2000,
        rtt_ns: pct(p50),
        rounds: rounds(p50, None),
        shared_core_share: Some(0.0),
        route: None,
    }
}

/// Three rounds around `p50` (±5 %), on CPUs 0 and 1, each of its own generation (so that
/// the run bounds a repeat: one generation could not).
pub fn rounds(p50: u64, floor: Option<u64>) -> Vec<Round> {
    [(0, p50 * 95 / 100), (1, p50), (2, p50 * 105 / 100)]
        .map(|(generation, p50_ns)| Round {
            p50_ns,
            p99_ns: None,
            floor_p50_ns: floor,
            client_cpu: Some(0),
            server_cpu: Some(1),
            preemptions: None,
            generation,
            probe_ns: None,
            compute_ns: None,
            state: None,
        })
        .to_vec()
}

pub fn report(baseline: Vec<BaselineRow>, rows: Vec<Row>) -> Report {
    Report {
        peerpipe: "0.1.0".into(),
        machine: Machine {
            cpu: "Test CPU".into(),
            cores: 2,
            kernel: "6.0.0-test".into(),
            pipe_max_size: Some(1 << 20),
            pipe_size_granted: Some(1 << 20),
            endian: "little".into(),
            clock: "tsc (2.596 GHz)".into(),
            states: vec![],
        },
        config: ConfigRecord {
            sizes: vec![500, 65_536],
            dtypes: vec!["f64".into()],
            paths: vec!["zero-copy".into(), "codec".into()],
            handlers: vec!["echo-raw".into(), "echo".into()],
            waits: vec!["block".into(), "spin".into()],
            pins: vec!["free".into()],
            iterations: None,
            duration_ns: Some(150_000_000),
            warmup_ns: 20_000_000,
            rounds: 3,
            generations: 3,
            order_seed: 7,
            server_delay_ns: 0,
            spawn: None,
            budget_ns: 150_000,
            pipe_size: 1 << 20,
            transports: vec!["pipe".into()],
            shm_size: 1 << 20,
            hybrid_spin_ns: 50_000,
            load: 0,
            waits_share_rounds: true,
        },
        baseline,
        rows,
        sync_costs: vec![],
        skipped: vec![],
    }
}

/// Two sizes × two waits × two handlers × two paths, with baselines; f64 × 500 at spin with
/// echo-raw zero-copy is the fastest row of its size (20 µs), f64 × 65536 never meets the
/// 150 µs budget (its fastest is 400 µs).
pub fn sample() -> Report {
    let mut rows = Vec::new();
    for wait in ["block", "spin"] {
        for handler in ["echo-raw", "echo"] {
            for path in ["zero-copy", "codec"] {
                let slower = |rtt: u64| {
                    rtt + if handler == "echo" { rtt / 4 } else { 0 }
                        + if path == "codec" { rtt / 8 } else { 0 }
                        + if wait == "block" { 60_000 } else { 0 }
                };
                rows.push(row("f64", 500, handler, path, wait, slower(20_000)));
                rows.push(row("f64", 65_536, handler, path, wait, slower(400_000)));
            }
        }
    }
    let baseline = vec![
        base(8, "block", 50_000),
        base(4000, "block", 60_000),
        base(524_288, "block", 300_000),
        base(8, "spin", 4_000),
        base(4000, "spin", 16_000),
        base(524_288, "spin", 350_000),
    ];
    report(baseline, rows)
}

/// `report` with round `i` of every floor and row probed at `probe(i)` (the 4 KiB round trip
/// between the first two CPUs, in ns), then the machine's states found and assigned, as a run
/// does.
#[allow(dead_code, reason = "not every test file that shares these reports has states")]
pub fn with_probes(mut report: Report, probe: impl Fn(usize) -> u64) -> Report {
    let floors = report.baseline.iter_mut().map(|b| &mut b.rounds);
    for rounds in floors.chain(report.rows.iter_mut().map(|r| &mut r.rounds)) {
        for (i, round) in rounds.iter_mut().enumerate() {
            round.probe_ns = Some(probe(i));
        }
    }
    states::assign(&mut report);
    report
}
