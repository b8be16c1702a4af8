//! The report's files: the JSON contract (keys, nesting, names, its format version, unreadable
//! files), CSV and SVG, on hand-built reports (no processes, no clocks).

mod reports;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use peerpipe_cli::report::{Report, export, summary};
use reports::{report, row, sample, with_probes};
use serde_json::Value;

/// A fresh directory under the system temp dir, unique per process and call.
fn temp_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "peerpipe-report-files-{}-{}-{name}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir_all(&dir).expect("create a temp dir");
    dir
}

/// A file of a report's output in a fresh directory of its own (see [`temp_dir`]), which goes
/// when this is dropped.
struct Scratch {
    dir: PathBuf,
    path: PathBuf,
}

impl Scratch {
    /// `file` in a fresh directory named after it.
    fn new(file: &str) -> Scratch {
        let dir = temp_dir(file);
        Scratch { path: dir.join(file), dir }
    }

    /// Writes `report` into the file with `write` (`export::write_json`, `write_csv` or
    /// `write_svg`) and reads back what it wrote.
    fn write(
        &self,
        report: &Report,
        write: fn(&Report, &Path) -> peerpipe::error::Result<()>,
    ) -> String {
        write(report, &self.path).expect("write");
        fs::read_to_string(&self.path).expect("read back")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        fs::remove_dir_all(&self.dir).ok();
    }
}

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().expect("an object").keys().cloned().collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

// ---------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------

const PERCENTILE_KEYS: [&str; 6] = ["min", "p50", "p90", "p99", "p999", "max"];

#[test]
fn json_has_the_documented_keys_and_nesting() {
    let value = serde_json::to_value(sample()).expect("serialise");
    assert_eq!(
        keys(&value),
        set(&["peerpipe", "machine", "config", "baseline", "rows", "sync_costs", "skipped"])
    );
    assert_eq!(value["peerpipe"], "0.1.0");
    assert!(value["machine"].is_object() && value["config"].is_object());
    assert_eq!(
        keys(&value["machine"]),
        set(&[
            "cpu",
            "cores",
            "kernel",
            "pipe_max_size",
            "pipe_size_granted",
            "endian",
            "clock",
            "states"
        ])
    );
    assert_eq!(value["config"]["budget_ns"], 150_000);
    assert_eq!(
        keys(&value["config"]),
        set(&[
            "sizes",
            "dtypes",
            "paths",
            "handlers",
            "waits",
            "pins",
            "iterations",
            "duration_ns",
            "warmup_ns",
            "rounds",
            "generations",
            "order_seed",
            "server_delay_ns",
            "spawn",
            "budget_ns",
            "pipe_size",
            "transports",
            "shm_size",
            "hybrid_spin_ns",
            "load",
            "waits_share_rounds",
        ])
    );

    let baseline = value["baseline"].as_array().expect("baseline is an array");
    assert_eq!(baseline.len(), 6);
    for b in baseline {
        // The documented keys (docs/REPORT.md, JSON shape).
        assert_eq!(
            keys(b),
            set(&[
                "bytes",
                "transport",
                "wait",
                "pin",
                "lent",
                "iterations",
                "rtt_ns",
                "rounds",
                "shared_core_share"
            ]),
            "{b}"
        );
        // A floor's rounds carry no floor of their own.
        assert_eq!(
            keys(&b["rounds"][0]),
            set(&[
                "p50_ns",
                "p99_ns",
                "client_cpu",
                "server_cpu",
                "preemptions",
                "generation",
                "probe_ns",
                "state"
            ])
        );
        assert!(b["bytes"].is_u64() && b["wait"].is_string());
        assert_eq!(keys(&b["rtt_ns"]), set(&PERCENTILE_KEYS));
        assert!(PERCENTILE_KEYS.iter().all(|k| b["rtt_ns"][k].is_u64()));
    }
    assert_eq!(baseline[1]["bytes"], 4000);
    assert_eq!(baseline[1]["wait"], "block");
    assert_eq!(baseline[1]["rtt_ns"]["p50"], 60_000);

    let rows = value["rows"].as_array().expect("rows is an array");
    assert_eq!(rows.len(), 16);
    let documented = [
        "dtype",
        "elements",
        "bytes",
        "path",
        "handler",
        "wait",
        "pin",
        "iterations",
        "rtt_ns",
        "transfer_ns",
        "encode_ns",
        "decode_ns",
        "server_ns",
        "client_cpu_ns",
        "server_cpu_ns",
        "mb_per_s",
        "ratio_to_baseline",
    ];
    let mut expected = set(&documented);
    expected.extend(set(&["transport", "ratio_ci", "rounds", "shared_core_share"]));
    expected.extend(set(&["added_ns", "added_ci_ns", "main_state", "states"]));
    for r in rows {
        assert_eq!(keys(r), expected, "{r}");
        assert_eq!(
            keys(&r["rounds"][0]),
            set(&[
                "p50_ns",
                "p99_ns",
                "floor_p50_ns",
                "client_cpu",
                "server_cpu",
                "preemptions",
                "generation",
                "probe_ns",
                "state"
            ]),
            "{r}"
        );
        assert_eq!(r["ratio_ci"].as_array().map(Vec::len), Some(2), "{r}");
        for phase in ["rtt_ns", "transfer_ns", "encode_ns", "decode_ns", "server_ns"] {
            assert_eq!(keys(&r[phase]), set(&PERCENTILE_KEYS), "{phase}");
        }
        for number in ["client_cpu_ns", "server_cpu_ns", "mb_per_s", "ratio_to_baseline"] {
            assert!(r[number].is_number(), "{number}: {}", r[number]);
        }
    }
    let first = &rows[0];
    assert_eq!(first["dtype"], "f64");
    assert_eq!(first["elements"], 500);
    assert_eq!(first["bytes"], 4000);
    assert_eq!(first["path"], "zero-copy");
    assert_eq!(first["handler"], "echo-raw");
    assert_eq!(first["wait"], "block");
    assert_eq!(first["pin"], "free");
    assert_eq!(first["transport"], "pipe");
    assert_eq!(first["rtt_ns"]["p50"], 80_000);
}

