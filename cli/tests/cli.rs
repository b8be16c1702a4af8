//! The `peer` binary as users run it: clear errors for bad flags, and real report runs writing
//! JSON, CSV and SVG (`peer compare` is `compare.rs`'s).

#[path = "../../tests/common/mod.rs"]
mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Watchdog, peer_exe, secs};
use peerpipe_cli::report::{Row, budget, export, format, states};

fn temp_dir(name: &str) -> PathBuf {
    common::temp_dir("peerpipe-cli", name)
}

/// The flags of a run of one f64 × 8 `echo` row over the codec, blocking: the smallest real
/// report.
const ONE_ECHO_ROW: [&str; 10] =
    ["--sizes", "8", "--dtype", "f64", "--path", "codec", "--handler", "echo", "--wait", "block"];

fn peer(args: &[&str]) -> Output {
    common::run_peer(args)
}

fn stdout(output: &Output) -> String {
    common::text(&output.stdout)
}

fn stderr(output: &Output) -> String {
    common::text(&output.stderr)
}

#[test]
fn server_delay_is_server_time_and_recorded_but_refused_with_spawn() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = temp_dir("server-delay");
    let json = dir.join("delay.json");
    let out = peer(
        &[
            &ONE_ECHO_ROW[..],
            &["--duration", "20ms", "--warmup", "1ms", "--rounds", "4", "--server-delay", "300us"],
            &["--json", json.to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = export::read_json(&json).unwrap();
    assert_eq!(report.config.server_delay_ns, 300_000);
    assert_eq!(report.config.rounds, 4);
    let row = &report.rows[0];
    assert_eq!(row.rounds.len(), 4);
    // The busy-wait is part of the server time the replies report, and of the round trip.
    assert!(row.server_ns.min >= 300_000, "{:?}", row.server_ns);
    assert!(row.rtt_ns.min >= 300_000, "{:?}", row.rtt_ns);
    // The floor has no delay: it stays far below.
    let floor = report.baseline.iter().find(|b| b.bytes == 64).unwrap();
    assert!(floor.rtt_ns.p50 < 300_000, "{:?}", floor.rtt_ns);

    let out = peer(&["--spawn", "peer --role server", "--server-delay", "1us"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("pass --server-delay to the server command"), "{}", stderr(&out));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_real_run_prints_one_budget_judgement_in_the_summary_and_the_json() {
    let _watchdog = Watchdog::new(secs(180));
    let dir = temp_dir("budget");
    let json = dir.join("budget.json");
    // Budgets far from any real overhead, so nothing here depends on the machine's speed: no
    // round trip through a pipe costs under 1 us beyond its server's time, none 1 s.
    for (budget, met) in [("1us", false), ("1s", true)] {
        let out = peer(
            &[
                &ONE_ECHO_ROW[..],
                &["--duration", "5ms", "--warmup", "1ms", "--rounds", "2", "--generations", "1"],
                &["--server-delay", "50us", "--budget", budget, "--json", json.to_str().unwrap()],
            ]
            .concat(),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        let report = export::read_json(&json).expect("the JSON reads back");
        let row = &report.rows[0];
        // The server's delay is server time: the budgeted overhead leaves it out.
        assert!(row.server_ns.p50 >= 50_000, "{:?}", row.server_ns);
        let overhead = budget::Overhead::of(row);
        assert_eq!(overhead.p50_ns, row.rtt_ns.p50 - row.server_ns.p50);
        let judged = budget::judge(overhead, report.config.budget_ns).expect("a budget");
        assert_eq!(judged.met(), met, "{budget}: {judged:?}\n{text}");
        let words = judged.describe();
        let (p50, p99) = (format::ns(overhead.p50_ns), format::ns(overhead.p99_ns));
        // The summary's line gives the figures and the words, once.
        let line = text.lines().find(|l| l.starts_with("  f64 x 8 ")).expect("the answer line");
        let figures: Vec<&str> = line.split_whitespace().skip(3).take(2).collect();
        assert_eq!(figures, [p50.as_str(), p99.as_str()], "{line}");
        assert!(line.contains(&format!(" {words} ")), "{words}: {line}");
        assert_eq!(text.matches(words.as_str()).count(), 1, "{words}: {text}");
        let round_trip = format::ns(row.rtt_ns.p50);
        assert!(text.contains(&format!("your case's round trip p50 {round_trip}")), "{text}");
        if met {
            assert_eq!(words, "met at p50 and p99");
            assert!(text.contains("every size meets it (1 of 1)."), "{text}");
        } else {
            assert!(words.starts_with("MISSED at p50 by "), "{words}");
            assert!(
                text.contains("met by 0 of 1 sizes; missed by:\n  f64 x 8 (at p50)."),
                "{text}"
            );
        }
        // The JSON carries the same judgement, at p50 and at p99.
        let value: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
        let answer = &value["answer"][0];
        assert_eq!(answer["overhead_ns"]["p50"], overhead.p50_ns, "{answer}");
        assert_eq!(answer["overhead_ns"]["p99"], overhead.p99_ns, "{answer}");
        assert_eq!(answer["budget"]["p50"]["met"], met, "{answer}");
        assert_eq!(answer["budget"]["p99"]["met"], met, "{answer}");
    }
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_spawn_command_whose_program_cannot_start_exits_2_naming_the_program() {
    let _watchdog = Watchdog::new(secs(120));
    let program = "definitely-not-a-program-xyz";
    let line = format!("{program} --role server");
    let out = peer(&["--spawn", &line, "--quick", "--sizes", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}{}", stdout(&out), stderr(&out));
    let text = stderr(&out);
    assert!(text.contains(&format!("cannot start \"{program}\"")), "{text}");
}

#[test]
fn bad_flags_exit_2_with_a_clear_message() {
    let cases: [(&[&str], &[&str]); 11] = [
        (&["--dtype", "f16"], &["--dtype", "f16", "expected f64, f32 or f64-as-f32"]),
        (&["--iters", "0"], &["--iters", "0 is not in 1.."]),
        (&["--duration", "fast"], &["--duration", "missing number", "expected e.g. 500us"]),
        (&["--duration", "0ms"], &["--duration", "greater than zero"]),
        (&["--wait", "sleepy"], &["--wait", "sleepy", "block, spin, hybrid"]),
        (&["--sizes", "0"], &["--sizes", "expected a positive element count"]),
        (&["--frobnicate"], &["unexpected argument '--frobnicate'"]),
        (&["compare", "a.json", "b.json", "--rel", "lots"], &["--rel", "expected a percentage"]),
        (&["--rounds", "0"], &["--rounds", "0 is not in 1..=1000"]),
        (&["--load", "5000"], &["--load", "5000 is not in 0..=1024"]),
        (&["compare", "a.json", "b.json", "--mode", "loose"], &["--mode", "paired, absolute"]),
    ];
    for (args, expected) in cases {
        let out = peer(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        for part in expected {
            assert!(err.contains(part), "{args:?}: {part:?} missing from {err}");
        }
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

#[test]
fn a_tiny_run_prints_the_summary_and_table_and_writes_three_valid_files() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = temp_dir("tiny-run");
    let (json, csv, svg) = (dir.join("run.json"), dir.join("run.csv"), dir.join("run.svg"));
    let out = peer(&[
        "--sizes",
        "8",
        "--dtype",
        "f64",
        "--path",
        "zero-copy",
        "--handler",
        "echo",
        "--wait",
        "block",
        "--duration",
        "5ms",
        "--warmup",
        "1ms",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // No --pin: split on a machine with two cores or more, else free.
    let pin = peerpipe_cli::report::placement::default_placement();
    assert!(text.contains(&format!("wait block, pin {pin}")), "{text}");
    assert!(text.contains("f64 x 8 (64 B)"), "{text}");
    assert!(text.contains("baseline raw r/w"), "{text}");
    assert!(text.contains("echo     zero-copy"), "{text}");
    assert!(text.contains("where the p50 round trip goes"), "{text}");
    assert!(text.contains("fastest: echo zero-copy, block"), "{text}");
    assert!(text.contains("budget 150us on the overhead at p50 and p99: "), "{text}");

    let report = export::read_json(&json).expect("the JSON reads back as a report");
    assert_eq!(report.rows.len(), 1);
    let row = &report.rows[0];
    assert_eq!((row.id.dtype.name(), row.id.elements, row.id.bytes), ("f64", 8, 64));
    assert_eq!(
        (row.id.path.name(), row.id.handler.name(), row.id.wait.to_string().as_str()),
        ("zero-copy", "echo", "block")
    );
    assert!(row.iterations >= 1 && row.rtt_ns.p50 > 0);
    // Paired by default: 40 rounds, each with the floor's p50 of the same round.
    assert_eq!(report.config.rounds, peerpipe_cli::report::measure::DEFAULT_ROUNDS);
    assert_eq!(row.rounds.len(), 40);
    assert!(row.rounds.iter().all(|r| r.floor_p50_ns.is_some_and(|f| f > 0)));
    let [lo, hi] = row.ratio_ci.expect("a 95% interval");
    let ratio = row.ratio_to_baseline.expect("a paired ratio");
    assert!(lo <= ratio && ratio <= hi, "{lo} <= {ratio} <= {hi}");
    assert!(report.baseline.iter().any(|b| b.bytes == 64 && b.wait.to_string() == "block"));
    assert_eq!(report.config.sizes, vec![8]);

    let csv_text = fs::read_to_string(&csv).unwrap();
    let lines: Vec<&str> = csv_text.lines().collect();
    assert_eq!(lines[0], export::csv_header());
    assert_eq!(lines.len(), 1 + report.baseline.len() + report.rows.len());

    let svg_text = fs::read_to_string(&svg).unwrap();
    assert!(svg_text.starts_with("<svg") && svg_text.trim_end().ends_with("</svg>"));
    assert!(svg_text.contains("echo zero-copy") && svg_text.contains("wait block"));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_run_with_load_says_so_records_it_and_measures_the_default_wait_unpinned() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = temp_dir("load");
    let json = dir.join("run.json");
    // No --pin: block at the default placement, auto unpinned (as a program gets it).
    let output = peer(&[
        "--sizes",
        "8",
        "--dtype",
        "f64",
        "--path",
        "codec",
        "--handler",
        "echo",
        "--wait",
        "block,auto",
        "--load",
        "1",
        "--duration",
        "4ms",
        "--rounds",
        "2",
        "--generations",
        "1",
        "--warmup",
        "1ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("load: 1 busy thread beside the client and servers"), "{text}");
    assert!(text.contains("beside 1 busy threads"), "{text}");
    let report = export::read_json(&json).unwrap();
    assert_eq!(report.config.load, 1);
    assert!(
        report.rows.iter().any(|r| r.id.wait.to_string() == "auto" && r.id.pin.name() == "free"),
        "{:?}",
        report.rows
    );
    assert!(
        report.rows.iter().all(|r| r.id.wait.to_string() != "auto" || r.id.pin.name() == "free")
    );
    let line = text.lines().find(|l| l.starts_with("  f64 x 8 ")).expect("the answer's line");
    assert!(line.trim_end().ends_with("echo codec, auto"), "{text}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn rounds_are_probed_with_every_placement_and_groups_no_longer() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("skipping: the probe needs two CPUs");
        return;
    }
    let dir = temp_dir("probe-placements");
    let json = dir.join("run.json");
    let output = peer(
        &[
            &ONE_ECHO_ROW[..],
            &["--pin", "free,same", "--duration", "4ms", "--rounds", "2", "--generations", "1"],
            &["--warmup", "1ms", "--json", json.to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report = export::read_json(&json).unwrap();
    // The rounds' probes are the one record of the machine's state: no group is probed apart.
    assert!(!fs::read_to_string(&json).unwrap().contains("cross_core"));
    let floors = |pin: &'static str| report.baseline.iter().filter(move |b| b.pin.name() == pin);
    // Every round is probed whatever the placement (the probe measures the machine, not the
    // group), and a row's round carries its floor's figure.
    for pin in ["free", "same"] {
        let probed = floors(pin).flat_map(|b| &b.rounds).filter(|r| r.probe_ns.is_some());
        assert!(probed.count() > 0, "no {pin} round was probed");
    }
    for row in &report.rows {
        let floor = report.baseline_for(row).expect("the row's floor");
        let figures = |rounds: &[peerpipe_cli::report::Round]| -> Vec<Option<u64>> {
            rounds.iter().map(|r| r.probe_ns).collect()
        };
        assert_eq!(figures(&row.rounds), figures(&floor.rounds));
    }
    // The states found in them tag every round, and each row has figures in its states.
    assert!(!report.machine.states.is_empty(), "no state found");
    // (A list none of whose probes was answered in time — a busy machine — has no state.)
    let floors = report.baseline.iter().map(|b| &b.rounds);
    let lists = floors.chain(report.rows.iter().map(|r| &r.rounds));
    for rounds in lists.filter(|rounds| rounds.iter().any(|r| r.probe_ns.is_some())) {
        assert!(rounds.iter().all(|r| r.state.is_some()), "{rounds:?}");
    }
    let probed = |row: &&Row| row.rounds.iter().any(|r| r.probe_ns.is_some());
    assert!(report.rows.iter().filter(probed).all(|row| !states::figures(&row.rounds).is_empty()));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn the_waits_of_one_placement_are_measured_in_the_same_rounds() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("skipping: the probe that tells rounds apart needs two CPUs");
        return;
    }
    let _watchdog = Watchdog::new(secs(150));
    let dir = temp_dir("waits-share-rounds");
    let json = dir.join("run.json");
    let run = || {
        let output = peer(
            &[
                &["--sizes", "500", "--dtype", "f64", "--path", "codec", "--handler", "echo"][..],
                &["--wait", "block,spin,auto", "--pin", "free", "--duration", "10ms"],
                &["--rounds", "5", "--generations", "1", "--warmup", "1ms"],
                &["--json", json.to_str().unwrap()],
            ]
            .concat(),
        );
        assert!(output.status.success(), "{}", stderr(&output));
        (output, export::read_json(&json).unwrap())
    };
    // A round's probe needs both of its threads running at once; where other work holds the
    // CPUs (a build beside the tests) every probe of a short run can miss, so the run is made
    // again, for up to a minute, until one got through.
    let started = std::time::Instant::now();
    let (output, report) = loop {
        let (output, report) = run();
        let probed = report.rows.iter().flat_map(|r| &r.rounds).any(|r| r.probe_ns.is_some());
        if probed || started.elapsed() > secs(60) {
            break (output, report);
        }
    };
    assert!(report.config.waits_share_rounds);
    assert_eq!(report.rows.len(), 3, "{:?}", report.rows);
    // The answer (auto, unpinned) is compared with the other two waits round by round, with
    // the CPU each spent.
    let text = stdout(&output);
    let line = text.lines().find(|l| l.starts_with("waits, f64 x 500 unpinned")).expect(&text);
    // Over the rounds of the run's main state: all five, or fewer when the machine changed
    // state during the run.
    let rounds = line.split("round by round over ").nth(1).and_then(|rest| rest.split(' ').next());
    let rounds: usize = rounds.and_then(|n| n.parse().ok()).expect(line);
    assert!((1..=5).contains(&rounds), "{line}");
    assert!(line.contains(": auto / block "), "{line}");
    assert!(line.contains(", / spin "), "{line}");
    assert!(line.contains("cpu per round trip (client + server): auto "), "{line}");
    // Each round is probed once, at its start, for every member of its group: the floors and
    // rows of all three waits carry the same probe in each round, so a comparison of two
    // waits is one of bursts taken moments apart, in one state of the machine.
    let probes = |rounds: &[peerpipe_cli::report::Round]| -> Vec<Option<u64>> {
        rounds.iter().map(|r| r.probe_ns).collect()
    };
    let at_4000 = report.baseline.iter().filter(|b| b.bytes == 4000);
    let lists: Vec<Vec<Option<u64>>> = at_4000
        .map(|b| probes(&b.rounds))
        .chain(report.rows.iter().map(|r| probes(&r.rounds)))
        .collect();
    assert_eq!(lists.len(), 6, "three floors and three rows");
    assert!(lists[0].iter().any(Option::is_some), "no round was probed: {lists:?}");
    assert!(lists.iter().all(|list| list == &lists[0]), "{lists:?}");
    // And each row is paired with the floor at its own wait.
    for row in &report.rows {
        let floor = report.baseline_for(row).expect("the row's floor");
        assert_eq!(floor.wait, row.id.wait);
        let floors: Vec<Option<u64>> = floor.rounds.iter().map(|r| Some(r.p50_ns)).collect();
        let paired: Vec<Option<u64>> = row.rounds.iter().map(|r| r.floor_p50_ns).collect();
        assert_eq!(paired, floors, "{:?}", row.id.wait);
    }
    // What the client's waits did is counted under auto only, over the timed round trips,
    // and printed under the answer.
    for row in &report.rows {
        let Some(waits) = row.client_waits else {
            let auto = matches!(row.id.wait, peerpipe::transport::Wait::Auto { .. });
            assert!(!auto, "auto's row counts its waits");
            continue;
        };
        let auto = matches!(row.id.wait, peerpipe::transport::Wait::Auto { .. });
        assert!(auto, "only auto counts: {:?}", row.id.wait);
        // A reply comes as one atomic pipe write, so a round trip waits once at most; and of
        // thousands, some reply is not there at the first poll.
        let round_trips = row.iterations;
        assert!((1..=round_trips).contains(&waits.waits()), "{waits:?} of {round_trips}");
        assert!(
            waits.counts.hits <= waits.counts.spun && waits.counts.probes <= waits.counts.spun,
            "{waits:?}"
        );
    }
    let line =
        text.lines().find(|l| l.starts_with("client waits, f64 x 500 unpinned: ")).expect(&text);
    assert!(line.contains(" round trips waited for the reply: "), "{line}");
    fs::remove_dir_all(dir).ok();
}

#[test]
fn split_placement_runs_and_labels_its_rows() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        println!("skipping: split placement needs two CPUs");
        return;
    }
    let dir = std::env::temp_dir().join(format!("peerpipe-cli-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("split.json");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_peer"))
        .args(["--sizes", "8", "--dtype", "f64", "--path", "codec,zero-copy"])
        .args(["--handler", "echo-raw,echo"])
        .args([
            "--wait",
            "spin",
            "--pin",
            "split",
            "--duration",
            "5ms",
            "--warmup",
            "1ms",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report = peerpipe_cli::report::export::read_json(&json).unwrap();
    assert!(!report.rows.is_empty());
    assert!(report.rows.iter().all(|row| row.id.pin.name() == "split"));
    assert!(report.baseline.iter().all(|b| b.pin.name() == "split"));
    // Four rows and their floor took turns with three spinning servers, the idle ones
    // stopped: every server came back to answer BYE (the run would fail otherwise), and every
    // round records the client on the first allowed CPU and its server on the second.
    assert_eq!(report.rows.len(), 4);
    let rounds = report.rows.iter().flat_map(|r| &r.rounds);
    let cpus: std::collections::BTreeSet<(Option<u32>, Option<u32>)> =
        rounds.map(|r| (r.client_cpu, r.server_cpu)).collect();
    assert_eq!(cpus.len(), 1, "one placement throughout: {cpus:?}");
    let (client, server) = cpus.into_iter().next().unwrap();
    assert!(client.is_some() && server.is_some() && client != server, "{client:?} {server:?}");
    assert!(report.rows.iter().all(|r| r.shared_core_share == Some(0.0)));
    // The rounds record the machine's state (a round is unknown only when the probe's partner
    // thread got no CPU within its deadline), and the run's states are found in them.
    let probes = report.baseline.iter().flat_map(|b| &b.rounds).filter_map(|r| r.probe_ns);
    assert!(probes.clone().count() > 0, "no round was probed");
    assert!(probes.clone().all(|p| p > 0), "{:?}", probes.collect::<Vec<_>>());
    assert!(!report.machine.states.is_empty(), "no state found");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_over_every_transport_labels_its_rows_names_the_crossover_and_prints_sync_costs() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = temp_dir("transports");
    let json = dir.join("run.json");
    let out = peer(&[
        "--transport",
        "pipe,shm-sem,shm-ring",
        "--sizes",
        "8,500",
        "--dtype",
        "f64",
        "--path",
        "zero-copy",
        "--handler",
        "echo-raw",
        "--wait",
        "hybrid",
        "--duration",
        "5ms",
        "--warmup",
        "1ms",
        "--sync-ops",
        "2000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for label in ["echo-raw zero-copy      ", "echo-raw zero-copy sem", "echo-raw zero-copy ring"] {
        assert!(text.contains(label), "{label:?} missing:\n{text}");
    }
    assert!(text.contains("shared memory against pipes"), "{text}");
    for crossing in ["shm-sem hybrid (f64 echo-raw zero-copy): ", "shm-ring hybrid (f64"] {
        assert!(text.contains(crossing), "{crossing:?} missing:\n{text}");
    }
    assert!(text.contains("Synchronisation costs"), "{text}");
    assert!(text.contains("cross-process wake-up (shm-ring, block)"), "{text}");
    // The table stays within 120 columns with the longer shared-memory labels.
    for line in text.lines().filter(|l| l.starts_with("  echo") || l.starts_with("  baseline")) {
        assert!(line.chars().count() <= 120, "{} columns: {line}", line.chars().count());
    }

    let report = export::read_json(&json).expect("the JSON reads back");
    let mut transports: Vec<&str> = report.rows.iter().map(|r| r.id.transport.name()).collect();
    transports.sort_unstable();
    transports.dedup();
    assert_eq!(transports, ["pipe", "shm-ring", "shm-sem"]);
    assert_eq!(report.rows.len(), 6, "3 transports x 2 sizes");
    assert_eq!(report.config.transports, ["pipe", "shm-sem", "shm-ring"]);
    assert_eq!(report.sync_costs.len(), 8);
    assert!(report.sync_costs.iter().all(|c| c.ns_per_op > 0.0 && c.operations >= 2000));
    fs::remove_dir_all(dir).ok();
}

#[test]
fn sync_costs_alone_prints_only_the_table() {
    let _watchdog = Watchdog::new(secs(60));
    let out = peer(&["--sync-costs", "--sync-ops", "2000"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Synchronisation costs (mean per operation):", "{text}");
    assert_eq!(lines.len(), 9, "a heading and 8 entries:\n{text}");
    assert!(lines.iter().all(|l| !l.contains("baseline")), "{text}");
}

#[test]
fn the_report_names_its_clock_and_an_unknown_peerpipe_clock_is_refused() {
    let _watchdog = Watchdog::new(secs(120));
    let dir = temp_dir("clock");
    let json = dir.join("monotonic.json");
    let run = |clock: &str, json: &Path| {
        Command::new(peer_exe())
            .env("PEERPIPE_CLOCK", clock)
            .args(ONE_ECHO_ROW)
            .args(["--duration", "10ms", "--warmup", "1ms", "--rounds", "2"])
            .args(["--json", json.to_str().unwrap()])
            .output()
            .expect("run peer")
    };
    let out = run("monotonic", &json);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("clock: monotonic (PEERPIPE_CLOCK=monotonic)"),
        "{}",
        stdout(&out)
    );
    let report = export::read_json(&json).unwrap();
    assert_eq!(report.machine.clock, "monotonic (PEERPIPE_CLOCK=monotonic)");

    let refused = dir.join("refused.json");
    let out = run("fast", &refused);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out).trim_end(),
        "peer: error: PEERPIPE_CLOCK: expected auto or monotonic (or unset), found \"fast\""
    );
    assert!(stdout(&out).is_empty() && !refused.exists(), "nothing measured, nothing written");
    fs::remove_dir_all(dir).ok();
}
