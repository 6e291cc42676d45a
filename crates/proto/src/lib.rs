//! The ZooKeeper client wire format (Jute over length-prefixed TCP frames).
//!
//! Pure data and codecs: no sockets, no runtime. Shared by the server, the client and the tests.
//!
//! # Layout
//! * [`jute`]: the primitive encoding (big-endian ints, length-prefixed buffers and vectors) and
//!   the [`jute::Record`] trait every message implements.
//! * [`records`]: the records of `zookeeper.jute` (Stat, ACL, headers, request and reply bodies).
//! * [`txn`]: the transaction records the server logs and replicates.
//! * [`request`]: a decoded client request, dispatched on its op code.
//! * [`response`]: a reply body, encoded per op code.
//! * [`multi`]: the multi / multiRead envelope with ZooKeeper's per-op result encoding.
//! * [`op_code`], [`error_code`], [`watch`]: the numeric enums, matching `ZooDefs`,
//!   `KeeperException.Code` and `Watcher`.
//! * [`frame`]: splitting a byte stream into frames with the `jute.maxbuffer` limit.
//! * [`limits`]: every size limit the decoder enforces.

pub mod error_code;
pub mod frame;
pub mod jute;
pub mod limits;
pub mod multi;
pub mod op_code;
pub mod records;
pub mod request;
pub mod response;
pub mod txn;
pub mod watch;

pub use error_code::ErrorCode;
pub use jute::{DecodeError, Reader, Record, Writer};
pub use op_code::OpCode;
pub use records::*;
