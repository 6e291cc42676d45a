//! Transactions: the fully computed, idempotent state changes the server logs and replicates
//! (`org.apache.zookeeper.txn` in `zookeeper.jute`). A transaction is what prep produced from a
//! request; applying it needs no further decisions.

use crate::jute::{DecodeError, Reader, Record, Writer};
use crate::jute_record;
use crate::op_code::OpCode;
use crate::records::{Acl, AclList, Data};

jute_record! {
    /// Who asked (session, cxid), where it lands in the order (zxid), when (leader time, ms since
    /// the epoch; becomes ctime/mtime), and what kind of transaction follows.
    pub struct TxnHeader { pub client_id: i64, pub cxid: i32, pub zxid: i64, pub time: i64, pub op_type: i32 }
    min_len = 32
}

jute_record! {
    pub struct CreateTxn {
        pub path: String,
        pub data: Data,
        pub acl: AclList,
        pub ephemeral: bool,
        pub parent_cversion: i32,
    }
    min_len = 17
}

jute_record! {
    pub struct CreateTtlTxn {
        pub path: String,
        pub data: Data,
        pub acl: AclList,
        pub parent_cversion: i32,
        pub ttl: i64,
    }
    min_len = 24
}

jute_record! {
    pub struct CreateContainerTxn {
        pub path: String,
        pub data: Data,
        pub acl: AclList,
        pub parent_cversion: i32,
    }
    min_len = 16
}

jute_record! {
    pub struct DeleteTxn { pub path: String }
    min_len = 4
}

jute_record! {
    pub struct SetDataTxn { pub path: String, pub data: Data, pub version: i32 }
    min_len = 12
}

jute_record! {
    pub struct CheckVersionTxn { pub path: String, pub version: i32 }
    min_len = 8
}

jute_record! {
    pub struct SetAclTxn { pub path: String, pub acl: AclList, pub version: i32 }
    min_len = 12
}

jute_record! {
    pub struct CreateSessionTxn { pub timeout_ms: i32 }
    min_len = 4
}

jute_record! {
    /// The ephemerals to delete with the session, listed by prep so replay needs no lookup.
    pub struct CloseSessionTxn { pub paths_to_delete: Vec<String> }
    min_len = 4
}

jute_record! {
    pub struct ErrorTxn { pub err: i32 }
    min_len = 4
}

jute_record! {
    /// One element of a multi transaction: its type and its encoded body.
    pub struct TypedTxn { pub op_type: i32, pub data: Data }
    min_len = 8
}

jute_record! {
    pub struct TxnDigest { pub version: i32, pub tree_digest: i64 }
    min_len = 12
}

/// A transaction body, one variant per transaction type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnBody {
    Create(CreateTxn),
    /// Same body as create; the type tells apply to answer with a Stat.
    Create2(CreateTxn),
    CreateContainer(CreateContainerTxn),
    CreateTtl(CreateTtlTxn),
    Delete(DeleteTxn),
    DeleteContainer(DeleteTxn),
    SetData(SetDataTxn),
    SetAcl(SetAclTxn),
    Check(CheckVersionTxn),
    Multi(Vec<TxnBody>),
    CreateSession(CreateSessionTxn),
    CloseSession(CloseSessionTxn),
    Error(ErrorTxn),
}

impl TxnBody {
    pub fn op_type(&self) -> i32 {
        let op = match self {
            TxnBody::Create(_) => OpCode::Create,
            TxnBody::Create2(_) => OpCode::Create2,
            TxnBody::CreateContainer(_) => OpCode::CreateContainer,
            TxnBody::CreateTtl(_) => OpCode::CreateTtl,
            TxnBody::Delete(_) => OpCode::Delete,
            TxnBody::DeleteContainer(_) => OpCode::DeleteContainer,
            TxnBody::SetData(_) => OpCode::SetData,
            TxnBody::SetAcl(_) => OpCode::SetAcl,
            TxnBody::Check(_) => OpCode::Check,
            TxnBody::Multi(_) => OpCode::Multi,
            TxnBody::CreateSession(_) => OpCode::CreateSession,
            TxnBody::CloseSession(_) => OpCode::CloseSession,
            TxnBody::Error(_) => OpCode::Error,
        };
        op.code()
    }

    /// The bytes [`TxnBody::encode`] writes, counted without writing them: buffers sized by it
    /// are filled without reallocating.
    pub fn encoded_len(&self) -> usize {
        const LEN: usize = 4;
        let string = |s: &str| LEN + s.len();
        let data = |d: &Data| LEN + d.as_ref().map_or(0, Vec::len);
        let acl = |acl: &[Acl]| {
            LEN + acl
                .iter()
                .map(|a| 4 + string(&a.id.scheme) + string(&a.id.id))
                .sum::<usize>()
        };
        match self {
            TxnBody::Create(t) | TxnBody::Create2(t) => {
                string(&t.path) + data(&t.data) + acl(&t.acl) + 1 + 4
            }
            TxnBody::CreateContainer(t) => string(&t.path) + data(&t.data) + acl(&t.acl) + 4,
            TxnBody::CreateTtl(t) => string(&t.path) + data(&t.data) + acl(&t.acl) + 4 + 8,
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => string(&t.path),
            TxnBody::SetData(t) => string(&t.path) + data(&t.data) + 4,
            TxnBody::SetAcl(t) => string(&t.path) + acl(&t.acl) + 4,
            TxnBody::Check(t) => string(&t.path) + 4,
            TxnBody::CreateSession(_) | TxnBody::Error(_) => 4,
            TxnBody::CloseSession(t) => {
                LEN + t.paths_to_delete.iter().map(|p| string(p)).sum::<usize>()
            }
            // Each part: its type, then its body as a length-prefixed buffer.
            TxnBody::Multi(parts) => {
                LEN + parts
                    .iter()
                    .map(|part| 4 + LEN + part.encoded_len())
                    .sum::<usize>()
            }
        }
    }