#[test]
fn json_round_trips_through_a_file() {
    let file = Scratch::new("run.json");
    let original = sample();
    let text = file.write(&original, export::write_json);
    assert!(
        text.starts_with("{\n  \"format\": 1,\n  \"peerpipe\""),
        "pretty-printed: {}",
        &text[..40]
    );
    let back = export::read_json(&file.path).expect("read_json");
    // Integers (every percentile) come back exactly; serde_json's default float parser may
    // miss the last bit of a 17-digit float, so floats are compared to 1e-12.
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
    for (a, b) in original.rows.iter().zip(&back.rows) {
        assert!(close(a.client_cpu_ns, b.client_cpu_ns) && close(a.server_cpu_ns, b.server_cpu_ns));
        assert!(close(a.mb_per_s, b.mb_per_s), "{} vs {}", a.mb_per_s, b.mb_per_s);
        assert!(close(a.ratio_to_baseline.unwrap(), b.ratio_to_baseline.unwrap()));
    }
    let without_floats = |r: &Report| {
        let mut r = r.clone();
        for row in &mut r.rows {
            (row.client_cpu_ns, row.server_cpu_ns, row.mb_per_s) = (0.0, 0.0, 0.0);
        }
        r
    };
    assert_eq!(without_floats(&back), without_floats(&original));
}

/// `sample()` with every round probed: the first of its three rounds in the fast state
/// (~0.9 us), the other two in the slow one (~3.5 us), then states assigned.
fn sample_with_states() -> Report {
    with_probes(sample(), |i| if i == 0 { 900 } else { 3_500 + 10 * i as u64 })
}

