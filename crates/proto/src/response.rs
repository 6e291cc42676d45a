//! Reply bodies, one per op code. A reply with a non-zero error code has no body.

use crate::jute::{DecodeError, Reader, Record, Writer};
use crate::multi::MultiResult;
use crate::op_code::OpCode;
use crate::records::*;

/// The body of a successful reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// Ops whose success reply has no body: delete, ping, check, setWatches, removeWatches,
    /// checkWatches, auth, closeSession.
    Empty,
    /// create (1).
    Create(String),
    /// create2, createContainer, createTTL.
    Create2(Create2Response),
    /// exists, setData, setACL.
    Stat(Stat),
    GetData(GetDataResponse),
    GetAcl(GetAclResponse),
    GetChildren(GetChildrenResponse),
    GetChildren2(GetChildren2Response),
    /// sync: the path echoed back.
    Sync(String),
    Multi(Vec<MultiResult>),
    GetEphemerals(GetEphemeralsResponse),
    GetAllChildrenNumber(i32),
    /// addWatch answers with an ErrorResponse of 0 (`FinalRequestProcessor`).
    AddWatch,
    WhoAmI(WhoAmIResponse),
}

impl Response {
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Response::Empty => {}
            Response::Create(path) | Response::Sync(path) => w.write_ustring(path),
            Response::Create2(x) => x.encode(w),
            Response::Stat(x) => x.encode(w),
            Response::GetData(x) => x.encode(w),
            Response::GetAcl(x) => x.encode(w),
            Response::GetChildren(x) => x.encode(w),
            Response::GetChildren2(x) => x.encode(w),
            Response::Multi(results) => crate::multi::encode_results(results, w),
            Response::GetEphemerals(x) => x.encode(w),
            Response::GetAllChildrenNumber(n) => w.write_i32(*n),
            Response::AddWatch => w.write_i32(0),
            Response::WhoAmI(x) => x.encode(w),
        }
    }

    /// Decodes the body of a successful reply to a request of type `op`.
    pub fn decode(op: OpCode, body: &[u8]) -> Result<Response, DecodeError> {
        let mut r = Reader::new(body);
        let response = Self::decode_body(op, &mut r)?;
        r.finish()?;
        Ok(response)
    }

    fn decode_body(op: OpCode, r: &mut Reader<'_>) -> Result<Response, DecodeError> {
        use OpCode as O;
        Ok(match op {
            O::Create => Response::Create(String::decode(r)?),
            O::Create2 | O::CreateContainer | O::CreateTtl => {
                Response::Create2(Create2Response::decode(r)?)
            }
            O::Exists | O::SetData | O::SetAcl => Response::Stat(Stat::decode(r)?),
            // A reconfiguration answers with the new configuration, as getData would.
            O::GetData | O::Reconfig => Response::GetData(GetDataResponse::decode(r)?),
            O::GetAcl => Response::GetAcl(GetAclResponse::decode(r)?),
            O::GetChildren => Response::GetChildren(GetChildrenResponse::decode(r)?),
            O::GetChildren2 => Response::GetChildren2(GetChildren2Response::decode(r)?),
            O::Sync => Response::Sync(String::decode(r)?),
            O::Multi | O::MultiRead => Response::Multi(crate::multi::decode_results(r)?),
            O::GetEphemerals => Response::GetEphemerals(GetEphemeralsResponse::decode(r)?),
            O::GetAllChildrenNumber => Response::GetAllChildrenNumber(r.read_i32()?),
            O::AddWatch => {
                r.read_i32()?;
                Response::AddWatch
            }
            O::WhoAmI => Response::WhoAmI(WhoAmIResponse::decode(r)?),
            _ => Response::Empty,
        })
    }
}
