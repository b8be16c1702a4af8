//! [`Cpus`]: what placement and the `auto` wait read of the system.

/// What placement and the `auto` wait read of the system; [`Os`](super::Os) is the real one.
// `pub` in a crate-private module: it bounds `AutoWaiter`, which `Transport::auto_wait` returns.
pub trait Cpus {
    /// The CPU this thread runs on.
    fn current(&mut self) -> Option<usize>;
    /// The CPU the peer ran on last, and whether it is runnable now (`/proc/PID/stat`).
    fn peer(&mut self) -> Option<(usize, bool)>;
    /// The CPUs this thread may run on, in order; `None` when its mask cannot be read.
    fn allowed(&mut self) -> Option<impl Iterator<Item = usize>>;
    /// Replaces `times` with `(cpu, idle, total)` per CPU, in any unit from any start (`/proc/stat`).
    fn times(&mut self, times: &mut Vec<(usize, u64, u64)>);
    /// Tasks runnable on the machine now, this thread among them (`/proc/loadavg`).
    fn runnable(&mut self) -> Option<usize>;
    /// Moves this thread to `cpu`, leaving its affinity mask as it was. Whether it moved.
    fn move_to(&mut self, cpu: usize) -> bool;
    /// Whether this thread and the peer may each run on one CPU only, the same one.
    fn confined_with_peer(&mut self) -> bool;
}
