//! Every bound the I/O shell enforces, in one place (STYLE.md: everything is bounded); the
//! replica's own are in `replica::limits`.

/// Requests a single connection may have in flight before the server stops reading from it.
pub const CONNECTION_REQUESTS_IN_FLIGHT_MAX: usize = 1000;

/// Messages queued from all connections to the core before readers wait.
pub const CORE_QUEUE_LEN_MAX: usize = 4096;

/// Bytes of replies and events queued for one connection that is not reading them. Past this
/// the client is too slow to keep up and its connection is closed (its session survives).
pub const CONNECTION_OUTBOUND_BYTES_MAX: usize = 64 << 20;

/// Socket read chunk.
pub const READ_CHUNK_BYTES: usize = 64 << 10;

/// Largest batch of replies written with one syscall.
pub const WRITE_BATCH_BYTES_MAX: usize = 256 << 10;

const _: () = assert!(WRITE_BATCH_BYTES_MAX < CONNECTION_OUTBOUND_BYTES_MAX);

/// Peer transport events queued for the core at most; beyond it the peers wait (TCP
/// backpressure) instead of memory growing.
pub const PEER_EVENTS_QUEUE_LEN_MAX: usize = 4096;

/// How often an ensemble member drives Zab's timers.
pub const ZAB_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// A TLS client must finish its handshake within this, or its connection is closed (a client
/// that opens a socket and says nothing must not hold a handshake forever).
pub const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Open HTTP connections (Prometheus endpoint, AdminServer) per listener; more wait in the
/// kernel's accept queue.
pub const HTTP_CONNECTIONS_MAX: usize = 64;

/// An HTTP client must send its request head within this.
pub const HTTP_HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a leadership hand-over may take before it is abandoned: two ticks (the
/// successor needs one round trip and an fsync), at least 200 ms and at most 5 s, so that a
/// SIGTERM never waits long for it.
pub fn hand_over_within_ms(tick_time_ms: u32) -> u64 {
    (u64::from(tick_time_ms) * 2).clamp(200, 5_000)
}

/// Inputs one turn of the core's loop handles at most before it sends the turn's peer frames:
/// enough to batch a busy server's replication traffic, few enough that a frame never waits
/// behind a long run of inputs.
pub const CORE_TURN_INPUTS_MAX: usize = 64;

/// A turn of the core's loop that follows one of at least this many inputs lets every other
/// ready task run before it gathers its inputs (see `run_core`). Under load that turns about
/// eight inputs a turn into about twenty-five, so each peer frame and wake-up carries three times
/// the writes; a lone client's turns hold one to three inputs and never wait.
pub const CORE_GATHER_AFTER_INPUTS: usize = 4;

/// Client connections with frames in a turn of the core that are written before the turn's
/// peer frames; with more, the peers' go first (see `Core::flush`).
pub const REPLIES_BEFORE_PEERS_MAX: usize = 1;
