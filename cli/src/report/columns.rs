//! A row's columns, in one list ([`ROW`]): for each, the key and value it writes into a row's
//! JSON object, the CSV fields it fills (and what a floor's CSV line puts there), and the
//! cells of the table that show it (and a floor's cells). A row's JSON (its `Serialize`), the
//! CSV's header and lines ([`export`](super::export)) and the table's header and lines
//! ([`render`](super::render)) are all written from this list, so a new column is one entry
//! here plus its value: a field of [`Row`], or a figure that follows from its rounds
//! ([`RowView`]).
//!
//! Each format keeps the order it has always had, which is the list's order, and the three do
//! not agree everywhere: the table shows `added` second and `transfer` after `server`, so
//! those two have a table-only entry where the table shows them; the JSON holds a row's rounds
//! and its figures per state as arrays, which the CSV summarises in fields of its own
//! further on, so those are entries of one format each.

use serde::Serialize;
use serde::ser::SerializeMap;

use peerpipe::transport::TransportKind;

use super::format;
use super::model::{BaselineRow, ClientWaits, Percentiles, Round, Row, nan_as_null};
use super::ratio::RatioVerdict;
use super::states::{self, StateFigures};

/// A row with what follows from its rounds, worked out once for all its columns.
pub(crate) struct RowView<'a> {
    /// The row.
    pub(crate) row: &'a Row,
    /// Its figures in each state of the machine ([`states::figures`]).
    pub(crate) states: Vec<StateFigures>,
    /// Those of its main state ([`states::main_state`]).
    pub(crate) main: Option<StateFigures>,
    /// The figures that stand for it ([`states::headline_figures`]): its `added_ns`.
    pub(crate) headline: Option<StateFigures>,
}

impl<'a> RowView<'a> {
    /// `row` with its figures per state.
    pub(crate) fn of(row: &'a Row) -> RowView<'a> {
        let states = states::figures(&row.rounds);
        let main = states::main_state(&states).copied();
        let headline = main.or_else(|| states::stratum(0, row.rounds.iter()));
        RowView { row, states, main, headline }
    }
}

/// One column of a row, in each format that has it.
pub(crate) struct Column {
    /// The key of the column in a row's JSON object, and its value there (`None`: the key is
    /// left out); `None` when the JSON has no such key.
    json: Option<(&'static str, JsonOf)>,
    /// Its fields in the CSV; `None` when the CSV has none.
    csv: Option<Csv>,
    /// Its cells in the table, in order; empty when the table does not show it.
    table: &'static [Cell],
}

/// The value of a column in a row's JSON object.
type JsonOf = for<'v> fn(&'v RowView<'_>) -> Option<Json<'v>>;

/// A column's fields in the CSV.
struct Csv {
    /// The header's names of its fields.
    names: &'static [&'static str],
    /// A row's fields, as many as `names`.
    row: fn(&RowView<'_>) -> Vec<String>,
    /// A floor's fields, as many as `names`; `None` when they are empty.
    floor: Option<fn(&BaselineRow) -> Vec<String>>,
}

/// One cell of the table's lines.
pub(crate) struct Cell {
    /// Its header.
    header: &'static str,
    /// Its width when only pipes were measured, and when another transport was too (whose
    /// rows' labels are longer).
    width: [usize; 2],
    /// Left-aligned (the label) or right-aligned (every figure).
    left: bool,
    /// A row's cell.
    row: fn(&RowView<'_>) -> String,
    /// A floor's cell.
    floor: fn(&BaselineRow) -> String,
}

impl Cell {
    /// The cell's width in a table with (`wide`) or without rows of another transport than
    /// the pipe.
    pub(crate) fn width(&self, wide: bool) -> usize {
        self.width[usize::from(wide)]
    }

    /// `text` padded to the cell's width.
    fn pad(&self, text: &str, wide: bool) -> String {
        let width = self.width(wide);
        if self.left { format!("{text:<width$}") } else { format!("{text:>width$}") }
    }

