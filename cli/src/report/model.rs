//! The report's model: what a run measured, as the JSON document holds it — a [`Report`] of
//! the [`Machine`] it ran on, the [`ConfigRecord`] it ran with, its raw-bytes floors
//! ([`BaselineRow`]), its rows ([`Row`]) with their [`Round`]s and, under the `auto` wait, what
//! the client's waits did ([`ClientWaits`]), the machine's states ([`MachineState`]) and the
//! rows it could not measure ([`Skipped`]).
//!
//! Data, and what follows from it directly. What follows from the rounds per state of the
//! machine is [`states`](super::states)'s; how each field of a row is written — in the JSON,
//! the CSV and the table — is the report's `columns.rs`'s, which also writes a row's
//! JSON.

use hdrhistogram::Histogram;
use peerpipe::Peer;
use peerpipe::transport::{AutoCounts, TransportKind, Wait};
use serde::{Deserialize, Serialize};

use super::key::{self, FloorKey, Placement, RowId, RowKey};
use super::sync::SyncCost;

/// Six percentiles of one quantity, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Smallest sample.
    pub min: u64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest sample.
    pub max: u64,
}

impl Percentiles {
    /// The percentiles of an HDR histogram (3 significant digits; min and max exact).
    pub fn of(histogram: &Histogram<u64>) -> Percentiles {
        if histogram.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            min: histogram.min(),
            p50: histogram.value_at_quantile(0.5),
            p90: histogram.value_at_quantile(0.9),
            p99: histogram.value_at_quantile(0.99),
            p999: histogram.value_at_quantile(0.999),
            max: histogram.max(),
        }
    }
}

/// One round of a floor or a row: the p50 of its burst in that round, and where the two
/// processes ran (see [`pairing`](crate::pairing)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    /// p50 of the round trips of this burst.
    pub p50_ns: u64,
    /// p99 of the round trips of this burst (nearest rank): whether a row's tail sits in a
    /// few rounds or in every one; `null` when unknown.
    pub p99_ns: Option<u64>,
    /// For a row: the p50 of its floor's burst in the same round, the denominator of this
    /// round's ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor_p50_ns: Option<u64>,
    /// The CPU the client ran on at the end of the burst (`sched_getcpu`), when known.
    pub client_cpu: Option<u32>,
    /// The CPU the server last ran on at the end of the burst (`/proc/PID/stat`), when known.
    pub server_cpu: Option<u32>,
    /// Involuntary context switches of the client thread and the server during the burst's
    /// timed round trips: how often another task took a CPU from either side. Zero on a quiet
    /// machine with pinned processes; `null` when unknown.
    pub preemptions: Option<u64>,
    /// Which generation (set of freshly spawned servers, counted from 0) measured this round;
    /// `ratio_ci` treats the rounds of one generation as alike (see
    /// [`pairing::paired_ratio_by_generation`](crate::pairing::paired_ratio_by_generation)).
    pub generation: u32,
    /// The machine's state at the start of the round: the p50 round trip of 4 KiB between the first
    /// two allowed CPUs, in nanoseconds ([`RoundProbe`](super::crosscore::RoundProbe)), the same
    /// figure in the floor's round and in every row's. `null` when the process may use one CPU,
    /// and when the probe got no answer in time.
    pub probe_ns: Option<u64>,
    /// How fast the second of those CPUs (the server's under `split`) computed right after the
    /// probe: the median time of a short copy there, in nanoseconds
    /// ([`compute_ns`](super::crosscore::compute_ns)). Absent where `probe_ns` is `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_ns: Option<u64>,
    /// Which of the run's [`Machine::states`] the round ran in (see [`states`](super::states));
    /// `null` when unknown.
    pub state: Option<u32>,
}

