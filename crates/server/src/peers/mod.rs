//! The connections between ensemble members: one TCP connection per pair of servers, FIFO in
//! each direction, carrying opaque frames (the Zab codec sits above). This is the I/O half of
//! Zab's contract (`zab` crate docs): messages of one connection arrive in order, and a broken
//! connection is reported before anything newer from that peer.
//!
//! * The lower server id dials, the higher accepts, so a pair never has two connections.
//! * A dialer retries with backoff until the peer is back; the acceptor waits for it.
//! * Each peer has a bounded outbound queue. A frame that does not fit breaks the connection
//!   (Zab sees a disconnect), because dropping it silently would break FIFO.
//! * The core's frames of one turn go out together at its end ([`Transport::flush`]): on a
//!   plaintext connection whose queue is empty the core writes them itself
//!   ([`crate::shared_socket`]), otherwise they join the queue as one item.
//!
//! [`transport`] runs the connections, [`handshake`] is the first exchange on each,
//! [`framing`] reads and writes length-prefixed frames ([`peer_frame`]: a small one needs no
//! allocation), [`tls`] wraps them in mutual TLS when
//! `sslQuorum=true`.

pub mod framing;
pub mod handshake;
pub mod peer_frame;
pub mod tls;
pub mod transport;

pub use peer_frame::PeerFrame;
pub use tls::QuorumTls;
pub use transport::{PeerEvent, PeerQueues, Transport, TransportConfig, PEER_QUEUE_FRAMES};

/// A server's id: the N of `server.N` and of its `myid` file.
pub type Sid = u64;