    /// The column header, padded.
    pub(crate) fn header(&self, wide: bool) -> String {
        self.pad(self.header, wide)
    }

    /// A row's cell, padded.
    pub(crate) fn of_row(&self, row: &RowView<'_>, wide: bool) -> String {
        self.pad(&(self.row)(row), wide)
    }

    /// A floor's cell, padded.
    pub(crate) fn of_floor(&self, floor: &BaselineRow, wide: bool) -> String {
        self.pad(&(self.floor)(floor), wide)
    }
}

/// The label cell, first on every line of the table: `echo-raw zero-copy`, with the transport
/// when it is not a pipe (`echo-raw zero-copy ring`); `baseline raw r/w` for a floor.
pub(crate) const LABEL: Cell = Cell {
    header: "handler  path",
    width: [18, 23],
    left: true,
    row: |v| {
        let id = &v.row.id;
        match transport_tag(id.transport) {
            None => format!("{:<8} {}", id.handler.name(), id.path.name()),
            Some(kind) => format!("{:<8} {:<9} {kind}", id.handler.name(), id.path.name()),
        }
    },
    floor: |b| floor_label(b.transport, b.lent),
};

/// A cell with `header`, seven characters wide, right-aligned.
const fn figure(
    header: &'static str,
    row: fn(&RowView<'_>) -> String,
    floor: fn(&BaselineRow) -> String,
) -> Cell {
    Cell { header, width: [7, 7], left: false, row, floor }
}

/// The dash of a cell a floor does not have.
fn dash(_: &BaselineRow) -> String {
    "-".to_owned()
}

/// The columns of a row, in the order of every format (see the module documentation).
pub(crate) static ROW: &[Column] = &[
    Column {
        json: Some(("dtype", |v| Some(Json::Text(v.row.id.dtype.to_string())))),
        csv: Some(Csv {
            names: &["dtype"],
            row: |v| vec![csv_field(v.row.id.dtype.name())],
            floor: None,
        }),
        table: &[],
    },
    Column {
        json: Some(("elements", |v| Some(Json::Count(v.row.id.elements)))),
        csv: Some(Csv {
            names: &["elements"],
            row: |v| vec![v.row.id.elements.to_string()],
            floor: None,
        }),
        table: &[],
    },
    Column {
        json: Some(("bytes", |v| Some(Json::Count(v.row.id.bytes)))),
        csv: Some(Csv {
            names: &["bytes"],
            row: |v| vec![v.row.id.bytes.to_string()],
            floor: Some(|b| vec![b.bytes.to_string()]),
        }),
        table: &[],
    },
    Column {
        json: Some(("transport", |v| Some(Json::Text(v.row.id.transport.to_string())))),
        csv: Some(Csv {
            names: &["transport"],
            row: |v| vec![csv_field(v.row.id.transport.name())],
            floor: Some(|b| vec![csv_field(b.transport.name())]),
        }),
        table: &[],
    },
    Column {
        json: Some(("path", |v| Some(Json::Text(v.row.id.path.to_string())))),
        csv: Some(Csv {
            names: &["path"],
            row: |v| vec![csv_field(v.row.id.path.name())],
            floor: Some(|_| vec!["raw".to_owned()]),
        }),
        table: &[],
    },
    Column {
        json: Some(("handler", |v| Some(Json::Text(v.row.id.handler.to_string())))),
        csv: Some(Csv {
            names: &["handler"],
            row: |v| vec![csv_field(v.row.id.handler.name())],
            floor: Some(|_| vec!["baseline".to_owned()]),
        }),
        table: &[],
    },
    Column {
        json: Some(("wait", |v| Some(Json::Text(v.row.id.wait.to_string())))),
        csv: Some(Csv {
            names: &["wait"],
            row: |v| vec![csv_field(&v.row.id.wait.to_string())],
            floor: Some(|b| vec![csv_field(&b.wait.to_string())]),
        }),
        table: &[],
    },
    Column {
        json: Some(("pin", |v| Some(Json::Text(v.row.id.pin.to_string())))),
        csv: Some(Csv {
            names: &["pin"],
            row: |v| vec![csv_field(v.row.id.pin.name())],
            floor: Some(|b| vec![csv_field(b.pin.name())]),
        }),
        table: &[],
    },
    // The table's first two cells: what the line is, and the time it adds to its floor.
    Column { json: None, csv: None, table: &[LABEL] },
    Column {
        json: None,
        csv: None,
        table: &[Cell {
            header: "added",
            width: [8, 6],
            left: false,
            row: |v| format::added_ns(v.headline.and_then(|f| f.added_ns)),
            floor: dash,
        }],
    },
    Column {
        json: Some(("iterations", |v| Some(Json::Count(v.row.iterations)))),
        csv: Some(Csv {
            names: &["iterations"],
            row: |v| vec![v.row.iterations.to_string()],
            floor: Some(|b| vec![b.iterations.to_string()]),
        }),
        table: &[],
    },
    Column {
        json: Some(("rtt_ns", |v| Some(Json::Percentiles(&v.row.rtt_ns)))),
        csv: Some(Csv {
            names: &[
                "rtt_min_ns",
                "rtt_p50_ns",
                "rtt_p90_ns",
                "rtt_p99_ns",
                "rtt_p999_ns",
                "rtt_max_ns",
            ],
            row: |v| percentile_fields(&v.row.rtt_ns),
            floor: Some(|b| percentile_fields(&b.rtt_ns)),
        }),
        table: &[
            figure("p50", |v| format::ns(v.row.rtt_ns.p50), |b| format::ns(b.rtt_ns.p50)),
            figure("p99", |v| format::ns(v.row.rtt_ns.p99), |b| format::ns(b.rtt_ns.p99)),
        ],
    },
    Column {
        json: Some(("transfer_ns", |v| Some(Json::Percentiles(&v.row.transfer_ns)))),
        csv: Some(Csv {
            names: &[
                "transfer_min_ns",
                "transfer_p50_ns",
                "transfer_p90_ns",
                "transfer_p99_ns",
                "transfer_p999_ns",
                "transfer_max_ns",
            ],
            row: |v| percentile_fields(&v.row.transfer_ns),
            floor: None,
        }),
        table: &[],
    },
    Column {
        json: Some(("encode_ns", |v| Some(Json::Percentiles(&v.row.encode_ns)))),
        csv: Some(Csv {
            names: &[
                "encode_min_ns",
                "encode_p50_ns",
                "encode_p90_ns",
                "encode_p99_ns",
                "encode_p999_ns",
                "encode_max_ns",
            ],
            row: |v| percentile_fields(&v.row.encode_ns),
            floor: None,
        }),
        table: &[figure("encode", |v| format::ns(v.row.encode_ns.p50), dash)],
    },
    Column {
        json: Some(("decode_ns", |v| Some(Json::Percentiles(&v.row.decode_ns)))),
        csv: Some(Csv {
            names: &[
                "decode_min_ns",
                "decode_p50_ns",
                "decode_p90_ns",
                "decode_p99_ns",
                "decode_p999_ns",
                "decode_max_ns",
            ],
            row: |v| percentile_fields(&v.row.decode_ns),
            floor: None,
        }),
        table: &[figure("decode", |v| format::ns(v.row.decode_ns.p50), dash)],
    },
    Column {
        json: Some(("server_ns", |v| Some(Json::Percentiles(&v.row.server_ns)))),
        csv: Some(Csv {
            names: &[
                "server_min_ns",
                "server_p50_ns",
                "server_p90_ns",
                "server_p99_ns",
                "server_p999_ns",
                "server_max_ns",
            ],
            row: |v| percentile_fields(&v.row.server_ns),
            floor: None,
        }),
        table: &[figure("server", |v| format::ns(v.row.server_ns.p50), dash)],
    },
    // The table shows the transfer after the phases it is the rest of.
    Column {
        json: None,
        csv: None,
        table: &[figure("transfer", |v| format::ns(v.row.transfer_ns.p50), dash)],
    },
    Column {
        json: Some(("client_cpu_ns", |v| Some(Json::Measured(v.row.client_cpu_ns)))),
        csv: Some(Csv {
            names: &["client_cpu_ns"],
            row: |v| vec![float_field(v.row.client_cpu_ns)],
            floor: None,
        }),
        table: &[figure("cli cpu", |v| format::cpu_ns(v.row.client_cpu_ns), dash)],
    },
    Column {
        json: Some(("server_cpu_ns", |v| Some(Json::Measured(v.row.server_cpu_ns)))),
        csv: Some(Csv {
            names: &["server_cpu_ns"],
            row: |v| vec![float_field(v.row.server_cpu_ns)],
            floor: None,
        }),
        table: &[figure("srv cpu", |v| format::cpu_ns(v.row.server_cpu_ns), dash)],
    },
    Column {
        json: Some(("mb_per_s", |v| Some(Json::Measured(v.row.mb_per_s)))),
        csv: Some(Csv {
            names: &["mb_per_s"],
            row: |v| vec![float_field(v.row.mb_per_s)],
            floor: Some(|b| vec![float_field(floor_mb_per_s(b))]),
        }),
        table: &[Cell {
            header: "MB/s",
            width: [8, 6],
            left: false,
            row: |v| format::rate(v.row.mb_per_s),
            floor: |b| format::rate(floor_mb_per_s(b)),
        }],
    },
    Column {
        json: Some(("ratio_to_baseline", |v| Some(Json::Maybe(v.row.ratio_to_baseline)))),
        csv: Some(Csv {
            names: &["ratio_to_baseline"],
            row: |v| vec![maybe_field(v.row.ratio_to_baseline)],
            floor: Some(|_| vec!["1".to_owned()]),
        }),
        table: &[Cell {
            header: "ratio",
            width: [6, 6],
            left: false,
            row: |v| ratio_cell(v.row),
            floor: |_| "1.00x".to_owned(),
        }],
    },
    Column {
        json: Some(("ratio_ci", |v| Some(Json::Interval(v.row.ratio_ci)))),
        csv: Some(Csv {
            names: &["ratio_ci_lo", "ratio_ci_hi"],
            row: |v| interval_fields(v.row.ratio_ci),
            floor: None,
        }),
        table: &[Cell {
            header: "95% CI",
            width: [9, 9],
            left: false,
            row: |v| interval_cell(v.row.ratio_ci),
            floor: |_| String::new(),
        }],
    },
    Column {
        json: Some(("added_ns", |v| Some(Json::Maybe(v.headline.and_then(|f| f.added_ns))))),
        csv: Some(Csv {
            names: &["added_ns"],
            row: |v| vec![maybe_field(v.headline.and_then(|f| f.added_ns))],
            floor: None,
        }),
        table: &[],
    },
    Column {
        json: Some(("added_ci_ns", |v| {
            Some(Json::Interval(v.headline.and_then(|f| f.added_ci_ns)))
        })),
        csv: Some(Csv {
            names: &["added_ci_lo_ns", "added_ci_hi_ns"],
            row: |v| interval_fields(v.headline.and_then(|f| f.added_ci_ns)),
            floor: None,
        }),
        table: &[],
    },
    Column {
        json: Some(("main_state", |v| Some(Json::State(v.main.map(|f| f.state))))),
        csv: Some(Csv {
            names: &["main_state"],
            row: |v| vec![v.main.map_or(String::new(), |f| f.state.to_string())],
            floor: None,
        }),
        table: &[],
    },
    Column { json: Some(("rounds", |v| Some(Json::Rounds(&v.row.rounds)))), csv: None, table: &[] },
    Column {
        json: None,
        csv: Some(Csv {
            names: &["state_ratios", "state_added_ns"],
            row: |v| vec![by_state(&v.states, |f| f.ratio), by_state(&v.states, |f| f.added_ns)],
            floor: None,
        }),
        table: &[],
    },
    Column {
        json: Some(("shared_core_share", |v| Some(Json::Maybe(v.row.shared_core_share)))),
        csv: Some(Csv {
            names: &["shared_core_share"],
            row: |v| vec![maybe_field(v.row.shared_core_share)],
            floor: Some(|b| vec![maybe_field(b.shared_core_share)]),
        }),
        table: &[],
    },
    Column { json: Some(("states", |v| Some(Json::States(&v.states)))), csv: None, table: &[] },
    Column {
        json: None,
        csv: Some(Csv {
            names: &["p50_spread_ns"],
            row: |v| vec![v.row.p50_spread_ns().to_string()],
            floor: Some(|b| vec![b.p50_spread_ns().to_string()]),
        }),
        table: &[],
    },
    Column {
        json: None,
        csv: Some(Csv {
            names: &["round_p50s_ns", "round_probes_ns", "round_states"],
            row: |v| rounds_fields(&v.row.rounds),
            floor: Some(|b| rounds_fields(&b.rounds)),
        }),
        table: &[],
    },
    Column {
        json: Some(("client_waits", |v| v.row.client_waits.as_ref().map(Json::Waits))),
        csv: None,
        table: &[],
    },
];

/// A value of a row's JSON object, written as its field in [`Row`] always has been.
pub(crate) enum Json<'v> {
    /// A name, as a string (`"f64"`, `"hybrid:20us"`).
    Text(String),
    /// A count.
    Count(u64),
    /// Six percentiles, as an object.
    Percentiles(&'v Percentiles),
    /// A measurement, `null` when unknown (NaN).
    Measured(f64),
    /// A figure, `null` when there is none.
    Maybe(Option<f64>),
    /// A 95 % interval as `[lo, hi]`, `null` when there is none.
    Interval(Option<[f64; 2]>),
    /// A machine state's id, `null` when unknown.
    State(Option<u32>),
    /// The rounds, as an array.
    Rounds(&'v [Round]),
    /// The figures per state, as an array.
    States(&'v [StateFigures]),
    /// What the client's waits did.
    Waits(&'v ClientWaits),
}

impl Serialize for Json<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Text(text) => text.serialize(serializer),
            Json::Count(count) => count.serialize(serializer),
            Json::Percentiles(p) => p.serialize(serializer),
            Json::Measured(value) => nan_as_null::serialize(value, serializer),
            Json::Maybe(value) => value.serialize(serializer),
            Json::Interval(ci) => ci.serialize(serializer),
            Json::State(state) => state.serialize(serializer),
            Json::Rounds(rounds) => rounds.serialize(serializer),
            Json::States(states) => states.serialize(serializer),
            Json::Waits(waits) => waits.serialize(serializer),
        }
    }
}

/// A row as JSON: the JSON entry of every column of `columns.rs`, in order. What follows from its
/// rounds (`added_ns`, `main_state`, `states`, ...) is written every time and not read back.
impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let view = RowView::of(self);
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in ROW.iter().filter_map(|column| column.json) {
            if let Some(value) = value(&view) {
                map.serialize_entry(key, &value)?;
            }
        }
        map.end()
    }
}

/// The CSV header's names, in order.
pub(crate) fn csv_names() -> impl Iterator<Item = &'static str> {
    ROW.iter().filter_map(|column| column.csv.as_ref()).flat_map(|csv| csv.names.iter().copied())
}

/// A row's CSV line, without its line break.
pub(crate) fn csv_row(row: &Row) -> String {
    let view = RowView::of(row);
    let fields: Vec<String> = ROW
        .iter()
        .filter_map(|column| column.csv.as_ref())
        .flat_map(|csv| (csv.row)(&view))
        .collect();
    fields.join(",")
}

/// A floor's CSV line, without its line break.
pub(crate) fn csv_floor(floor: &BaselineRow) -> String {
    let fields: Vec<String> = ROW
        .iter()
        .filter_map(|column| column.csv.as_ref())
        .flat_map(|csv| match csv.floor {
            Some(fields) => fields(floor),
            None => vec![String::new(); csv.names.len()],
        })
        .collect();
    fields.join(",")
}

/// The table's cells, in order.
pub(crate) fn table_cells() -> impl Iterator<Item = &'static Cell> {
    ROW.iter().flat_map(|column| column.table)
}