/// Share of `rounds` in which client and server were seen on the same CPU, among the rounds
/// where both are known; `None` when none is.
pub fn shared_core_share(rounds: &[Round]) -> Option<f64> {
    let known: Vec<bool> =
        rounds.iter().filter_map(|r| Some(r.client_cpu? == r.server_cpu?)).collect();
    (!known.is_empty())
        .then(|| known.iter().filter(|&&same| same).count() as f64 / known.len() as f64)
}

/// Share of `rounds` in which another task took a CPU from the client or the server at least
/// [`CONTENDED_PREEMPTIONS`] times, among the rounds where it is known; `None` when none is.
pub fn contended_share(rounds: &[Round]) -> Option<f64> {
    let known: Vec<bool> =
        rounds.iter().filter_map(|r| Some(r.preemptions? >= CONTENDED_PREEMPTIONS)).collect();
    (!known.is_empty())
        .then(|| known.iter().filter(|&&contended| contended).count() as f64 / known.len() as f64)
}

/// Preemptions in one burst (of 3.75 ms by default) from which the round counts as contended
/// (see [`contended_share`]). Measured here: a quiet machine shows 0–4 per burst with a
/// spinning or hybrid wait (kernel threads and the timer tick), so does one with a single CPU
/// hog running; only heavier contention goes beyond.
pub const CONTENDED_PREEMPTIONS: u64 = 5;

/// The raw-bytes floor for one byte count, transport, wait strategy and placement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineRow {
    /// Bytes moved each way per round trip.
    pub bytes: u64,
    /// Transport of the raw echo: `pipe` (plain `read`/`write`), `shm-sem` or `shm-ring` (the
    /// same bytes through the link, no framing).
    #[serde(with = "key::as_text")]
    pub transport: TransportKind,
    /// Wait strategy of both sides.
    #[serde(with = "key::as_text")]
    pub wait: Wait,
    /// Placement: `free`, `same` or `split`.
    #[serde(with = "key::as_text")]
    pub pin: Placement,
    /// True when the client lent its pages to the pipe with `vmsplice` instead of copying
    /// them, as [`peerpipe::Peer::call`] does for zero-copy payloads of at least
    /// [`peerpipe::peer::LEND_MIN_BYTES`]: the floor moves the bytes the cheapest way the
    /// transport knows.
    pub lent: bool,
    /// Timed round trips.
    pub iterations: u64,
    /// Round-trip percentiles over every timed round trip.
    pub rtt_ns: Percentiles,
    /// Each round's burst, in order.
    pub rounds: Vec<Round>,
    /// Share of rounds in which client and server ran on the same CPU (see
    /// [`shared_core_share`]).
    pub shared_core_share: Option<f64>,
    /// The command the floor's server ran through (`--spawn` or `--spawn-floor`, with
    /// `--raw-echo BYTES` appended), when not this binary on this machine: the floor then
    /// costs what the route costs, so the rows' ratios measure framing and conversion only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
}

