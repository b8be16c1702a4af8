//! The order of the table's sections and of the rows inside them, which the verdict and the
//! crossovers follow too: known names in their natural order (`echo-raw` before `echo`,
//! `zero-copy` before `codec`, transports as [`TransportKind::EVERY`] lists them), others in
//! order of first appearance.

use std::cmp::Ordering;

use peerpipe::transport::TransportKind;

use crate::report::{Report, Row, Workload};

pub(super) fn transport_rank(transport: &str) -> usize {
    TransportKind::EVERY.iter().position(|t| t.name() == transport).unwrap_or(usize::MAX)
}

/// Ranks for sorting: known names in their natural order, others in order of first appearance.
pub(super) struct Order<'a> {
    pub(super) pins: Vec<&'a str>,
    waits: Vec<&'a str>,
}

impl<'a> Order<'a> {
    pub(super) fn of(report: &'a Report) -> Order<'a> {
        let mut pins = Vec::new();
        let mut waits = Vec::new();
        let settings = report
            .rows
            .iter()
            .map(|r| (r.pin.as_str(), r.wait.as_str()))
            .chain(report.baseline.iter().map(|b| (b.pin.as_str(), b.wait.as_str())));
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

    pub(super) fn pin(&self, pin: &str) -> usize {
        self.pins.iter().position(|&p| p == pin).unwrap_or(usize::MAX)
    }

    pub(super) fn wait(&self, wait: &str) -> usize {
        self.waits.iter().position(|&w| w == wait).unwrap_or(usize::MAX)
    }

    pub(super) fn compare_within_group(&self, a: &'a Row, b: &'a Row) -> Ordering {
        let key = |r: &'a Row| {
            let transport = TransportKind::EVERY.iter().position(|t| t.name() == r.transport);
            (
                handler_rank(&r.handler),
                &r.handler,
                path_rank(&r.path),
                &r.path,
                transport,
                &r.transport,
            )
        };
        key(a).cmp(&key(b))
    }
}

pub(super) fn dtype_rank(dtype: &str) -> usize {
    Workload::ALL.iter().position(|w| w.name() == dtype).unwrap_or(Workload::ALL.len())
}

fn handler_rank(handler: &str) -> usize {
    match handler {
        "echo-raw" => 0,
        "echo" => 1,
        _ => 2,
    }
}

fn path_rank(path: &str) -> usize {
    match path {
        "zero-copy" => 0,
        "codec" => 1,
        _ => 2,
    }
}