/// `baseline raw r/w` for pipes (`baseline raw lent` when the client lends its pages with
/// `vmsplice`), `baseline raw sem` / `baseline raw ring` for shared memory, `baseline raw tcp`.
pub(crate) fn floor_label(transport: TransportKind, lent: bool) -> String {
    match transport_tag(transport) {
        Some(kind) => format!("baseline raw {kind}"),
        None if lent => "baseline raw lent".to_owned(),
        None => "baseline raw r/w".to_owned(),
    }
}

/// How a row or floor label names a transport other than a pipe: `sem`, `ring`, `tcp`.
fn transport_tag(transport: TransportKind) -> Option<&'static str> {
    match transport {
        TransportKind::Pipe => None,
        other => Some(other.name().strip_prefix("shm-").unwrap_or(other.name())),
    }
}

/// A floor's payload rate at its p50 round trip.
fn floor_mb_per_s(floor: &BaselineRow) -> f64 {
    format::mb_per_s(floor.bytes, floor.rtt_ns.p50)
}

/// The ratio cell of a row: `1.25x`, `unres.` when the ratio is not a result (the interval
/// cell beside it still shows the interval), `-` without one.
fn ratio_cell(row: &Row) -> String {
    match RatioVerdict::of(row) {
        RatioVerdict::Resolved { median, .. } => format!("{}x", format::ratio(median)),
        RatioVerdict::Unresolved { .. } => "unres.".to_owned(),
        RatioVerdict::Missing => "-".to_owned(),
    }
}

