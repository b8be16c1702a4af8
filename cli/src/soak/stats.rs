//! The buckets every request of a soak ends in.

use hdrhistogram::Histogram;

use peerpipe::stats::new_histogram;

/// How many corrupted replies are described in full in the report.
pub(super) const KEPT_MISMATCHES: usize = 8;

// Statistics

/// Requests and elements of one [`ValueKind`](super::ValueKind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCount {
    /// Requests sent.
    pub requests: u64,
    /// Elements sent.
    pub elements: u64,
}

/// What a client did and found, warm-up included (latencies exclude warm-up).
#[derive(Clone, Debug)]
pub struct Stats {
    /// DATA requests sent in full.
    pub requests: u64,
    /// DATA replies received (well-formed frames with the expected seq, dtype and count).
    pub replies: u64,
    /// Replies identical to what was sent, bit for bit.
    pub verified: u64,
    /// Requests whose reply never came back to be checked.
    pub lost: u64,
    /// Replies that carried another seq than the oldest request in flight.
    pub reordered: u64,
    /// Replies whose bits, dtype or count differ from what was sent.
    pub corrupted: u64,
    /// Payload bytes sent in requests.
    pub bytes_sent: u64,
    /// Payload bytes received in replies.
    pub bytes_received: u64,
    /// Requests and elements by kind, in [`ValueKind::ALL`](super::ValueKind::ALL) order.
    pub by_kind: [KindCount; 4],
    /// Elements drawn from the special patterns (NaN payloads, signalling NaNs, ±0, subnormals,
    /// ±inf, extremes); arbitrary bit patterns add more NaNs and subnormals on top.
    pub special_elements: u64,
    /// Batches of one request, then its reply.
    pub single_batches: u64,
    /// Pipelined batches (2 to [`MAX_PIPELINE_DEPTH`](super::client::MAX_PIPELINE_DEPTH) requests,
    /// or fewer when the transport bounds them, then their replies).
    pub pipelined_batches: u64,
    /// Requests sent on the zero-copy path.
    pub zero_copy_requests: u64,
    /// Requests sent through the codec.
    pub codec_requests: u64,
    /// The largest request, in elements.
    pub largest_elements: u64,
    /// Round trips of single batches, in nanoseconds.
    pub single_latency: Histogram<u64>,
    /// Send-to-reply times of pipelined requests (queueing behind earlier ones included).
    pub pipelined_latency: Histogram<u64>,
    /// The first few corrupted replies, described.
    pub mismatches: Vec<String>,
    /// Errors that ended a conversation (at most one per client).
    pub errors: Vec<String>,
}

impl Default for Stats {
    fn default() -> Self {
        Stats::new()
    }
}

impl Stats {
    /// Empty statistics.
    pub fn new() -> Stats {
        Stats {
            requests: 0,
            replies: 0,
            verified: 0,
            lost: 0,
            reordered: 0,
            corrupted: 0,
            bytes_sent: 0,
            bytes_received: 0,
            by_kind: [KindCount::default(); 4],
            special_elements: 0,
            single_batches: 0,
            pipelined_batches: 0,
            zero_copy_requests: 0,
            codec_requests: 0,
            largest_elements: 0,
            single_latency: new_histogram(),
            pipelined_latency: new_histogram(),
            mismatches: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &Stats) {
        self.requests += other.requests;
        self.replies += other.replies;
        self.verified += other.verified;
        self.lost += other.lost;
        self.reordered += other.reordered;
        self.corrupted += other.corrupted;
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        for (mine, theirs) in self.by_kind.iter_mut().zip(&other.by_kind) {
            mine.requests += theirs.requests;
            mine.elements += theirs.elements;
        }
        self.special_elements += other.special_elements;
        self.single_batches += other.single_batches;
        self.pipelined_batches += other.pipelined_batches;
        self.zero_copy_requests += other.zero_copy_requests;
        self.codec_requests += other.codec_requests;
        self.largest_elements = self.largest_elements.max(other.largest_elements);
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.single_latency.add(&other.single_latency);
        let _ = self.pipelined_latency.add(&other.pipelined_latency);
        let room = KEPT_MISMATCHES.saturating_sub(self.mismatches.len());
        self.mismatches.extend(other.mismatches.iter().take(room).cloned());
        self.errors.extend(other.errors.iter().cloned());
    }

    /// True when every request sent came back verified and nothing went wrong.
    pub fn is_clean(&self) -> bool {
        self.lost == 0
            && self.reordered == 0
            && self.corrupted == 0
            && self.errors.is_empty()
            && self.verified == self.requests
    }

    /// Requests not yet accounted for: `requests − verified − corrupted − reordered − lost`.
    /// Zero whenever no batch is half done.
    pub fn unaccounted(&self) -> i128 {
        i128::from(self.requests)
            - i128::from(self.verified)
            - i128::from(self.corrupted)
            - i128::from(self.reordered)
            - i128::from(self.lost)
    }
}
