//! The report's outputs, byte for byte, on fixed hand-built reports (no processes, no clocks):
//! the JSON, the CSV, the SVG plot, the printed text (summary, table, skipped rows and
//! synchronisation costs, in the order `peer` prints them), `peer compare`'s text in both
//! modes and the soak's plan line. A change of any byte of these is a change of the report's
//! output, which a refactoring must not make.
//!
//! The expected files live in `tests/fixtures/golden/`. When an output is meant to change,
//! write them again with `UPDATE_GOLDEN=1 cargo test -p peerpipe-cli --test report_golden`
//! and review the difference.

mod reports;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use peerpipe_cli::report::compare::{self, Mode, Thresholds};
use peerpipe_cli::report::sync::SyncCost;
use peerpipe_cli::report::{BaselineRow, Report, Round, Row, Skipped, export, render, sync};
use peerpipe_cli::soak;
use reports::{base, row, sample, with_probes};

/// Where the expected outputs live.
fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden")
}

/// Checks `actual` against the golden file `name`, byte for byte; with `UPDATE_GOLDEN` set,
/// writes it instead.
fn check(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        fs::create_dir_all(golden_dir()).expect("create the golden directory");
        fs::write(&path, actual).expect("write a golden file");
        return;
    }
    let expected = fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    if expected == actual {
        return;
    }
    let first = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    panic!(
        "{name} differs from {} at line {}:\nexpected: {:?}\nactual:   {:?}\n(lengths {} and {})",
        path.display(),
        first + 1,
        expected.lines().nth(first),
        actual.lines().nth(first),
        expected.len(),
        actual.len()
    );
}