#[test]
fn json_carries_the_machine_states_and_each_rows_figures_per_state() {
    let report = sample_with_states();
    let value = serde_json::to_value(&report).expect("serialise");
    let states = value["machine"]["states"].as_array().expect("machine.states");
    assert_eq!(states.len(), 2, "{value}");
    for state in states {
        assert_eq!(keys(state), set(&["id", "probe_ns", "min_ns", "max_ns", "rounds"]));
    }
    assert_eq!((&states[0]["probe_ns"], &states[1]["min_ns"]), (&900.into(), &3_510.into()));
    let row = &value["rows"][0];
    assert_eq!(row["rounds"][0]["state"], 0);
    assert_eq!(row["rounds"][1]["state"], 1);
    assert_eq!(row["rounds"][1]["probe_ns"], 3_510);
    let by_state = row["states"].as_array().expect("states");
    assert_eq!(by_state.len(), 2);
    for figures in by_state {
        assert_eq!(
            keys(figures),
            set(&["state", "rounds", "ratio", "ratio_ci", "added_ns", "added_ci_ns", "floor_ns"])
        );
    }
    // Two of three rounds ran in the slow state: the row's headline figures are its.
    assert_eq!((&row["main_state"], &by_state[1]["rounds"]), (&1.into(), &2.into()));
    assert_eq!(row["ratio_to_baseline"], by_state[1]["ratio"]);
    assert_eq!(row["added_ns"], by_state[1]["added_ns"]);
    assert_eq!(row["added_ci_ns"], by_state[1]["added_ci_ns"]);
    // Read back: the same report, figures derived from the rounds again.
    let back: Report = serde_json::from_value(value.clone()).expect("read back");
    assert_eq!(back.machine.states, report.machine.states);
    assert_eq!(back.rows[0].rounds, report.rows[0].rounds);
    assert_eq!(serde_json::to_value(&back).expect("serialise again"), value);
}

#[test]
fn a_report_without_states_writes_its_figures_over_all_rounds() {
    let value = serde_json::to_value(sample()).expect("serialise");
    let row = &value["rows"][0];
    assert_eq!(value["machine"]["states"], Value::Array(vec![]));
    assert_eq!((&row["main_state"], &row["states"]), (&Value::Null, &Value::Array(vec![])));
    // Three rounds of 76, 80 and 84 us against a 64 us floor, each its own generation: the
    // median, and the interval of a repeat, 16 us ± t(2) · s · √(2/3) with s = 4 us.
    assert_eq!(row["added_ns"], 16_000.0);
    let half = 4.303 * 4_000.0 * (2.0_f64 / 3.0).sqrt();
    let ci = row["added_ci_ns"].as_array().expect("an interval");
    let ends = [ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap()];
    assert!((ends[0] - (16_000.0 - half)).abs() < 1.0, "{ends:?}");
    assert!((ends[1] - (16_000.0 + half)).abs() < 1.0, "{ends:?}");
}

