//! The records of `zookeeper.jute`, field for field.

use crate::jute::{DecodeError, IdText, Reader, Record, Writer};
use crate::jute_record;

/// A znode's data: `None` is Java's `null`, which is stored and returned as such.
pub type Data = Option<Vec<u8>>;

/// A shared, immutable ACL list: a transaction and the tree hold one copy of a common list.
/// `Arc<Vec>` rather than `Arc<[Acl]>`: a thin pointer, so each znode spends 8 bytes on its
/// ACL, not 16.
pub type AclList = std::sync::Arc<Vec<Acl>>;

jute_record! {
    /// An identity: scheme (`world`, `auth`, `digest`, `ip`, `super`, ...) and id. The common
    /// values decode without allocating ([`crate::jute::IdText`]).
    pub struct Id { pub scheme: IdText, pub id: IdText }
    min_len = 8
}

jute_record! {
    /// One access-control entry: permission bits for an identity.
    pub struct Acl { pub perms: i32, pub id: Id }
    min_len = 12
}

jute_record! {
    /// The metadata of a znode as clients see it (68 bytes on the wire).
    pub struct Stat {
        pub czxid: i64,
        pub mzxid: i64,
        pub ctime: i64,
        pub mtime: i64,
        pub version: i32,
        pub cversion: i32,
        pub aversion: i32,
        pub ephemeral_owner: i64,
        pub data_length: i32,
        pub num_children: i32,
        pub pzxid: i64,
    }
    min_len = 68
}

jute_record! {
    /// The metadata ZooKeeper stores: Stat without the derived dataLength and numChildren.
    pub struct StatPersisted {
        pub czxid: i64,
        pub mzxid: i64,
        pub ctime: i64,
        pub mtime: i64,
        pub version: i32,
        pub cversion: i32,
        pub aversion: i32,
        pub ephemeral_owner: i64,
        pub pzxid: i64,
    }
    min_len = 60
}

jute_record! {
    pub struct RequestHeader { pub xid: i32, pub op_type: i32 }
    min_len = 8
}

jute_record! {
    pub struct ReplyHeader { pub xid: i32, pub zxid: i64, pub err: i32 }
    min_len = 16
}

jute_record! {
    pub struct WatcherEvent { pub event_type: i32, pub state: i32, pub path: String }
    min_len = 12
}

/// The first message of a connection. `read_only` is absent in old clients' requests; the
/// server mirrors its presence in the response (`ProtocolManager`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    pub protocol_version: i32,
    pub last_zxid_seen: i64,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    pub read_only: Option<bool>,
}

impl Record for ConnectRequest {
    fn encode(&self, w: &mut Writer) {
        w.write_i32(self.protocol_version);
        w.write_i64(self.last_zxid_seen);
        w.write_i32(self.timeout_ms);
        w.write_i64(self.session_id);
        w.write_buffer(Some(&self.passwd));
        if let Some(ro) = self.read_only {
            w.write_bool(ro);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectRequest {
            protocol_version: r.read_i32()?,
            last_zxid_seen: r.read_i64()?,
            timeout_ms: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?.unwrap_or_default().to_vec(),
            read_only: if r.remaining() > 0 {
                Some(r.read_bool()?)
            } else {
                None
            },
        })
    }
}

/// The server's answer to [`ConnectRequest`]; `read_only` is written only if the request had it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    pub protocol_version: i32,
    pub timeout_ms: i32,
    pub session_id: i64,
    pub passwd: Vec<u8>,
    pub read_only: Option<bool>,
}

