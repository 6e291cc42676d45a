//! One entry of a ZooKeeper transaction log decoded as ZooKeeper decodes it
//! (`SerializeUtils.deserializeTxn`): the header, a body chosen by type, and the 3.6+ tree
//! digest that may follow. Covers every type 3.4–3.9 write: create (and the pre-3.3 form
//! without parentCVersion), create2, createContainer, createTTL, delete, deleteContainer,
//! setData, reconfig (a setData of `/zookeeper/config`), setACL, check, multi, error,
//! createSession and closeSession (with or without its list of ephemerals).

use proto::jute::{DecodeError, Reader, Record};
use proto::txn::{
    CheckVersionTxn, CloseSessionTxn, CreateContainerTxn, CreateSessionTxn, CreateTtlTxn,
    CreateTxn, DeleteTxn, ErrorTxn, SetAclTxn, SetDataTxn, TxnDigest, TxnHeader, TypedTxn,
};
use proto::{Acl, OpCode};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ZkTxn {
    /// create and create2 (only create gets ZooKeeper's parent fix-up on NODEEXISTS).
    Create {
        txn: CreateTxn,
        create2: bool,
    },
    CreateContainer(CreateContainerTxn),
    CreateTtl(CreateTtlTxn),
    /// delete and deleteContainer.
    Delete(DeleteTxn),
    /// setData and reconfig.
    SetData(SetDataTxn),
    SetAcl(SetAclTxn),
    Check(CheckVersionTxn),
    Error(ErrorTxn),
    Multi(Vec<ZkTxn>),
    CreateSession(CreateSessionTxn),
    /// The ephemerals to delete when the log lists them (3.5+ with closeSessionTxn on).
    CloseSession(Option<Vec<String>>),
}

/// A decoded log entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub header: TxnHeader,
    pub txn: ZkTxn,
    pub digest: Option<TxnDigest>,
}

/// The pre-3.3 create body, without parentCVersion.
struct CreateTxnV0 {
    path: String,
    data: Option<Vec<u8>>,
    acl: Vec<Acl>,
    ephemeral: bool,
}

impl CreateTxnV0 {
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(CreateTxnV0 {
            path: String::decode(r)?,
            data: Option::<Vec<u8>>::decode(r)?,
            acl: Vec::<Acl>::decode(r)?,
            ephemeral: bool::decode(r)?,
        })
    }
}

fn is_eof(e: &DecodeError) -> bool {
    matches!(e, DecodeError::Truncated { .. })
}

/// Decodes one log entry's bytes (after its checksum and length).
pub fn decode_entry(bytes: &[u8]) -> Result<LogEntry, DecodeError> {
    let mut r = Reader::new(bytes);
    let header = TxnHeader::decode(&mut r)?;
    let body_start = r.clone();
    let txn = match header.op_type {
        t if t == OpCode::CloseSession.code() => {
            // Before CloseSessionTxn existed (or with it turned off) the body is empty; a body
            // that does not parse is ignored as ZooKeeper ignores its EOFException.
            let mut attempt = r.clone();
            match CloseSessionTxn::decode(&mut attempt) {
                Ok(t) if r.remaining() > 0 => {
                    r = attempt;
                    ZkTxn::CloseSession(Some(t.paths_to_delete))
                }
                _ => {
                    return Ok(LogEntry {
                        header,
                        txn: ZkTxn::CloseSession(None),
                        digest: None,
                    })
                }
            }
        }
        t if t == OpCode::Create.code() => match CreateTxn::decode(&mut r) {
            Ok(txn) => ZkTxn::Create {
                txn,
                create2: false,
            },
            Err(e) if is_eof(&e) => {
                r = body_start;
                let v0 = CreateTxnV0::decode(&mut r)?;
                ZkTxn::Create {
                    txn: CreateTxn {
                        path: v0.path,
                        data: v0.data,
                        acl: v0.acl.into(),
                        ephemeral: v0.ephemeral,
                        parent_cversion: -1,
                    },
                    create2: false,
                }
            }
            Err(e) => return Err(e),
        },
        op_type => decode_body(op_type, &mut r, false)?,
    };
    // The 3.6+ digest: present when the bytes are there (an EOFException means none).
    let digest = TxnDigest::decode(&mut r).ok();
    Ok(LogEntry {
        header,
        txn,
        digest,
    })
}