#[test]
fn json_carries_the_answer_with_its_budget_judged_at_p50_and_p99() {
    let file = Scratch::new("run.json");
    let original = sample();
    let value: Value = serde_json::from_str(&file.write(&original, export::write_json)).unwrap();
    let answers = value["answer"].as_array().expect("answer is an array");
    assert_eq!(answers.len(), 2, "one per measured size");
    for entry in answers {
        assert_eq!(
            keys(entry),
            set(&[
                "dtype",
                "elements",
                "bytes",
                "transport",
                "path",
                "handler",
                "wait",
                "pin",
                "overhead_ns",
                "budget",
                "ratio_resolved"
            ]),
            "{entry}"
        );
    }
    // f64 x 500: echo zero-copy at spin, 25 us - 1.25 us server at p50, 50 us - 1.25 us at p99.
    let first = &answers[0];
    assert_eq!((&first["dtype"], &first["elements"]), (&"f64".into(), &500.into()));
    assert_eq!(
        (&first["handler"], &first["path"], &first["wait"]),
        (&"echo".into(), &"zero-copy".into(), &"spin".into())
    );
    assert_eq!(first["overhead_ns"], serde_json::json!({"p50": 23_750, "p99": 48_750}));
    assert_eq!(
        first["budget"],
        serde_json::json!({"budget_ns": 150_000, "p50": {"met": true, "margin_ns": 126_250},
            "p99": {"met": true, "margin_ns": 101_250}})
    );
    assert_eq!(first["ratio_resolved"], true);
    // f64 x 65536 misses at both: 475 us and 975 us.
    assert_eq!(
        answers[1]["budget"]["p50"],
        serde_json::json!({"met": false, "margin_ns": 325_000})
    );
    assert_eq!(
        answers[1]["budget"]["p99"],
        serde_json::json!({"met": false, "margin_ns": 825_000})
    );
    // The entries read back as what the answer printed; the report reads as before.
    let records: Vec<summary::AnswerRecord> =
        serde_json::from_value(value["answer"].clone()).expect("answer entries read");
    assert_eq!(records, summary::records(&original));
    assert_eq!(export::read_json(&file.path).expect("read_json").rows.len(), original.rows.len());
    // No budget: `null`.
    let mut unbudgeted = original.clone();
    unbudgeted.config.budget_ns = 0;
    let value: Value = serde_json::from_str(&file.write(&unbudgeted, export::write_json)).unwrap();
    assert!(value["answer"][0]["budget"].is_null(), "{}", value["answer"][0]);
}

#[test]
fn names_are_written_as_the_report_always_wrote_them_and_read_back_typed() {
    let mut original = sample();
    original.rows[0].id.wait = "hybrid:20us".parse().unwrap();
    original.rows[0].id.handler = peerpipe_cli::report::key::Handler::named("my-model");
    original.baseline[0].transport = "shm-ring".parse().unwrap();
    let value = serde_json::to_value(&original).expect("serialise");
    let row = &value["rows"][0];
    let first = &original.rows[0];
    assert_eq!(row["dtype"], first.id.dtype.name());
    assert_eq!(row["path"], first.id.path.name());
    assert_eq!(row["pin"], first.id.pin.name());
    assert_eq!(row["transport"], "pipe");
    assert_eq!((&row["wait"], &row["handler"]), (&"hybrid:20us".into(), &"my-model".into()));
    assert_eq!(value["baseline"][0]["transport"], "shm-ring");
    let back: Report = serde_json::from_value(value).expect("read back");
    assert_eq!(back.rows[0], original.rows[0]);
    assert_eq!(back.baseline[0], original.baseline[0]);
}

#[test]
fn a_report_without_the_format_or_of_another_is_refused_naming_the_formats() {
    // What an early report held: no format, no transport on floors (they were pipes), no
    // rounds, no intervals, no sync costs or skipped rows, a shorter config; one from before
    // per-round states carried a probe on its floors (`cross_core`). Such files, and any of
    // another format, are refused with what was found and what is read.
    let file = Scratch::new("old.json");
    let text = file.write(&sample(), export::write_json);
    assert!(text.starts_with(&format!("{{\n  \"format\": {},\n", export::FORMAT)), "{text}");
    let written: Value = serde_json::from_str(&text).unwrap();
    let mut old = written.clone();
    old.as_object_mut().unwrap().remove("format");
    for floor in old["baseline"].as_array_mut().unwrap() {
        let floor = floor.as_object_mut().unwrap();
        for key in ["transport", "lent", "rounds", "shared_core_share", "route"] {
            floor.remove(key);
        }
        floor.insert("cross_core".into(), serde_json::json!({"line_ns": 120, "block_ns": 900}));
    }
    let top = old.as_object_mut().unwrap();
    top.remove("sync_costs");
    top.remove("skipped");
    let mut newer = written.clone();
    newer["format"] = Value::from(export::FORMAT + 1);
    let mut named = written;
    named["format"] = Value::from("one");
    for (document, found) in [
        (old, "has no `format`".to_owned()),
        (newer, format!("is a report of format {}", export::FORMAT + 1)),
        (named, "is a report of format \"one\"".to_owned()),
    ] {
        fs::write(&file.path, serde_json::to_string_pretty(&document).unwrap()).unwrap();
        let err = export::read_json(&file.path).unwrap_err().to_string();
        assert!(err.contains(&format!("old.json {found}")), "{err}");
        assert!(err.contains(&format!("this peer reads format {} only", export::FORMAT)), "{err}");
    }
}