/// One measured combination.
///
/// In JSON a row also carries what follows from its rounds (see
/// [`states::figures`](super::states::figures)): `added_ns` and `added_ci_ns` (those of its
/// main state, or of all its rounds when they carry no state), `main_state`, and `states`,
/// its figures in each state of the machine. They are written from the rounds every time and
/// not read back; the report's `columns.rs` writes the whole row.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct Row {
    /// What the row measured; in JSON its fields stand in the row's own object (`dtype`,
    /// `elements`, `bytes`, `transport`, `path`, `handler`, `wait`, `pin`), as they always
    /// have.
    #[serde(flatten)]
    pub id: RowId,
    /// Timed round trips.
    pub iterations: u64,
    /// Whole round trip.
    pub rtt_ns: Percentiles,
    /// Round trip − encode − decode − server time: moving bytes and waiting.
    pub transfer_ns: Percentiles,
    /// Client encode.
    pub encode_ns: Percentiles,
    /// Client decode.
    pub decode_ns: Percentiles,
    /// Server time (the replies' `aux`).
    pub server_ns: Percentiles,
    /// Client CPU time (user + system) per round trip.
    #[serde(with = "nan_as_null")]
    pub client_cpu_ns: f64,
    /// Server CPU time (user + system) per round trip; unknown (NaN, `null` in JSON, `-` in
    /// the table) when the spawned process is not the server itself (`--spawn`, e.g. an
    /// `ssh` client whose server runs elsewhere).
    #[serde(with = "nan_as_null")]
    pub server_cpu_ns: f64,
    /// Payload megabytes (10^6) moved per second, both directions, at the p50 round trip.
    #[serde(with = "nan_as_null")]
    pub mb_per_s: f64,
    /// The paired ratio to the floor with the same bytes, transport, wait and placement: the median
    /// over rounds of (this row's p50 ÷ the floor's p50 in the same round); see
    /// [`pairing`](crate::pairing). When the rounds carry machine states, over the rounds of the
    /// row's main state only ([`states::main_state`](super::states::main_state)): ratios of
    /// different states are not one quantity.
    pub ratio_to_baseline: Option<f64>,
    /// The 95 % confidence interval of `ratio_to_baseline`, by rounds and by generation (see
    /// [`pairing::paired_ratio_by_generation`](crate::pairing::paired_ratio_by_generation)),
    /// over the same rounds.
    pub ratio_ci: Option<[f64; 2]>,
    /// Each round's burst, in order, with its floor's p50 in the same round.
    pub rounds: Vec<Round>,
    /// Share of rounds in which client and server ran on the same CPU (see
    /// [`shared_core_share`]).
    pub shared_core_share: Option<f64>,
    /// Under the `auto` wait: what the client's waits did over the timed round trips; `None`
    /// (absent from the JSON) at the other waits.
    pub client_waits: Option<ClientWaits>,
}

impl Row {
    /// What identifies this row (see [`key`]).
    pub fn key(&self) -> RowKey<'_> {
        self.id.key()
    }

    /// The key of the floor this row is measured against: the same bytes (at least one),
    /// transport, wait and placement.
    pub fn floor_key(&self) -> FloorKey {
        FloorKey {
            bytes: self.id.bytes.max(1),
            transport: self.id.transport,
            wait: self.id.wait,
            pin: self.id.pin,
        }
    }

    /// Spread of the per-round p50s (max − min): the noise an absolute comparison allows for.
    pub fn p50_spread_ns(&self) -> u64 {
        round_spread(&self.rounds)
    }
}

impl BaselineRow {
    /// What identifies this floor (see [`key`]).
    pub fn key(&self) -> FloorKey {
        FloorKey { bytes: self.bytes, transport: self.transport, wait: self.wait, pin: self.pin }
    }

    /// Spread of the per-round p50s (max − min).
    pub fn p50_spread_ns(&self) -> u64 {
        round_spread(&self.rounds)
    }

    /// The smallest and largest per-round p50; `None` without rounds.
    pub fn round_p50_range_ns(&self) -> Option<(u64, u64)> {
        let p50s = self.rounds.iter().map(|r| r.p50_ns);
        Some((p50s.clone().min()?, p50s.max()?))
    }
}

/// Unknown measurements are NaN in memory and `null` in JSON (which has no NaN), both ways.
pub(crate) mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            serializer.serialize_f64(*value)
        } else {
            serializer.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }
}

fn round_spread(rounds: &[Round]) -> u64 {
    let p50s = rounds.iter().map(|r| r.p50_ns);
    match (p50s.clone().min(), p50s.max()) {
        (Some(lo), Some(hi)) => hi - lo,
        _ => 0,
    }
}

