//! One budget, judged at the tail, and ratios said unresolved when they are: the summary, the
//! table and the JSON answer agree, on hand-built reports (no processes, no clocks).

mod reports;

use peerpipe_cli::report::{Report, Row, format, render, summary};
use reports::{report, row, sample};

fn text_of(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("UTF-8 output")
}

/// What the summary's line says of one size: its label, the overhead p50 and p99 of the
/// answer's row, and the budget's judgement in words.
#[derive(Debug)]
struct SummaryOfSize {
    size: String,
    p50: String,
    p99: String,
    judged: String,
}

/// Reads every size's line of the summary (`  f64 x 500   25.6us  52.6us  ...`), taking the
/// judgement as it is written there (`met at ...` or `MISSED at ...`, up to the row: a
/// handler, a path and a wait, over pipes).
fn summary_by_size(text: &str, sizes: &[&str]) -> Vec<SummaryOfSize> {
    sizes
        .iter()
        .map(|&size| {
            let line = answer_line(text, size);
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = line
                .find("met at ")
                .or_else(|| line.find("MISSED at "))
                .unwrap_or_else(|| panic!("no judgement in {line}"));
            let rest: Vec<&str> = line[at..].split_whitespace().collect();
            SummaryOfSize {
                size: size.to_owned(),
                p50: words[0].to_owned(),
                p99: words[1].to_owned(),
                judged: rest[..rest.len() - 3].join(" "),
            }
        })
        .collect()
}

/// The answer's line for `size`, after the label and its padding: overhead, p99, then the rest.
fn answer_line<'a>(text: &'a str, size: &str) -> &'a str {
    text.lines()
        .find_map(|l| {
            Some(l.strip_prefix("  ")?.strip_prefix(size)?.strip_prefix(' ')?.trim_start())
        })
        .unwrap_or_else(|| panic!("no answer line for {size}:\n{text}"))
}

/// f64 × 500 meets 150 µs at both percentiles; f32 × 65536 meets it at p50 and misses it at
/// p99 (the newcomer's case: 5.56 ms); f64 × 65536 misses it at p50.
fn three_outcomes() -> Report {
    let mut rows = Vec::new();
    for wait in ["auto", "block"] {
        for handler in ["echo-raw", "echo"] {
            rows.push(row("f64", 500, handler, "zero-copy", wait, 20_000));
            rows.push(row("f64", 65_536, handler, "zero-copy", wait, 204_000));
            let mut tail = row("f32", 65_536, handler, "zero-copy", wait, 100_000);
            tail.rtt_ns.p99 = 5_565_000; // server p50 is 5 us: overhead p99 5.56 ms
            rows.push(tail);
        }
    }
    let mut report = report(vec![], rows);
    report.config.waits = vec![];
    report
}

#[test]
fn the_summary_and_the_json_answer_give_the_same_overhead_and_budget_result_for_every_size() {
    let report = three_outcomes();
    let summary = text_of(|out| render::summary(&report, out));
    let sizes = summary_by_size(&summary, &["f64 x 500", "f64 x 65536", "f32 x 65536"]);
    let records = summary::records(&report);
    assert_eq!(records.len(), 3);
    for (of_size, record) in sizes.iter().zip(&records) {
        assert!(!of_size.judged.is_empty(), "{of_size:?}\n{summary}");
        // The JSON answer carries the same figures and judgement.
        assert_eq!(format!("{} x {}", record.id.dtype, record.id.elements), of_size.size);
        assert_eq!(format::ns(record.overhead_ns.p50_ns), of_size.p50);
        assert_eq!(format::ns(record.overhead_ns.p99_ns), of_size.p99);
        assert_eq!(record.budget.expect("a budget").describe(), of_size.judged);
    }
    // And the figures are the definition's: round trip - server time (p50 and p50, p99 and
    // p50), with the answer at the default wait: 204 us - 10.2 us = 194 us, missed by 43.8 us.
    let judged: Vec<(&str, &str)> =
        sizes.iter().map(|s| (s.size.as_str(), s.judged.as_str())).collect();
    assert_eq!(
        judged,
        [
            ("f64 x 500", "met at p50 and p99"),
            ("f64 x 65536", "MISSED at p50 by 43.8us"),
            ("f32 x 65536", "met at p50, MISSED at p99 by 5.41ms"),
        ]
    );
    assert_eq!((sizes[1].p50.as_str(), sizes[1].p99.as_str()), ("194us", "398us"));
    // Each size's budget is said once: on its line, never again per size.
    assert!(!summary.contains("your case's overhead"), "{summary}");
    // The tally counts what the lines say.
    assert!(
        summary.contains("budget 150us on the overhead at p50 and p99: met by 1 of 3 sizes"),
        "{summary}"
    );
    assert!(summary.contains("  f64 x 65536 (at p50), f32 x 65536 (at p99)."), "{summary}");
}

