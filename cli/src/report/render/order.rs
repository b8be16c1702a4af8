//! The order of the table's sections and of the rows inside them, which the verdict and the
//! crossovers follow too: known names in their natural order (`echo-raw` before `echo`,
//! `zero-copy` before `codec`, transports as [`TransportKind::EVERY`] lists them), others in
//! order of first appearance.

use std::cmp::Ordering;

use peerpipe::peer::DataPath;
use peerpipe::transport::{TransportKind, Wait};

use crate::report::key::Handler;
use crate::report::key::{Placement, Workload};
use crate::report::model::{Report, Row};

pub(super) fn transport_rank(transport: TransportKind) -> usize {
    TransportKind::EVERY.iter().position(|&t| t == transport).unwrap_or(usize::MAX)
}

/// Ranks for sorting: placements and waits in order of first appearance; handlers, paths
/// and transports known ones first, in their natural order, then by name.
pub(super) struct Order {
    pub(super) pins: Vec<Placement>,
    waits: Vec<Wait>,
}

impl Order {
    pub(super) fn of(report: &Report) -> Order {
        let mut pins = Vec::new();
        let mut waits = Vec::new();
        let settings = report
            .rows
            .iter()
            .map(|r| (r.id.pin, r.id.wait))
            .chain(report.baseline.iter().map(|b| (b.pin, b.wait)));
        for (pin, wait) in settings {
            if !pins.contains(&pin) {
                pins.push(pin);
            }
            if !waits.contains(&wait) {
                waits.push(wait);
            }
        }
        Order { pins, waits }
    }

    pub(super) fn pin(&self, pin: Placement) -> usize {
        self.pins.iter().position(|&p| p == pin).unwrap_or(usize::MAX)
    }

    pub(super) fn wait(&self, wait: Wait) -> usize {
        self.waits.iter().position(|&w| w == wait).unwrap_or(usize::MAX)
    }

    pub(super) fn compare_within_group(&self, a: &Row, b: &Row) -> Ordering {
        let key = |r: &Row| {
            (
                handler_rank(&r.id.handler),
                r.id.handler.name().to_owned(),
                path_rank(r.id.path),
                r.id.path.name(),
                transport_rank(r.id.transport),
                r.id.transport.name(),
            )
        };
        key(a).cmp(&key(b))
    }
}

pub(super) fn dtype_rank(dtype: Workload) -> usize {
    Workload::ALL.iter().position(|&w| w == dtype).unwrap_or(Workload::ALL.len())
}

fn handler_rank(handler: &Handler) -> usize {
    match handler {
        Handler::EchoRaw => 0,
        Handler::Echo => 1,
        _ => 2,
    }
}

fn path_rank(path: DataPath) -> usize {
    match path {
        DataPath::ZeroCopy => 0,
        DataPath::Codec => 1,
    }
}