#[test]
fn unmeasured_cpu_is_null_in_json_and_nan_when_read_back() {
    let file = Scratch::new("run.json");
    let mut original = sample();
    original.rows[0].server_cpu_ns = f64::NAN;
    original.rows[3].client_cpu_ns = f64::NAN;
    original.rows[5].ratio_to_baseline = None;
    let value: Value = serde_json::from_str(&file.write(&original, export::write_json)).unwrap();
    assert!(value["rows"][0]["server_cpu_ns"].is_null());
    assert!(value["rows"][5]["ratio_to_baseline"].is_null());

    let back = export::read_json(&file.path).expect("nulls read back");
    assert!(back.rows[0].server_cpu_ns.is_nan());
    assert!(back.rows[3].client_cpu_ns.is_nan());
    assert_eq!(back.rows[0].client_cpu_ns, original.rows[0].client_cpu_ns);
    assert_eq!(back.rows[5].ratio_to_baseline, None);
}

#[test]
fn reading_a_bad_report_names_the_file_and_the_problem() {
    let dir = temp_dir("bad");
    let missing = dir.join("missing.json");
    let err = export::read_json(&missing).unwrap_err().to_string();
    assert!(err.contains("missing.json") && err.contains("No such file"), "{err}");

    let not_json = dir.join("notes.json");
    fs::write(&not_json, "latency was fine\n").unwrap();
    let err = export::read_json(&not_json).unwrap_err().to_string();
    assert!(err.contains("notes.json") && err.contains("line 1"), "{err}");

    let not_a_report = dir.join("other.json");
    fs::write(&not_a_report, "{\"format\": 1, \"peerpipe\": \"0.1.0\", \"rows\": []}").unwrap();
    let err = export::read_json(&not_a_report).unwrap_err().to_string();
    assert!(err.contains("other.json") && err.contains("missing field `machine`"), "{err}");

    let mut value = serde_json::to_value(sample()).unwrap();
    value["format"] = Value::from(export::FORMAT);
    value["rows"][2]["elements"] = Value::from("many");
    let mistyped = dir.join("mistyped.json");
    fs::write(&mistyped, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    let err = export::read_json(&mistyped).unwrap_err().to_string();
    assert!(err.contains("mistyped.json") && err.contains("\"many\""), "{err}");
    fs::remove_dir_all(dir).ok();
}

// ---------------------------------------------------------------------------------------------
// CSV and SVG
// ---------------------------------------------------------------------------------------------

#[test]
fn csv_has_a_flat_header_and_one_line_per_baseline_and_row() {
    let file = Scratch::new("run.csv");
    let mut report = sample();
    report.rows[1].server_cpu_ns = f64::NAN;
    let text = file.write(&report, export::write_csv);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + report.baseline.len() + report.rows.len());

    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(lines[0], export::csv_header());
    for column in [
        "dtype",
        "elements",
        "bytes",
        "path",
        "handler",
        "wait",
        "pin",
        "iterations",
        "rtt_p50_ns",
        "rtt_p999_ns",
        "transfer_p50_ns",
        "encode_p50_ns",
        "decode_p50_ns",
        "server_max_ns",
        "client_cpu_ns",
        "server_cpu_ns",
        "mb_per_s",
        "ratio_to_baseline",
    ] {
        assert!(header.contains(&column), "{column} missing from {header:?}");
    }
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in &lines[1..] {
        assert_eq!(line.split(',').count(), header.len(), "{line}");
    }
    let fields = |n: usize| lines[n].split(',').collect::<Vec<_>>();
    // Baselines first, as handler `baseline`.
    assert_eq!(fields(1)[column("handler")], "baseline");
    assert_eq!(fields(2)[column("bytes")], "4000");
    assert_eq!(fields(2)[column("rtt_p50_ns")], "60000");
    // Then the rows, in report order; NaN is an empty field.
    let second_row = fields(1 + report.baseline.len() + 1);
    assert_eq!(second_row[column("elements")], "65536");
    assert_eq!(second_row[column("rtt_p50_ns")], report.rows[1].rtt_ns.p50.to_string());
    assert_eq!(second_row[column("server_cpu_ns")], "");
    assert_eq!(second_row[column("ratio_to_baseline")], "1.25");
}