    pub fn encode(&self, w: &mut Writer) {
        match self {
            TxnBody::Create(t) | TxnBody::Create2(t) => t.encode(w),
            TxnBody::CreateContainer(t) => t.encode(w),
            TxnBody::CreateTtl(t) => t.encode(w),
            TxnBody::Delete(t) | TxnBody::DeleteContainer(t) => t.encode(w),
            TxnBody::SetData(t) => t.encode(w),
            TxnBody::SetAcl(t) => t.encode(w),
            TxnBody::Check(t) => t.encode(w),
            TxnBody::CreateSession(t) => t.encode(w),
            TxnBody::CloseSession(t) => t.encode(w),
            TxnBody::Error(t) => t.encode(w),
            TxnBody::Multi(parts) => {
                w.write_i32(parts.len() as i32);
                for part in parts {
                    let mut inner = Writer::wrap(Vec::with_capacity(part.encoded_len()));
                    part.encode(&mut inner);
                    TypedTxn {
                        op_type: part.op_type(),
                        data: Some(inner.into_inner()),
                    }
                    .encode(w);
                }
            }
        }
    }

    /// Decodes a body of the given type. `depth` guards against a multi nested in a multi,
    /// which ZooKeeper never produces.
    pub fn decode(op_type: i32, r: &mut Reader<'_>) -> Result<TxnBody, DecodeError> {
        Self::decode_at_depth(op_type, r, 0)
    }

    fn decode_at_depth(
        op_type: i32,
        r: &mut Reader<'_>,
        depth: u8,
    ) -> Result<TxnBody, DecodeError> {
        let invalid = DecodeError::InvalidValue {
            what: "transaction type",
            value: op_type as i64,
        };
        let op = OpCode::from_i32(op_type).ok_or(invalid.clone())?;
        Ok(match op {
            OpCode::Create => TxnBody::Create(CreateTxn::decode(r)?),
            OpCode::Create2 => TxnBody::Create2(CreateTxn::decode(r)?),
            OpCode::CreateContainer => TxnBody::CreateContainer(CreateContainerTxn::decode(r)?),
            OpCode::CreateTtl => TxnBody::CreateTtl(CreateTtlTxn::decode(r)?),
            OpCode::Delete => TxnBody::Delete(DeleteTxn::decode(r)?),
            OpCode::DeleteContainer => TxnBody::DeleteContainer(DeleteTxn::decode(r)?),
            // ZooKeeper writes a reconfiguration as a setData of /zookeeper/config.
            OpCode::SetData | OpCode::Reconfig => TxnBody::SetData(SetDataTxn::decode(r)?),
            OpCode::SetAcl => TxnBody::SetAcl(SetAclTxn::decode(r)?),
            OpCode::Check => TxnBody::Check(CheckVersionTxn::decode(r)?),
            OpCode::CreateSession => TxnBody::CreateSession(CreateSessionTxn::decode(r)?),
            OpCode::CloseSession => TxnBody::CloseSession(CloseSessionTxn::decode(r)?),
            OpCode::Error => TxnBody::Error(ErrorTxn::decode(r)?),
            OpCode::Multi if depth == 0 => {
                let parts = Vec::<TypedTxn>::decode(r)?;
                let mut bodies = Vec::with_capacity(parts.len());
                for part in parts {
                    let bytes = part.data.unwrap_or_default();
                    let mut inner = Reader::new(&bytes);
                    bodies.push(Self::decode_at_depth(part.op_type, &mut inner, depth + 1)?);
                    inner.finish()?;
                }
                TxnBody::Multi(bodies)
            }
            _ => return Err(invalid),
        })
    }
}

/// A header and its body: one entry of the log, one proposal of Zab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    pub header: TxnHeader,
    pub body: TxnBody,
}

impl Txn {
    /// The bytes its encoding takes (header and body), counted without writing them.
    pub fn encoded_len(&self) -> usize {
        TXN_HEADER_LEN + self.body.encoded_len()
    }
}

/// A transaction header's bytes: client id, cxid, zxid, time, type.
const TXN_HEADER_LEN: usize = 8 + 4 + 8 + 8 + 4;

impl Record for Txn {
    fn encode(&self, w: &mut Writer) {
        self.header.encode(w);
        self.body.encode(w);
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let header = TxnHeader::decode(r)?;
        let body = TxnBody::decode(header.op_type, r)?;
        Ok(Txn { header, body })
    }
}