/// The interval cell of a row: `1.20-1.30`, `-` without a finite one.
fn interval_cell(ci: Option<[f64; 2]>) -> String {
    ci.filter(|ci| ci.iter().all(|c| c.is_finite()))
        .map_or("-".to_owned(), |[lo, hi]| format!("{}-{}", format::ratio(lo), format::ratio(hi)))
}

/// The six percentiles as CSV fields.
fn percentile_fields(p: &Percentiles) -> Vec<String> {
    [p.min, p.p50, p.p90, p.p99, p.p999, p.max].map(|v| v.to_string()).to_vec()
}

/// A measurement as a CSV field, empty when unknown (NaN).
fn float_field(value: f64) -> String {
    if value.is_finite() { value.to_string() } else { String::new() }
}

/// A figure as a CSV field, empty when there is none.
fn maybe_field(value: Option<f64>) -> String {
    value.map_or(String::new(), float_field)
}

/// An interval as two CSV fields, both empty when there is none.
fn interval_fields(ci: Option<[f64; 2]>) -> Vec<String> {
    vec![maybe_field(ci.map(|ci| ci[0])), maybe_field(ci.map(|ci| ci[1]))]
}

/// One figure per state as `state:value`, separated by spaces.
fn by_state(states: &[StateFigures], value: fn(&StateFigures) -> Option<f64>) -> String {
    let pairs = states.iter().filter_map(|f| Some(format!("{}:{}", f.state, value(f)?)));
    pairs.collect::<Vec<_>>().join(" ")
}

/// The rounds' p50s, probes and states as three CSV fields, each separated by spaces.
fn rounds_fields(rounds: &[Round]) -> Vec<String> {
    vec![
        rounds.iter().map(|r| r.p50_ns.to_string()).collect::<Vec<_>>().join(" "),
        known_or_dash(rounds.iter().map(|r| r.probe_ns)),
        known_or_dash(rounds.iter().map(|r| r.state)),
    ]
}

/// Each value, `-` when unknown, separated by spaces; empty when none is known.
fn known_or_dash<T: ToString>(values: impl Iterator<Item = Option<T>> + Clone) -> String {
    if values.clone().all(|v| v.is_none()) {
        return String::new();
    }
    let text = values.map(|v| v.map_or("-".to_owned(), |v| v.to_string()));
    text.collect::<Vec<_>>().join(" ")
}

/// The text as one CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("echo-raw"), "echo-raw");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
