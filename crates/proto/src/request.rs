//! A client request after its [`RequestHeader`](crate::RequestHeader): decoded by op code.

use crate::jute::{DecodeError, Reader, Record, Writer};
use crate::multi::MultiOp;
use crate::op_code::OpCode;
use crate::records::*;

/// Every request a client may send after the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Op codes 1 (create), 15 (create2) and 19 (createContainer) share one body.
    Create {
        op: OpCode,
        req: CreateRequest,
    },
    CreateTtl(CreateTtlRequest),
    Delete(PathAndVersion),
    Exists(PathAndWatch),
    GetData(PathAndWatch),
    SetData(SetDataRequest),
    GetAcl(PathRecord),
    SetAcl(SetAclRequest),
    GetChildren(PathAndWatch),
    GetChildren2(PathAndWatch),
    Sync(PathRecord),
    Ping,
    Check(PathAndVersion),
    Multi(Vec<MultiOp>),
    MultiRead(Vec<MultiOp>),
    Reconfig(ReconfigRequest),
    CheckWatches(PathAndWatcherType),
    RemoveWatches(PathAndWatcherType),
    Auth(AuthPacket),
    SetWatches(SetWatches),
    SetWatches2(SetWatches2),
    GetEphemerals(PathRecord),
    GetAllChildrenNumber(PathRecord),
    AddWatch(AddWatchRequest),
    WhoAmI,
    CloseSession,
}

/// Why a request could not be decoded. The server answers an unknown op code with
/// Unimplemented (as ZooKeeper does) and closes the connection on a malformed body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("unknown op code {0}")]
    UnknownOpCode(i32),
    #[error("op code {0:?} is not a client request")]
    NotARequest(OpCode),
    #[error("malformed {op:?} request: {source}")]
    Malformed { op: OpCode, source: DecodeError },
}

impl Request {
    /// Decodes the body that follows a request header with type `op_type`.
    pub fn decode(op_type: i32, body: &[u8]) -> Result<Request, RequestError> {
        let op = OpCode::from_i32(op_type).ok_or(RequestError::UnknownOpCode(op_type))?;
        let mut r = Reader::new(body);
        let request = Self::decode_body(op, &mut r)
            .map_err(|source| RequestError::Malformed { op, source })?;
        // ZooKeeper ignores bytes after a record it understood; so do we (a ping may carry none).
        Ok(request)
    }

    fn decode_body(op: OpCode, r: &mut Reader<'_>) -> Result<Request, DecodeError> {
        use OpCode as O;
        Ok(match op {
            O::Create | O::Create2 | O::CreateContainer => Request::Create {
                op,
                req: CreateRequest::decode(r)?,
            },
            O::CreateTtl => Request::CreateTtl(CreateTtlRequest::decode(r)?),
            O::Delete => Request::Delete(PathAndVersion::decode(r)?),
            O::Exists => Request::Exists(PathAndWatch::decode(r)?),
            O::GetData => Request::GetData(PathAndWatch::decode(r)?),
            O::SetData => Request::SetData(SetDataRequest::decode(r)?),
            O::GetAcl => Request::GetAcl(PathRecord::decode(r)?),
            O::SetAcl => Request::SetAcl(SetAclRequest::decode(r)?),
            O::GetChildren => Request::GetChildren(PathAndWatch::decode(r)?),
            O::GetChildren2 => Request::GetChildren2(PathAndWatch::decode(r)?),
            O::Sync => Request::Sync(PathRecord::decode(r)?),
            O::Ping => Request::Ping,
            O::Check => Request::Check(PathAndVersion::decode(r)?),
            O::Multi => Request::Multi(crate::multi::decode_ops(r, false)?),
            O::MultiRead => Request::MultiRead(crate::multi::decode_ops(r, true)?),
            O::Reconfig => Request::Reconfig(ReconfigRequest::decode(r)?),
            O::CheckWatches => Request::CheckWatches(PathAndWatcherType::decode(r)?),
            O::RemoveWatches => Request::RemoveWatches(PathAndWatcherType::decode(r)?),
            O::Auth => Request::Auth(AuthPacket::decode(r)?),
            O::SetWatches => Request::SetWatches(SetWatches::decode(r)?),
            O::SetWatches2 => Request::SetWatches2(SetWatches2::decode(r)?),
            O::GetEphemerals => Request::GetEphemerals(PathRecord::decode(r)?),
            O::GetAllChildrenNumber => Request::GetAllChildrenNumber(PathRecord::decode(r)?),
            O::AddWatch => Request::AddWatch(AddWatchRequest::decode(r)?),
            O::WhoAmI => Request::WhoAmI,
            O::CloseSession => Request::CloseSession,
            O::Notification | O::DeleteContainer | O::Sasl | O::CreateSession | O::Error => {
                return Err(DecodeError::InvalidValue {
                    what: "client op code",
                    value: op.code() as i64,
                })
            }
        })
    }

