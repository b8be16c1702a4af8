//! Where another transport (shared memory, tcp) starts to beat the pipe: per transport, wait
//! and placement measured beside pipes, the size from which it is faster ([`crossovers`]), and
//! the summary's lines that say so ([`crossovers_lines`]).

use std::io::{self, Write};

use peerpipe::peer::DataPath;
use peerpipe::transport::{TransportKind, Wait};

use crate::report::format;
use crate::report::key::{Handler, Placement, Workload};
use crate::report::model::{Report, Row};

use super::order::Order;

/// Where another transport (shared memory, tcp) starts to beat the pipe, for one wait
/// strategy and placement, measured on one representative kind of row (see [`crossovers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crossover {
    /// `shm-sem`, `shm-ring` or `tcp`.
    pub transport: TransportKind,
    /// Wait strategy of both.
    pub wait: Wait,
    /// Placement of both.
    pub pin: Placement,
    /// The rows compared: dtype, handler and path.
    pub dtype: Workload,
    /// Handler of the rows compared.
    pub handler: Handler,
    /// Path of the rows compared.
    pub path: DataPath,
    /// Per measured size, ascending: (elements, shared-memory p50, pipe p50) in ns.
    pub points: Vec<(u64, u64, u64)>,
    /// The smallest size from which shared memory is faster at every larger measured size;
    /// `None` when it is not faster at the largest.
    pub wins_from: Option<u64>,
}

impl Crossover {
    /// `wins from 500 elements, the smallest measured (...)`, in words, with every point.
    pub fn describe(&self) -> String {
        let points: Vec<String> = self
            .points
            .iter()
            .map(|&(elements, shm, pipe)| {
                format!(
                    "{elements}: {} vs {} ({:.2}x)",
                    format::ns(shm),
                    format::ns(pipe),
                    shm as f64 / pipe.max(1) as f64
                )
            })
            .collect();
        let smallest = self.points.first().map_or(0, |p| p.0);
        let verdict = match self.wins_from {
            Some(from) if from == smallest => {
                format!("wins at every measured size, from {from} elements")
            }
            Some(from) => format!("crossover: wins from {from} elements, loses below"),
            None if self.points.iter().all(|p| p.1 >= p.2) => {
                "loses at every measured size".to_owned()
            }
            None => "loses at the largest measured size".to_owned(),
        };
        format!("{verdict}; {}", points.join(", "))
    }
}

/// For each shared-memory transport, wait strategy and placement measured beside pipes: the
/// crossover size from which shared memory is faster, comparing rows of one kind — f64 if
/// measured, `echo-raw` if measured, `zero-copy` if measured (else the first of each) — at
/// every size both have. Empty when the report has no shared-memory rows.
pub fn crossovers(report: &Report) -> Vec<Crossover> {
    /// `wanted` when some row has it, else the first row's value.
    fn prefer<T: PartialEq + Clone>(
        wanted: T,
        values: impl Fn(&Row) -> T,
        rows: &[Row],
    ) -> Option<T> {
        let first = values(rows.first()?);
        Some(if rows.iter().any(|r| values(r) == wanted) { wanted } else { first })
    }
    let rows = &report.rows;
    let (Some(dtype), Some(handler), Some(path)) = (
        prefer(Workload::F64, |r| r.id.dtype, rows),
        prefer(Handler::EchoRaw, |r| r.id.handler.clone(), rows),
        prefer(DataPath::ZeroCopy, |r| r.id.path, rows),
    ) else {
        return Vec::new();
    };
    let of_kind = |r: &&Row| r.id.dtype == dtype && r.id.handler == handler && r.id.path == path;
    let mut groups: Vec<(TransportKind, Wait, Placement)> = Vec::new();
    for row in report.rows.iter().filter(of_kind).filter(|r| r.id.transport != TransportKind::Pipe)
    {
        let key = (row.id.transport, row.id.wait, row.id.pin);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    let order = Order::of(report);
    // Transports by name, as the report has always listed them.
    groups.sort_by_key(|&(transport, wait, pin)| {
        (transport.name(), order.pin(pin), order.wait(wait))
    });
    let mut out = Vec::new();
    for (transport, wait, pin) in groups {
        let find = |t: TransportKind, elements: u64| {
            report.rows.iter().filter(of_kind).find(|r| {
                r.id.transport == t
                    && r.id.wait == wait
                    && r.id.pin == pin
                    && r.id.elements == elements
            })
        };
        let mut points: Vec<(u64, u64, u64)> = report
            .rows
            .iter()
            .filter(of_kind)
            .filter(|r| r.id.transport == transport && r.id.wait == wait && r.id.pin == pin)
            .filter_map(|shm| {
                find(TransportKind::Pipe, shm.id.elements)
                    .map(|p| (shm.id.elements, shm.rtt_ns.p50, p.rtt_ns.p50))
            })
            .collect();
        points.sort_unstable();
        points.dedup_by_key(|p| p.0);
        if points.is_empty() {
            continue;
        }
        let mut wins_from = None;
        for &(elements, shm, pipe) in points.iter().rev() {
            if shm < pipe {
                wins_from = Some(elements);
            } else {
                break;
            }
        }
        out.push(Crossover {
            transport,
            wait,
            pin,
            dtype,
            handler: handler.clone(),
            path,
            points,
            wins_from,
        });
    }
    out
}

/// The summary's crossover lines: a heading naming what is compared with the pipe, then one
/// line per transport, wait and placement ([`Crossover::describe`]); nothing when the report
/// has no other transport beside pipes.
pub(super) fn crossovers_lines(
    report: &Report,
    order: &Order,
    out: &mut dyn Write,
) -> io::Result<()> {
    let crossings = crossovers(report);
    if crossings.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    // Shared memory, tcp or both: name what is compared with the pipe.
    let mut others: Vec<&str> = Vec::new();
    for crossing in &crossings {
        let kind = if crossing.transport.is_shared_memory() {
            "shared memory"
        } else {
            crossing.transport.name()
        };
        if !others.contains(&kind) {
            others.push(kind);
        }
    }
    let others = others.join(" and ");
    writeln!(out, "{others} against pipes (p50 round trip, {others} vs pipe):")?;
    let several_pins = order.pins.len() > 1;
    for crossing in &crossings {
        let pin = if several_pins { format!(", {}", crossing.pin) } else { String::new() };
        writeln!(
            out,
            "  {} {}{pin} ({} {} {}): {}",
            crossing.transport,
            crossing.wait,
            crossing.dtype,
            crossing.handler,
            crossing.path,
            crossing.describe()
        )?;
    }
    Ok(())
}
