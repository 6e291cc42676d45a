//! Every bound the replica enforces, in one place (STYLE.md: everything is bounded).

/// Sessions expired per tick, so that a mass expiry cannot stall the server for long.
pub const EXPIRIES_PER_TICK_MAX: usize = 10_000;

/// Watches one connection may register; past it further watch requests still succeed as reads
/// but register nothing (logged), so a client cannot grow server memory without bound.
pub const WATCHES_PER_CONNECTION_MAX: usize = 1_000_000;

/// Leader digests kept for zxids this learner has not applied yet.
pub const DIGEST_CHECKS_MAX: usize = 64;

/// Handshakes a member without a leader holds (see `ensemble::hold`); past it new clients are
/// refused (their connection closed, logged) and try another server. The server's own limit
/// on connections bounds them already; this keeps the hold bounded on its own.
pub const HELD_CONNECTS_MAX: usize = 60_000;

/// Sessions whose highest taken cxid a leader remembers beyond the live ones (see
/// `Ensemble::taken_cxid`): past it, the entries of ended sessions are dropped.
pub const TAKEN_SESSIONS_MAX: usize = 100_000;

/// Session owners (for SessionMoved) a leader keeps beyond twice its live sessions before it
/// drops those of sessions the tree does not hold (local sessions of other members, closed
/// ones); see `Replica::forget_owners_of_ended_sessions`.
pub const OWNERS_SLACK_MAX: usize = 10_000;