#[test]
fn csv_carries_each_rows_states_and_each_rounds_probe() {
    let file = Scratch::new("run.csv");
    let report = sample_with_states();
    let text = file.write(&report, export::write_csv);
    let lines: Vec<&str> = text.lines().collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let floor: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(floor[column("round_states")], "0 1 1");
    assert_eq!(floor[column("round_probes_ns")], "900 3510 3520");
    assert_eq!(floor[column("main_state")], "");
    let row: Vec<&str> = lines[1 + report.baseline.len()].split(',').collect();
    let figures = peerpipe_cli::report::states::figures(&report.rows[0].rounds);
    assert_eq!(row[column("main_state")], "1");
    let ratio = |f: &peerpipe_cli::report::states::StateFigures| f.ratio.unwrap();
    let expected = format!("0:{} 1:{}", ratio(&figures[0]), ratio(&figures[1]));
    assert_eq!(row[column("state_ratios")], expected);
    assert_eq!(row[column("added_ns")], figures[1].added_ns.unwrap().to_string());
    assert_eq!(row[column("round_states")], "0 1 1");
    // Without states, the added time is over all rounds and the state columns are empty.
    let text = file.write(&sample(), export::write_csv);
    let row: Vec<&str> =
        text.lines().nth(1 + sample().baseline.len()).unwrap().split(',').collect();
    assert_eq!((row[column("added_ns")], row[column("main_state")]), ("16000", ""));
    assert_eq!((row[column("state_ratios")], row[column("round_states")]), ("", ""));
}

#[test]
fn svg_is_a_whole_document_naming_every_series() {
    let file = Scratch::new("run.svg");
    let mut report = sample();
    report.rows.push(row("f32", 500, "echo", "codec", "spin", 30_000));
    let svg = file.write(&report, export::write_svg);
    assert!(svg.starts_with("<svg"), "{}", &svg[..60]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    for label in [
        "baseline: raw read/write",
        "echo-raw zero-copy f64",
        "echo-raw codec f64",
        "echo zero-copy f64",
        "echo codec f64",
        "echo codec f32",
        "p99",
        "wait block",
        "wait spin",
        "payload bytes per message",
        "round trip",
    ] {
        assert!(svg.contains(label), "{label} missing from the SVG");
    }
}

#[test]
fn svg_of_an_empty_report_is_still_a_document() {
    let svg = Scratch::new("empty.svg").write(&report(vec![], vec![]), export::write_svg);
    assert!(svg.starts_with("<svg") && svg.contains("no rows"));
}

#[test]
fn writing_into_a_missing_directory_names_the_file() {
    let path = std::env::temp_dir().join("peerpipe-no-such-dir-for-sure/run.csv");
    let err = export::write_csv(&sample(), &path).unwrap_err().to_string();
    assert!(err.contains("run.csv"), "{err}");
}