/// A report file written by `write` into a fresh directory, read back.
fn written(
    name: &str,
    report: &Report,
    write: fn(&Report, &Path) -> peerpipe::Result<()>,
) -> String {
    let dir =
        std::env::temp_dir().join(format!("peerpipe-report-golden-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir).expect("create a temp dir");
    let path = dir.join(name);
    write(report, &path).expect("write the report file");
    let text = fs::read_to_string(&path).expect("read it back");
    fs::remove_dir_all(&dir).ok();
    text
}

/// What `peer` prints for a report: the summary, the table, the skipped rows and the
/// synchronisation costs, as `run_report` writes them.
fn printed(report: &Report) -> String {
    let mut out = Vec::new();
    render::summary(report, &mut out).unwrap();
    writeln!(out).unwrap();
    render::table(report, &mut out).unwrap();
    render::skipped(report, &mut out).unwrap();
    if !report.sync_costs.is_empty() {
        writeln!(out).unwrap();
        sync::render(&report.sync_costs, &mut out).unwrap();
    }
    String::from_utf8(out).expect("UTF-8")
}

fn compared(a: &Report, b: &Report, mode: Mode) -> String {
    let comparison = compare::compare(a, b, Thresholds::default(), mode);
    let mut out = Vec::new();
    compare::render(&comparison, &mut out).unwrap();
    String::from_utf8(out).expect("UTF-8")
}

/// `row` with its placement, transport and ratio changed.
fn variant(
    mut r: Row,
    pin: &str,
    transport: &str,
    ratio: Option<f64>,
    ci: Option<[f64; 2]>,
) -> Row {
    r.id.pin = pin.parse().unwrap();
    r.id.transport = transport.parse().unwrap();
    r.ratio_to_baseline = ratio;
    r.ratio_ci = ci;
    r
}

fn floor(bytes: u64, wait: &str, pin: &str, transport: &str, p50: u64) -> BaselineRow {
    let mut b = base(bytes, wait, p50);
    b.pin = pin.parse().unwrap();
    b.transport = transport.parse().unwrap();
    b
}

/// The `auto` row of `sample()`'s shape with the client's waits counted.
fn auto_row(handler: &str, path: &str, rtt: u64, spun: u64, slept: u64) -> Row {
    let mut r = row("f64", 500, handler, path, "auto", rtt);
    let waits = r.client_waits.get_or_insert_with(Default::default);
    waits.counts.spun = spun;
    waits.counts.hits = spun * 9 / 10;
    waits.counts.slept_at_once = slept;
    waits.counts.probes = 3;
    waits.moves = 1;
    r
}

/// A run with a bit of everything and no machine states: several dtypes and sizes, four
/// waits, three placements, pipes and shared memory, resolved, unresolved, missing and
/// below-floor ratios, unknown CPU times, a custom handler, client waits, a lent and a routed
/// floor, a floor whose speed changed, skipped and failed rows, and synchronisation costs.
fn mixed() -> Report {
    let mut report = sample();
    report.config.waits = vec!["block".into(), "spin".into(), "auto".into()];
    report.config.pins = vec!["free".into(), "split".into()];
    report.config.transports = vec!["pipe".into(), "shm-ring".into()];
    report.config.dtypes = vec!["f64".into(), "f32".into(), "f64-as-f32".into()];
    report.config.sizes = vec![1, 500, 1000, 65_536];
    report.config.load = 2;
    report.config.spawn = Some("ssh host peer --role server".into());
    // `auto`, unpinned: the answer's own rows, with what the client's waits did.
    for (handler, path, rtt, spun, slept) in [
        ("echo-raw", "zero-copy", 22_000, 400, 560),
        ("echo-raw", "codec", 24_000, 300, 660),
        ("echo", "zero-copy", 27_000, 200, 780),
        ("echo", "codec", 31_000, 100, 880),
    ] {
        report.rows.push(auto_row(handler, path, rtt, spun, slept));
    }
    report.rows.push(row("f64", 65_536, "echo", "zero-copy", "auto", 450_000));
    // `auto` on two cores, much slower: placement changes the answer.
    let split = row("f64", 500, "echo", "zero-copy", "auto", 70_000);
    report.rows.push(variant(split, "split", "pipe", Some(1.6), Some([1.1, 2.4])));
    let split_raw = row("f64", 500, "echo-raw", "zero-copy", "auto", 65_000);
    report.rows.push(variant(split_raw, "split", "pipe", None, None));
    // Shared memory beside the pipe at spin: a crossover.
    for (elements, rtt) in [(500, 12_000), (65_536, 500_000)] {
        let shm = row("f64", elements, "echo-raw", "zero-copy", "spin", rtt);
        report.rows.push(variant(shm, "free", "shm-ring", Some(0.9), Some([0.85, 0.93])));
    }
    // f32 at hybrid, with an unresolved ratio, unknown CPU and a custom handler.
    let mut f32_row = row("f32", 1000, "echo", "codec", "hybrid", 30_000);
    f32_row.ratio_ci = Some([0.9, 1.6]);
    f32_row.server_cpu_ns = f64::NAN;
    report.rows.push(f32_row);
    let mut custom = row("f32", 1000, "my-model", "zero-copy", "hybrid", 45_000);
    custom.ratio_to_baseline = Some(2.0);
    custom.ratio_ci = Some([1.9, 2.1]);
    custom.mb_per_s = f64::NAN;
    report.rows.push(custom);
    // f32 x 64, whose only row has a ratio that is no result: the answer says so.
    let mut small = row("f32", 64, "echo", "codec", "hybrid", 9_000);
    small.ratio_to_baseline = Some(1.2);
    small.ratio_ci = Some([0.5, 2.0]);
    report.rows.push(small);
    // f64-as-f32 at spin, with no floor of its bytes.
    report.rows.push(row("f64-as-f32", 1000, "echo", "codec", "spin", 26_000));
    // The floors of the new rows.
    report.baseline.push(base(8, "auto", 9_000));
    report.baseline.push(base(4000, "auto", 17_000));
    report.baseline.push(base(524_288, "auto", 320_000));
    report.baseline.push(floor(4000, "auto", "split", "pipe", 40_000));
    report.baseline.push(floor(4000, "spin", "free", "shm-ring", 10_000));
    report.baseline.push(floor(524_288, "spin", "free", "shm-ring", 330_000));
    let mut lent = floor(4000, "hybrid", "free", "pipe", 18_000);
    lent.lent = true;
    lent.route = Some("ssh host peer --role server --raw-echo 4000".into());
    report.baseline.push(lent);
    let mut hybrid_wake = floor(8, "hybrid", "free", "pipe", 7_000);
    // Its rounds ran at two speeds.
    for (round, p50) in hybrid_wake.rounds.iter_mut().zip([5_000, 7_000, 11_000]) {
        round.p50_ns = p50;
    }
    report.baseline.push(hybrid_wake);
    // A floor no row uses.
    report.baseline.push(floor(64, "block", "same", "pipe", 45_000));
    // Rows that were not measured.
    let skipped = |dtype: &str, elements: u64, handler: &str, reason: &str, failed: bool| {
        let mut id = row(dtype, elements, handler, "codec", "spin", 1_000).id;
        id.bytes = elements * 8;
        Skipped { id, reason: reason.into(), failed }
    };
    report.skipped = vec![
        skipped("f64", 1, "lorenz96", "lorenz96 needs at least 4 elements, found 1", false),
        skipped("f32", 1000, "lorenz96", "lorenz96 serves f64 only", false),
        skipped("f32", 1000, "lorenz96", "lorenz96 serves f64 only", false),
        skipped(
            "f64",
            65_536,
            "echo",
            "timed out after 5s waiting for the reply\nsecond line",
            true,
        ),
    ];
    report.sync_costs = vec![
        SyncCost {
            primitive: "std::sync::Mutex".into(),
            operation: "lock + unlock, uncontended".into(),
            operations: 100_000,
            ns_per_op: 17.25,
        },
        SyncCost {
            primitive: "futex".into(),
            operation: "wake, cross-process, round trip".into(),
            operations: 20_000,
            ns_per_op: 4_321.5,
        },
    ];
    report
}

/// `sample()` with `auto` rows and client waits, its three rounds measured twice (six
/// generations of one round), every round probed — the first of six in a state where moving
/// 4 KiB across CPUs took 3.5 µs, the others in one where it took 0.9 µs: enough generations
/// in the main state to bound a repeat — and half the floors' rounds contended.
fn in_states() -> Report {
    let mut report = sample();
    report.config.waits = vec![];
    report.rows.push(auto_row("echo", "zero-copy", 27_000, 200, 780));
    report.rows.push(auto_row("echo-raw", "codec", 24_000, 300, 660));
    report.baseline.push(base(4000, "auto", 17_000));
    let floors = report.baseline.iter_mut().map(|b| &mut b.rounds);
    for rounds in floors.chain(report.rows.iter_mut().map(|r| &mut r.rounds)) {
        let again: Vec<_> =
            rounds.iter().map(|r| Round { generation: r.generation + 3, ..*r }).collect();
        rounds.extend(again);
    }
    (report.config.rounds, report.config.generations) = (6, 6);
    for (i, floor) in report.baseline.iter_mut().enumerate() {
        for round in &mut floor.rounds {
            round.preemptions = Some(if i % 2 == 0 { 9 } else { 1 });
        }
    }
    with_probes(report, |i| if i == 0 { 3_500 } else { 900 + 7 * i as u64 })
}

/// `report` with its `echo codec` rows 30 % slower, as a later run might find them.
fn slower_codec(mut report: Report) -> Report {
    for r in report.rows.iter_mut().filter(|r| r.id.path.name() == "codec") {
        r.rtt_ns.p50 = r.rtt_ns.p50 * 13 / 10;
        for round in &mut r.rounds {
            round.p50_ns = round.p50_ns * 13 / 10;
        }
        r.ratio_to_baseline = r.ratio_to_baseline.map(|x| x * 1.3);
        r.ratio_ci = r.ratio_ci.map(|[lo, hi]| [lo * 1.3, hi * 1.3]);
    }
    report
}

#[test]
fn a_mixed_report_writes_the_same_json_csv_svg_and_text() {
    let report = mixed();
    check("mixed.json", &written("mixed.json", &report, export::write_json));
    check("mixed.csv", &written("mixed.csv", &report, export::write_csv));
    check("mixed.svg", &written("mixed.svg", &report, export::write_svg));
    check("mixed.txt", &printed(&report));
}

#[test]
fn a_report_with_machine_states_writes_the_same_json_csv_and_text() {
    let report = in_states();
    check("states.json", &written("states.json", &report, export::write_json));
    check("states.csv", &written("states.csv", &report, export::write_csv));
    check("states.txt", &printed(&report));
}

#[test]
fn a_report_read_back_from_its_json_prints_the_same() {
    // What `peer compare` works on: the report as its JSON reads back.
    for (name, report) in [("mixed", mixed()), ("states", in_states())] {
        let dir = std::env::temp_dir()
            .join(format!("peerpipe-report-golden-{}-read-{name}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("run.json");
        export::write_json(&report, &path).unwrap();
        let back = export::read_json(&path).unwrap();
        fs::remove_dir_all(&dir).ok();
        check(&format!("{name}.txt"), &printed(&back));
    }
}

#[test]
fn compare_prints_the_same_in_both_modes() {
    let a = mixed();
    let mut b = slower_codec(mixed());
    // One row only in A, one only in B.
    b.rows.retain(|r| r.id.handler.name() != "my-model");
    b.rows.push(row("f64", 2000, "echo", "zero-copy", "spin", 40_000));
    check("compare-paired.txt", &compared(&a, &b, Mode::Paired));
    check("compare-absolute.txt", &compared(&a, &b, Mode::Absolute));
    let a = in_states();
    let b = slower_codec(in_states());
    check("compare-states.txt", &compared(&a, &b, Mode::Paired));
}

#[test]
fn the_soak_plan_line_is_the_same() {
    let mut config = soak::Config::new("/opt/peerpipe/bin/peer", 42);
    config.duration = Duration::from_secs(90);
    config.peers = 3;
    config.max_elements = soak::DEFAULT_MAX_ELEMENTS / 4;
    let mut out = Vec::new();
    soak::render_plan(&config, &mut out).unwrap();
    check("soak-plan.txt", &String::from_utf8(out).unwrap());
}