/// The machine a report was measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu: String,
    /// Logical cores available to this process.
    pub cores: usize,
    /// Kernel release.
    pub kernel: String,
    /// `/proc/sys/fs/pipe-max-size`, when readable.
    pub pipe_max_size: Option<u64>,
    /// Pipe capacity granted to the measured peers, in bytes.
    pub pipe_size_granted: Option<u64>,
    /// Target endianness of this build.
    pub endian: String,
    /// The clock the split was timed with ([`peerpipe::clock::source`]).
    pub clock: String,
    /// The states the machine was in during the run, found in the rounds' probes
    /// ([`states::find`](super::states::find)), fastest first; every round's `state` is an index
    /// into it. Empty when no round was probed.
    pub states: Vec<MachineState>,
}

/// One state of the machine during a run (`machine.states` in the JSON).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineState {
    /// 0 for the fastest state (the smallest probe figures), then 1, 2 in order of cost.
    pub id: u32,
    /// The median of its rounds' probes: the p50 round trip of 4 KiB between the first two
    /// CPUs, in nanoseconds.
    pub probe_ns: u64,
    /// The smallest probe among its rounds.
    pub min_ns: u64,
    /// The largest probe among its rounds.
    pub max_ns: u64,
    /// Rounds in this state, over every group of the run (a round counts once, however many
    /// rows it measured).
    pub rounds: u64,
    /// The median of its rounds' `compute_ns`: how fast the second CPU computed in this state.
    /// Absent when none of its rounds has one. Two reports' states are one state only when
    /// this agrees too ([`across_runs::same_state`](super::across_runs::same_state)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compute_ns: Option<u64>,
}

/// The configuration a report ran with, recorded in full.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// Element counts.
    pub sizes: Vec<u64>,
    /// Dtypes.
    pub dtypes: Vec<String>,
    /// Paths.
    pub paths: Vec<String>,
    /// Handlers.
    pub handlers: Vec<String>,
    /// Wait strategies given, or empty for the default rule (all three up to 65536 elements,
    /// auto above).
    pub waits: Vec<String>,
    /// Placements.
    pub pins: Vec<String>,
    /// Fixed iteration count per row, when given.
    pub iterations: Option<u64>,
    /// Time per row in nanoseconds, when iterations were not fixed.
    pub duration_ns: Option<u64>,
    /// Warm-up time per row in nanoseconds.
    pub warmup_ns: u64,
    /// Rounds per group: every floor and row gets one burst per round, in a random order.
    pub rounds: u32,
    /// Generations per group: the rounds ran on this many sets of freshly spawned servers.
    pub generations: u32,
    /// Seed of the order of bursts within each round.
    pub order_seed: u64,
    /// Busy-wait of every handler server before it answers a request (`--server-delay`), in
    /// nanoseconds; 0 when none.
    pub server_delay_ns: u64,
    /// The server command, when not this binary.
    pub spawn: Option<String>,
    /// Budget per round trip in nanoseconds, for the verdict.
    pub budget_ns: u64,
    /// Pipe capacity requested.
    pub pipe_size: u64,
    /// Transports measured.
    pub transports: Vec<String>,
    /// Bytes per direction of the shared-memory transports.
    pub shm_size: u64,
    /// Hybrid spin budget in nanoseconds.
    pub hybrid_spin_ns: u64,
    /// Busy threads that ran beside the client and servers for the whole run (`--load`); 0
    /// when none.
    pub load: u32,
    /// True when every wait of a placement was measured in the same rounds, so that two waits'
    /// rows can be compared round by round ([`waits::compare`](super::waits::compare)).
    pub waits_share_rounds: bool,
}

/// A whole run: the JSON document `--json` writes and `peer compare` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The crate version that measured it.
    pub peerpipe: String,
    /// Where it ran.
    pub machine: Machine,
    /// How it ran.
    pub config: ConfigRecord,
    /// Raw-bytes floors.
    pub baseline: Vec<BaselineRow>,
    /// Measured combinations.
    pub rows: Vec<Row>,
    /// The synchronisation-cost table (measured when a shared-memory transport is in the run,
    /// or alone with `--sync-costs`); empty otherwise.
    pub sync_costs: Vec<SyncCost>,
    /// Rows that were not measured, each with why: the handler cannot serve them (found by
    /// a probe call before the group starts, e.g. `lorenz96` with f32 or fewer than 4
    /// elements), or their group failed mid-run.
    pub skipped: Vec<Skipped>,
}