    /// The op code this request travels under.
    pub fn op_code(&self) -> OpCode {
        use Request as R;
        match self {
            R::Create { op, .. } => *op,
            R::CreateTtl(_) => OpCode::CreateTtl,
            R::Delete(_) => OpCode::Delete,
            R::Exists(_) => OpCode::Exists,
            R::GetData(_) => OpCode::GetData,
            R::SetData(_) => OpCode::SetData,
            R::GetAcl(_) => OpCode::GetAcl,
            R::SetAcl(_) => OpCode::SetAcl,
            R::GetChildren(_) => OpCode::GetChildren,
            R::GetChildren2(_) => OpCode::GetChildren2,
            R::Sync(_) => OpCode::Sync,
            R::Ping => OpCode::Ping,
            R::Check(_) => OpCode::Check,
            R::Multi(_) => OpCode::Multi,
            R::MultiRead(_) => OpCode::MultiRead,
            R::Reconfig(_) => OpCode::Reconfig,
            R::CheckWatches(_) => OpCode::CheckWatches,
            R::RemoveWatches(_) => OpCode::RemoveWatches,
            R::Auth(_) => OpCode::Auth,
            R::SetWatches(_) => OpCode::SetWatches,
            R::SetWatches2(_) => OpCode::SetWatches2,
            R::GetEphemerals(_) => OpCode::GetEphemerals,
            R::GetAllChildrenNumber(_) => OpCode::GetAllChildrenNumber,
            R::AddWatch(_) => OpCode::AddWatch,
            R::WhoAmI => OpCode::WhoAmI,
            R::CloseSession => OpCode::CloseSession,
        }
    }

    /// Encodes the body (without the header); used by clients and tests.
    pub fn encode_body(&self, w: &mut Writer) {
        use Request as R;
        match self {
            R::Create { req, .. } => req.encode(w),
            R::CreateTtl(x) => x.encode(w),
            R::Delete(x) | R::Check(x) => x.encode(w),
            R::Exists(x) | R::GetData(x) | R::GetChildren(x) | R::GetChildren2(x) => x.encode(w),
            R::SetData(x) => x.encode(w),
            R::GetAcl(x) | R::Sync(x) | R::GetEphemerals(x) | R::GetAllChildrenNumber(x) => {
                x.encode(w)
            }
            R::SetAcl(x) => x.encode(w),
            R::Multi(ops) | R::MultiRead(ops) => crate::multi::encode_ops(ops, w),
            R::Reconfig(x) => x.encode(w),
            R::CheckWatches(x) | R::RemoveWatches(x) => x.encode(w),
            R::Auth(x) => x.encode(w),
            R::SetWatches(x) => x.encode(w),
            R::SetWatches2(x) => x.encode(w),
            R::AddWatch(x) => x.encode(w),
            R::Ping | R::WhoAmI | R::CloseSession => {}
        }
    }

    /// True for requests that change state and therefore become transactions.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Request::Create { .. }
                | Request::CreateTtl(_)
                | Request::Delete(_)
                | Request::SetData(_)
                | Request::SetAcl(_)
                | Request::Check(_)
                | Request::Multi(_)
                | Request::Reconfig(_)
                | Request::CloseSession
        )
    }
}