fn invalid(op_type: i32) -> DecodeError {
    DecodeError::InvalidValue {
        what: "transaction type",
        value: i64::from(op_type),
    }
}

/// A body of `op_type`; inside a multi only the types `DataTree.processTxn` accepts there.
fn decode_body(op_type: i32, r: &mut Reader<'_>, in_multi: bool) -> Result<ZkTxn, DecodeError> {
    let op = OpCode::from_i32(op_type).ok_or_else(|| invalid(op_type))?;
    Ok(match op {
        OpCode::Create | OpCode::Create2 => ZkTxn::Create {
            txn: CreateTxn::decode(r)?,
            create2: op == OpCode::Create2,
        },
        OpCode::CreateContainer => ZkTxn::CreateContainer(CreateContainerTxn::decode(r)?),
        OpCode::CreateTtl => ZkTxn::CreateTtl(CreateTtlTxn::decode(r)?),
        OpCode::Delete | OpCode::DeleteContainer => ZkTxn::Delete(DeleteTxn::decode(r)?),
        OpCode::SetData => ZkTxn::SetData(SetDataTxn::decode(r)?),
        OpCode::Reconfig if !in_multi => ZkTxn::SetData(SetDataTxn::decode(r)?),
        OpCode::SetAcl if !in_multi => ZkTxn::SetAcl(SetAclTxn::decode(r)?),
        OpCode::Check => ZkTxn::Check(CheckVersionTxn::decode(r)?),
        OpCode::Error => ZkTxn::Error(ErrorTxn::decode(r)?),
        OpCode::CreateSession if !in_multi => ZkTxn::CreateSession(CreateSessionTxn::decode(r)?),
        OpCode::Multi if !in_multi => {
            let parts = Vec::<TypedTxn>::decode(r)?;
            let mut txns = Vec::with_capacity(parts.len());
            for part in parts {
                let bytes = part.data.unwrap_or_default();
                let mut inner = Reader::new(&bytes);
                txns.push(decode_body(part.op_type, &mut inner, true)?);
            }
            ZkTxn::Multi(txns)
        }
        _ => return Err(invalid(op_type)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::jute::Writer;

    fn header(op: OpCode) -> TxnHeader {
        TxnHeader {
            client_id: 5,
            cxid: 1,
            zxid: 9,
            time: 100,
            op_type: op.code(),
        }
    }

    #[test]
    fn close_session_with_and_without_its_list() {
        let mut w = Writer::new();
        header(OpCode::CloseSession).encode(&mut w);
        let bare = w.as_slice().to_vec();
        assert_eq!(
            decode_entry(&bare).map(|e| e.txn).ok(),
            Some(ZkTxn::CloseSession(None))
        );
        CloseSessionTxn {
            paths_to_delete: vec!["/e".into()],
        }
        .encode(&mut w);
        TxnDigest {
            version: 2,
            tree_digest: 77,
        }
        .encode(&mut w);
        let entry = decode_entry(w.as_slice()).ok();
        assert_eq!(
            entry.as_ref().map(|e| e.txn.clone()),
            Some(ZkTxn::CloseSession(Some(vec!["/e".into()])))
        );
        assert_eq!(
            entry.and_then(|e| e.digest).map(|d| d.tree_digest),
            Some(77)
        );
    }

    #[test]
    fn a_pre_3_3_create_reads_with_parent_cversion_minus_one() {
        let mut w = Writer::new();
        header(OpCode::Create).encode(&mut w);
        "/a".to_string().encode(&mut w);
        Some(b"x".to_vec()).encode(&mut w);
        Vec::<Acl>::new().encode(&mut w);
        true.encode(&mut w);
        match decode_entry(w.as_slice()).map(|e| e.txn) {
            Ok(ZkTxn::Create { txn, create2 }) => {
                assert_eq!(txn.parent_cversion, -1);
                assert!(txn.ephemeral && !create2);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_types_are_refused() {
        let mut w = Writer::new();
        let mut h = header(OpCode::Create);
        h.op_type = 42;
        h.encode(&mut w);
        assert!(decode_entry(w.as_slice()).is_err());
    }
}