/// A row of the plan that has no measurement, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// What the row would have measured; in JSON its fields stand in this entry's own object,
    /// as in a row's.
    #[serde(flatten)]
    pub id: RowId,
    /// Why: the server's ERROR message or the client's own error, as printed.
    pub reason: String,
    /// True when the row could have been measured but its group failed (the run then exits
    /// non-zero); false when the handler cannot serve it (no error).
    pub failed: bool,
}

impl Skipped {
    /// What identifies the row that was skipped (see [`key`]).
    pub fn key(&self) -> RowKey<'_> {
        self.id.key()
    }

    /// `f64 x 1 lorenz96 zero-copy, pipe, hybrid, split`.
    pub fn label(&self) -> String {
        format!(
            "{} x {} {} {}, {}, {}, {}",
            self.id.dtype,
            self.id.elements,
            self.id.handler,
            self.id.path,
            self.id.transport,
            self.id.wait,
            self.id.pin
        )
    }
}

#[cfg(test)]
impl Report {
    /// A report of `baseline` and `rows` alone, for unit tests: the machine and the
    /// configuration left at their defaults, nothing skipped.
    pub(crate) fn of(baseline: Vec<BaselineRow>, rows: Vec<Row>) -> Report {
        Report {
            peerpipe: "0".into(),
            machine: Default::default(),
            config: Default::default(),
            baseline,
            rows,
            sync_costs: vec![],
            skipped: vec![],
        }
    }
}

impl Report {
    /// The baseline with the same bytes, transport, wait and placement as `row`.
    pub fn baseline_for(&self, row: &Row) -> Option<&BaselineRow> {
        let key = row.floor_key();
        self.baseline.iter().find(|b| b.key() == key)
    }
}

/// What the client's waits under `auto` did over a row's timed round trips (the settle round
/// trips before each burst left out): the counts of [`AutoCounts`], under its names in the
/// JSON (`spun`, `hits`, ...), and the moves of the client's thread to an idle CPU (`moves`).
/// A round trip whose reply was there at the first poll did not wait and is in none of them.
/// Read back, every count must be there, and nothing else.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientWaits {
    /// The counts of the waits.
    pub counts: AutoCounts,
    /// Moves of the client's thread to an idle CPU ([`Peer::moves`]).
    pub moves: u64,
}

impl Serialize for ClientWaits {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.counts.fields().count() + 1))?;
        for (name, value) in self.counts.fields() {
            map.serialize_entry(name, &value)?;
        }
        map.serialize_entry("moves", &self.moves)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for ClientWaits {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Counts;
        impl<'de> serde::de::Visitor<'de> for Counts {
            type Value = ClientWaits;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("the counts of the client's waits")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ClientWaits, A::Error> {
                use serde::de::Error as _;
                let mut waits = ClientWaits::default();
                let mut seen = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    match (key.as_str(), waits.counts.field_mut(&key)) {
                        ("moves", _) => waits.moves = map.next_value()?,
                        (_, Some(count)) => *count = map.next_value()?,
                        (_, None) => return Err(A::Error::unknown_field(&key, &[])),
                    }
                    seen.push(key);
                }
                let names = waits.counts.fields().map(|(name, _)| name).chain(["moves"]);
                match names.into_iter().find(|name| !seen.iter().any(|s| s == name)) {
                    Some(missing) => Err(A::Error::missing_field(missing)),
                    None => Ok(waits),
                }
            }
        }
        deserializer.deserialize_map(Counts)
    }
}

impl ClientWaits {
    /// What `peer`'s waits have done since it started.
    pub fn of(peer: &Peer) -> ClientWaits {
        ClientWaits { counts: peer.auto_wait().counts(), moves: peer.moves() }
    }