#[test]
fn a_row_whose_p99_misses_the_budget_says_so_in_the_summary() {
    let report = three_outcomes();
    let summary = text_of(|out| render::summary(&report, out));
    let line = answer_line(&summary, "f32 x 65536");
    assert_eq!(line.split_whitespace().take(2).collect::<Vec<_>>(), ["95us", "5.56ms"], "{line}");
    assert!(line.contains(" met at p50, MISSED at p99 by 5.41ms "), "{line}");
    assert!(line.trim_end().ends_with("echo zero-copy, auto"), "{line}");
    // The answer's round trip (100 us) is said with where the size's time goes.
    let block = summary.split("\nf32 x 65536 (").nth(1).expect("the size's block");
    assert!(block.contains("  your case's round trip p50 100us"), "{summary}");
    let record = &summary::records(&report)[2];
    let judged = record.budget.expect("a budget");
    assert!(judged.p50.met && !judged.p99.met, "{judged:?}");
    assert_eq!((judged.p50.margin_ns, judged.p99.margin_ns), (55_000, 5_410_000));
    // The same row within the budget at p99 too: met at both, and every size is then counted.
    let mut calm = report.clone();
    calm.rows.retain(|r| r.id.elements == 65_536 && r.id.dtype.name() == "f32");
    for r in &mut calm.rows {
        r.rtt_ns.p99 = 150_000;
    }
    let summary = text_of(|out| render::summary(&calm, out));
    assert!(answer_line(&summary, "f32 x 65536").contains(" met at p50 and p99 "), "{summary}");
    assert!(summary.contains("every size meets it (1 of 1)."), "{summary}");
}

/// f64 × 500 echo rows at the default wait, with the given ratios and intervals in order:
/// zero-copy (the lower overhead) then codec.
fn two_rows(zero_copy: (f64, Option<[f64; 2]>), codec: (f64, Option<[f64; 2]>)) -> Report {
    let with = |path: &str, rtt: u64, (median, ci): (f64, Option<[f64; 2]>)| -> Row {
        let mut r = row("f64", 500, "echo", path, "auto", rtt);
        (r.ratio_to_baseline, r.ratio_ci) = (Some(median), ci);
        r
    };
    report(vec![], vec![with("zero-copy", 20_000, zero_copy), with("codec", 30_000, codec)])
}

#[test]
fn an_unresolved_ratio_is_printed_as_unresolved_in_the_answer_and_the_table() {
    for (median, ci, shown, cell) in [
        // Too wide: 1.20 is below 0.75 x 2.00, though all of it is above the floor.
        (2.0, Some([1.2, 2.2]), "unresolved [1.20-2.20]", "unres. 1.20-2.20"),
        // Narrow, but across 1.0: neither faster nor slower than the floor, as far as known.
        (1.01, Some([0.98, 1.04]), "unresolved [0.98-1.04]", "unres. 0.98-1.04"),
        // No interval at all.
        (1.5, None, "unresolved (no interval)", "unres.         -"),
    ] {
        let report = two_rows((median, ci), (median, ci));
        let answered = text_of(|out| render::summary(&report, out));
        let line = answer_line(&answered, "f64 x 500");
        assert!(line.contains(shown), "{line}");
        assert!(!line.contains(&format!("{}x", format::ratio(median))), "{line}");
        assert!(answered.contains("unresolved: a 95% interval wider than +-25%"), "{answered}");
        let table = text_of(|out| render::table(&report, out));
        let row = table.lines().find(|l| l.contains("echo     zero-copy")).expect("the row");
        assert!(row.trim_end().ends_with(cell), "{row}");
        assert!(table.contains("unres. = unresolved: a 95% interval"), "{table}");
        for line in table.lines() {
            assert!(line.chars().count() <= 120, "{} columns: {line}", line.chars().count());
        }
        assert!(!summary::records(&report)[0].ratio_resolved);
    }
    // Resolved: a result, and no note.
    let report = two_rows((1.25, Some([1.2, 1.3])), (1.3, Some([1.25, 1.35])));
    let answered = text_of(|out| render::summary(&report, out));
    assert!(answer_line(&answered, "f64 x 500").contains(" 1.25x [1.20-1.30] "), "{answered}");
    assert!(!answered.contains("unresolved"), "{answered}");
    assert!(!text_of(|out| render::table(&report, out)).contains("unres."));
}

