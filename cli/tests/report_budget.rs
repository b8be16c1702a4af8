//! One budget, judged at the tail: the answer, the verdict and the JSON answer agree, on
//! hand-built reports (no processes, no clocks).

mod reports;

use peerpipe_cli::report::{Report, answer, format, render};
use reports::{report, row, sample};

fn text_of(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("UTF-8 output")
}

/// What the verdict says of one size: its label, the overhead p50 and p99 of "your case", and
/// the budget's judgement in words.
#[derive(Debug)]
struct VerdictOfSize {
    size: String,
    p50: String,
    p99: String,
    judged: String,
}

/// Reads every size's block of the verdict (`f64 x 500 (4000 B):` … up to the next one).
fn verdict_by_size(text: &str) -> Vec<VerdictOfSize> {
    let between = |line: &str, from: &str, to: &str| -> String {
        let start = line.find(from).unwrap_or_else(|| panic!("no {from:?} in {line}")) + from.len();
        let rest = &line[start..];
        rest[..rest.find(to).unwrap_or(rest.len())].to_owned()
    };
    let mut found: Vec<VerdictOfSize> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with("):") && line.contains(" x ") {
            let size = line[..line.rfind(" (").expect("a size heading")].to_owned();
            found.push(VerdictOfSize {
                size,
                p50: String::new(),
                p99: String::new(),
                judged: String::new(),
            });
        } else if line.starts_with("  your case: ") {
            let last = found.last_mut().expect("a size before its case");
            last.p50 = between(line, "overhead p50 ", ",");
            last.p99 = between(line, ", p99 ", " (");
        } else if line.starts_with("  budget ") {
            found.last_mut().expect("a size before its budget").judged =
                between(line, "on your case's overhead: ", "\n");
        }
    }
    found
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
fn the_answer_and_the_verdict_give_the_same_overhead_and_budget_result_for_every_size() {
    let report = three_outcomes();
    let answered = text_of(|out| answer::answer(&report, out));
    let verdict = text_of(|out| render::verdict(&report, out));
    let sizes = verdict_by_size(&verdict);
    assert_eq!(sizes.len(), 3, "{verdict}");
    let records = answer::records(&report);
    assert_eq!(records.len(), 3);
    for (of_size, record) in sizes.iter().zip(&records) {
        assert!(!of_size.judged.is_empty(), "{of_size:?}\n{verdict}");
        let line = answer_line(&answered, &of_size.size);
        let figures: Vec<&str> = line.split_whitespace().take(2).collect();
        assert_eq!(figures, [of_size.p50.as_str(), of_size.p99.as_str()], "{of_size:?}: {line}");
        assert!(line.contains(&format!(" {} ", of_size.judged)), "{of_size:?}: {line}");
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
    // The summary counts what the lines say.
    assert!(
        verdict.contains("budget 150us on the overhead at p50 and p99: met by 1 of 3 sizes"),
        "{verdict}"
    );
    assert!(verdict.contains("  f64 x 65536 (at p50), f32 x 65536 (at p99)."), "{verdict}");
}

#[test]
fn a_row_whose_p99_misses_the_budget_says_so_in_the_answer_and_the_verdict() {
    let report = three_outcomes();
    let answered = text_of(|out| answer::answer(&report, out));
    let line = answer_line(&answered, "f32 x 65536");
    assert_eq!(line.split_whitespace().take(2).collect::<Vec<_>>(), ["95us", "5.56ms"], "{line}");
    assert!(line.contains(" met at p50, MISSED at p99 by 5.41ms "), "{line}");
    assert!(line.trim_end().ends_with("echo zero-copy, auto"), "{line}");
    let verdict = text_of(|out| render::verdict(&report, out));
    assert!(
        verdict.contains(
            "overhead p50 95us, p99 5.56ms (round trip 100us)\n  budget 150us on your case's \
             overhead: met at p50, MISSED at p99 by 5.41ms\n"
        ),
        "{verdict}"
    );
    let record = &answer::records(&report)[2];
    let judged = record.budget.expect("a budget");
    assert!(judged.p50.met && !judged.p99.met, "{judged:?}");
    assert_eq!((judged.p50.margin_ns, judged.p99.margin_ns), (55_000, 5_410_000));
    // The same row within the budget at p99 too: met at both, and every size is then counted.
    let mut calm = report.clone();
    calm.rows.retain(|r| r.id.elements == 65_536 && r.id.dtype.name() == "f32");
    for r in &mut calm.rows {
        r.rtt_ns.p99 = 150_000;
    }
    let verdict = text_of(|out| render::verdict(&calm, out));
    assert!(verdict.contains("on your case's overhead: met at p50 and p99\n"), "{verdict}");
    assert!(verdict.contains("every size meets it (1 of 1)."), "{verdict}");
}

#[test]
fn a_budget_of_zero_is_no_budget_in_the_answer_the_verdict_or_the_json() {
    let mut report = sample();
    report.config.budget_ns = 0;
    let answered = text_of(|out| answer::answer(&report, out));
    assert!(answered.contains(" budget ") && !answered.contains("budget 0"), "{answered}");
    assert!(!answered.contains("met at") && !answered.contains("MISSED"), "{answered}");
    let verdict = text_of(|out| render::verdict(&report, out));
    assert!(!verdict.contains("on your case's overhead"), "{verdict}");
    assert!(verdict.contains("no budget was set (--budget)."), "{verdict}");
    assert!(answer::records(&report).iter().all(|r| r.budget.is_none()));
}
