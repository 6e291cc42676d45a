//! Every bound the client keeps, in one place.

/// Requests accepted by the client but not yet handed to a connection: callers wait (async) or
/// block (blocking API) beyond this, so a fast producer cannot grow memory without bound.
pub const SUBMIT_QUEUE_LEN_MAX: usize = 1024;

/// Requests written to the server and not yet answered. ZooKeeper's own per-connection limit is
/// far above any useful pipeline depth; this keeps the pending queue bounded.
pub const IN_FLIGHT_MAX: usize = 8192;

/// Frames queued for the socket writer: in-flight requests plus pings, auth and setWatches.
pub const WRITE_QUEUE_LEN_MAX: usize = IN_FLIGHT_MAX + 256;

/// `ClientCnxn.SET_WATCHES_MAX_LENGTH`: the summed path length of one setWatches batch.
pub const SET_WATCHES_BATCH_BYTES_MAX: usize = 128 * 1024;

/// Events a persistent watch buffers for a consumer that has not read them yet. A consumer
/// this far behind loses the watch: its stream ends (see [`crate::watch`]).
pub const PERSISTENT_WATCH_QUEUE_LEN_MAX: usize = 4096;

/// Session state transitions kept for a slow reader of [`crate::Client::session_events`];
/// older ones are reported as lagged, the current state is always readable.
pub const SESSION_EVENT_QUEUE_LEN_MAX: usize = 64;

/// The largest frame accepted from a server: jute.maxbuffer plus room for headers.
pub const FRAME_LEN_MAX: usize = proto::limits::JUTE_MAX_BUFFER_DEFAULT as usize + 1024;

/// Pause between two passes over the server list when none answers, so a client with no
/// reachable server does not spin: it starts short, because an ensemble electing a leader
/// serves again within tens of milliseconds, and doubles up to the maximum.
pub const RECONNECT_PAUSE_MIN_MS: u64 = 10;
pub const RECONNECT_PAUSE_MAX_MS: u64 = 1000;

/// While connected to a read-only server, the client asks the other servers whether they serve
/// read-write (`isro`), as ZooKeeper's `ClientCnxn.pingRwServer` does: first after this long,
/// the wait doubling up to the maximum (`minPingRwTimeout`, `maxPingRwTimeout`).
pub const READ_WRITE_PROBE_MIN_MS: u64 = 100;
pub const READ_WRITE_PROBE_MAX_MS: u64 = 60_000;

/// How long one `isro` question may take before that server counts as not read-write.
pub const READ_WRITE_PROBE_TIMEOUT_MS: u64 = 1000;