    /// Adds what happened between `before` and `after` (two [`ClientWaits::of`] the same
    /// peer, in that order).
    pub fn add_between(&mut self, before: &ClientWaits, after: &ClientWaits) {
        self.counts.add_between(&before.counts, &after.counts);
        self.moves += after.moves.saturating_sub(before.moves);
    }

    /// Waits in all: those that spun and those that did not.
    pub fn waits(&self) -> u64 {
        self.counts.spun + self.counts.slept_at_once
    }
}

#[cfg(test)]
mod tests {
    use peerpipe::stats::new_histogram;

    use super::*;

    #[test]
    fn percentiles_of_known_samples() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let p = Percentiles::of(&h);
        assert_eq!(p.min, 1000);
        assert!((1_000_000..=1_001_000).contains(&p.max), "{p:?}"); // 3 significant digits
        // 3 significant digits: p50 of 1000..1_000_000 step 1000 is 500_000 within 0.1 %.
        assert!((p.p50 as f64 - 500_000.0).abs() <= 500.0, "{p:?}");
        assert!((p.p90 as f64 - 900_000.0).abs() <= 900.0, "{p:?}");
        assert!((p.p99 as f64 - 990_000.0).abs() <= 990.0, "{p:?}");
        assert!((p.p999 as f64 - 999_000.0).abs() <= 999.0, "{p:?}");
    }

    #[test]
    fn empty_histogram_gives_zeros() {
        assert_eq!(Percentiles::of(&new_histogram()), Percentiles::default());
    }

    #[test]
    fn client_waits_add_what_happened_between_two_counts() {
        let waits = |counts: AutoCounts, moves| ClientWaits { counts, moves };
        let before =
            waits(AutoCounts { spun: 10, hits: 9, slept_at_once: 5, ..AutoCounts::default() }, 1);
        let after = waits(
            AutoCounts {
                spun: 30,
                hits: 27,
                slept_at_once: 65,
                probes: 2,
                ..AutoCounts::default()
            },
            1,
        );
        let mut sum = ClientWaits::default();
        sum.add_between(&before, &after);
        sum.add_between(&before, &after);
        assert_eq!(
            sum,
            waits(
                AutoCounts {
                    spun: 40,
                    hits: 36,
                    slept_at_once: 120,
                    probes: 4,
                    ..AutoCounts::default()
                },
                0
            )
        );
    }

    #[test]
    fn client_waits_keep_their_json_names_and_order_and_refuse_other_counts() {
        let mut counts = AutoCounts::default();
        let names: Vec<_> = counts.fields().map(|(name, _)| name).collect();
        for (i, name) in names.iter().enumerate() {
            *counts.field_mut(name).unwrap() = i as u64 + 1;
        }
        let waits = ClientWaits { counts, moves: 9 };
        let json = serde_json::to_string(&waits).unwrap();
        assert_eq!(
            json,
            "{\"spun\":1,\"hits\":2,\"slept_at_once\":3,\"probes\":4,\"stopped_spinning\":5,\
             \"contended\":6,\"dear_yields\":7,\"moves\":9}"
        );
        assert_eq!(serde_json::from_str::<ClientWaits>(&json).unwrap(), waits);
        let older = "{\"spun\":1,\"hits\":2,\"slept_at_once\":3,\"probes\":4,\"stopped_spinning\":5,\
                     \"contended\":6,\"moves\":9}";
        let err = serde_json::from_str::<ClientWaits>(older).unwrap_err().to_string();
        assert!(err.contains("missing field `dear_yields`"), "{err}");
        let other = json.replace("\"moves\"", "\"jumps\"");
        let err = serde_json::from_str::<ClientWaits>(&other).unwrap_err().to_string();
        assert!(err.contains("unknown field `jumps`"), "{err}");
    }
}