impl Record for ConnectResponse {
    fn encode(&self, w: &mut Writer) {
        w.write_i32(self.protocol_version);
        w.write_i32(self.timeout_ms);
        w.write_i64(self.session_id);
        w.write_buffer(Some(&self.passwd));
        if let Some(ro) = self.read_only {
            w.write_bool(ro);
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(ConnectResponse {
            protocol_version: r.read_i32()?,
            timeout_ms: r.read_i32()?,
            session_id: r.read_i64()?,
            passwd: r.read_buffer()?.unwrap_or_default().to_vec(),
            read_only: if r.remaining() > 0 {
                Some(r.read_bool()?)
            } else {
                None
            },
        })
    }
}

jute_record! {
    pub struct SetWatches {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
    }
    min_len = 20
}

jute_record! {
    pub struct SetWatches2 {
        pub relative_zxid: i64,
        pub data_watches: Vec<String>,
        pub exist_watches: Vec<String>,
        pub child_watches: Vec<String>,
        pub persistent_watches: Vec<String>,
        pub persistent_recursive_watches: Vec<String>,
    }
    min_len = 28
}

jute_record! {
    pub struct MultiHeader { pub op_type: i32, pub done: bool, pub err: i32 }
    min_len = 9
}

jute_record! {
    pub struct AuthPacket { pub auth_type: i32, pub scheme: String, pub auth: Data }
    min_len = 12
}

jute_record! {
    pub struct PathAndWatch { pub path: String, pub watch: bool }
    min_len = 5
}

jute_record! {
    pub struct SetDataRequest { pub path: String, pub data: Data, pub version: i32 }
    min_len = 12
}

jute_record! {
    pub struct ReconfigRequest {
        pub joining_servers: Option<String>,
        pub leaving_servers: Option<String>,
        pub new_members: Option<String>,
        pub cur_config_id: i64,
    }
    min_len = 20
}

jute_record! {
    pub struct StatResponse { pub stat: Stat }
    min_len = 68
}

jute_record! {
    pub struct CreateRequest { pub path: String, pub data: Data, pub acl: Vec<Acl>, pub flags: i32 }
    min_len = 16
}

jute_record! {
    pub struct CreateTtlRequest {
        pub path: String,
        pub data: Data,
        pub acl: Vec<Acl>,
        pub flags: i32,
        pub ttl: i64,
    }
    min_len = 24
}

jute_record! {
    /// delete, check (CheckVersionRequest): a path and an expected version.
    pub struct PathAndVersion { pub path: String, pub version: i32 }
    min_len = 8
}

jute_record! {
    /// A request or reply that is just a path (sync, getACL, getAllChildrenNumber, getEphemerals).
    pub struct PathRecord { pub path: String }
    min_len = 4
}

jute_record! {
    pub struct SetAclRequest { pub path: String, pub acl: Vec<Acl>, pub version: i32 }
    min_len = 12
}

jute_record! {
    pub struct AddWatchRequest { pub path: String, pub mode: i32 }
    min_len = 8
}

jute_record! {
    /// checkWatches and removeWatches.
    pub struct PathAndWatcherType { pub path: String, pub watcher_type: i32 }
    min_len = 8
}

jute_record! {
    pub struct ErrorResponse { pub err: i32 }
    min_len = 4
}

jute_record! {
    pub struct Create2Response { pub path: String, pub stat: Stat }
    min_len = 72
}

jute_record! {
    pub struct GetDataResponse { pub data: Data, pub stat: Stat }
    min_len = 72
}

jute_record! {
    pub struct GetChildrenResponse { pub children: Vec<String> }
    min_len = 4
}

jute_record! {
    pub struct GetChildren2Response { pub children: Vec<String>, pub stat: Stat }
    min_len = 72
}

jute_record! {
    pub struct GetAclResponse { pub acl: Vec<Acl>, pub stat: Stat }
    min_len = 72
}

jute_record! {
    pub struct GetAllChildrenNumberResponse { pub total_number: i32 }
    min_len = 4
}

jute_record! {
    pub struct GetEphemeralsResponse { pub ephemerals: Vec<String> }
    min_len = 4
}

jute_record! {
    /// One authenticated identity of a session, as whoAmI reports it.
    pub struct ClientInfo { pub auth_scheme: String, pub user: String }
    min_len = 8
}

jute_record! {
    pub struct WhoAmIResponse { pub client_info: Vec<ClientInfo> }
    min_len = 4
}