#[test]
fn the_answer_picks_a_resolved_row_over_a_faster_unresolved_one() {
    let report = two_rows((0.21, Some([0.19, 1.64])), (1.3, Some([1.25, 1.35])));
    let answered = text_of(|out| render::summary(&report, out));
    let line = answer_line(&answered, "f64 x 500");
    assert!(line.trim_end().ends_with("echo codec, auto"), "{line}");
    assert!(line.contains(" 1.30x [1.25-1.35] "), "{line}");
    // The answer says no unresolved ratio (the list of ratios below the floor, under it, names
    // the faster row's).
    let (answer_part, _) = answered.split_once("\nwhere the p50 round trip goes").unwrap();
    assert!(!answer_part.contains("unresolved"), "{answered}");
    // Where the size's time goes speaks of the same row: the codec row's 30 us round trip.
    assert!(answered.contains("  your case's round trip p50 30us"), "{answered}");

    // With no resolved row to pick, it falls back to the lowest overhead and says so.
    let report = two_rows((0.21, Some([0.19, 1.64])), (1.3, Some([0.9, 1.35])));
    let answered = text_of(|out| render::summary(&report, out));
    let line = answer_line(&answered, "f64 x 500");
    assert!(line.trim_end().ends_with("echo zero-copy, auto"), "{line}");
    assert!(line.contains(" unresolved [0.19-1.64] "), "{line}");
    assert!(
        answered.contains(
            "no row of f64 x 500 at the answer's wait and placement has a resolved ratio: shown \
             is the lowest overhead."
        ),
        "{answered}"
    );

    // A resolved row at another wait does not displace the default wait's unresolved one:
    // the wait comes first.
    let mut report = two_rows((0.21, Some([0.19, 1.64])), (0.21, Some([0.19, 1.64])));
    let mut spin = row("f64", 500, "echo", "zero-copy", "spin", 10_000);
    (spin.ratio_to_baseline, spin.ratio_ci) = (Some(1.25), Some([1.2, 1.3]));
    report.rows.push(spin);
    let answered = text_of(|out| render::summary(&report, out));
    let line = answer_line(&answered, "f64 x 500");
    assert!(line.trim_end().ends_with("echo zero-copy, auto"), "{line}");
    assert!(line.contains("unresolved [0.19-1.64]"), "{line}");
}

#[test]
fn a_ratio_below_the_floor_that_is_unresolved_is_not_listed_as_a_result() {
    let mut report = sample();
    (report.rows[0].ratio_to_baseline, report.rows[0].ratio_ci) = (Some(0.21), Some([0.19, 1.64]));
    let summary = text_of(|out| render::summary(&report, out));
    let line = summary
        .lines()
        .find(|l| l.starts_with("  f64 x 500 echo-raw zero-copy, block, free: "))
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        line.ends_with(": unresolved [0.19-1.64]: too wide to say whether it beat its floor"),
        "{line}"
    );
    assert!(!summary.contains("0.21x"), "{summary}");
}

#[test]
fn a_budget_of_zero_is_no_budget_in_the_summary_or_the_json() {
    let mut report = sample();
    report.config.budget_ns = 0;
    let answered = text_of(|out| render::summary(&report, out));
    assert!(answered.contains(" budget ") && !answered.contains("budget 0"), "{answered}");
    assert!(!answered.contains("met at") && !answered.contains("MISSED"), "{answered}");
    assert!(!answered.contains("on the overhead at p50 and p99"), "{answered}");
    assert!(answered.contains("no budget was set (--budget)."), "{answered}");
    assert!(summary::records(&report).iter().all(|r| r.budget.is_none()));
}
