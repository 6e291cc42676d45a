//! The time an input happens at, as the host read it: the replica never reads a clock.

/// Both clocks at the moment of one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Now {
    /// Monotonic milliseconds since the server started: timeouts, expiry, latencies.
    pub mono_ms: u64,
    /// Wall-clock milliseconds since the Unix epoch: znodes' ctime and mtime, `cons` times.
    pub wall_ms: i64,
}
