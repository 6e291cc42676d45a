//! multi (op 14) and multiRead (op 22): a list of operations, each preceded by a
//! [`MultiHeader`], ended by `{type −1, done true, err −1}` (`MultiOperationRecord`,
//! `MultiResponse`).

use crate::jute::{DecodeError, Reader, Record, Writer};
use crate::limits::MULTI_OPS_MAX;
use crate::op_code::OpCode;
use crate::records::*;

/// One operation inside a multi or multiRead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// create (1), create2 (15), createContainer (19).
    Create {
        op: OpCode,
        req: CreateRequest,
    },
    CreateTtl(CreateTtlRequest),
    Delete(PathAndVersion),
    SetData(SetDataRequest),
    Check(PathAndVersion),
    GetChildren(PathRecord),
    GetData(PathRecord),
}

impl MultiOp {
    pub fn op_code(&self) -> OpCode {
        match self {
            MultiOp::Create { op, .. } => *op,
            MultiOp::CreateTtl(_) => OpCode::CreateTtl,
            MultiOp::Delete(_) => OpCode::Delete,
            MultiOp::SetData(_) => OpCode::SetData,
            MultiOp::Check(_) => OpCode::Check,
            MultiOp::GetChildren(_) => OpCode::GetChildren,
            MultiOp::GetData(_) => OpCode::GetData,
        }
    }

    pub fn path(&self) -> &str {
        match self {
            MultiOp::Create { req, .. } => &req.path,
            MultiOp::CreateTtl(r) => &r.path,
            MultiOp::Delete(r) | MultiOp::Check(r) => &r.path,
            MultiOp::SetData(r) => &r.path,
            MultiOp::GetChildren(r) | MultiOp::GetData(r) => &r.path,
        }
    }
}

const TERMINATOR: MultiHeader = MultiHeader {
    op_type: -1,
    done: true,
    err: -1,
};

/// Decodes the op list; `read_only` selects which ops are allowed (multiRead takes only
/// getChildren and getData; multi only writes and check).
pub(crate) fn decode_ops(r: &mut Reader<'_>, read_only: bool) -> Result<Vec<MultiOp>, DecodeError> {
    let mut ops = Vec::new();
    loop {
        let header = MultiHeader::decode(r)?;
        if header.done {
            return Ok(ops);
        }
        if ops.len() >= MULTI_OPS_MAX {
            return Err(DecodeError::InvalidValue {
                what: "multi op count",
                value: ops.len() as i64,
            });
        }
        ops.push(decode_op(header.op_type, r, read_only)?);
    }
}

fn decode_op(op_type: i32, r: &mut Reader<'_>, read_only: bool) -> Result<MultiOp, DecodeError> {
    let invalid = DecodeError::InvalidValue {
        what: "multi op type",
        value: op_type as i64,
    };
    let op = OpCode::from_i32(op_type).ok_or(invalid.clone())?;
    // The body of getData/getChildren inside multiRead is GetDataRequest {path, watch}; the
    // watch flag is ignored by ZooKeeper there, so only the path is kept.
    Ok(match (op, read_only) {
        (OpCode::Create | OpCode::Create2 | OpCode::CreateContainer, false) => MultiOp::Create {
            op,
            req: CreateRequest::decode(r)?,
        },
        (OpCode::CreateTtl, false) => MultiOp::CreateTtl(CreateTtlRequest::decode(r)?),
        (OpCode::Delete, false) => MultiOp::Delete(PathAndVersion::decode(r)?),
        (OpCode::SetData, false) => MultiOp::SetData(SetDataRequest::decode(r)?),
        (OpCode::Check, false) => MultiOp::Check(PathAndVersion::decode(r)?),
        (OpCode::GetChildren, true) => MultiOp::GetChildren(PathRecord {
            path: PathAndWatch::decode(r)?.path,
        }),
        (OpCode::GetData, true) => MultiOp::GetData(PathRecord {
            path: PathAndWatch::decode(r)?.path,
        }),
        _ => return Err(invalid),
    })
}

pub(crate) fn encode_ops(ops: &[MultiOp], w: &mut Writer) {
    for op in ops {
        MultiHeader {
            op_type: op.op_code().code(),
            done: false,
            err: -1,
        }
        .encode(w);
        match op {
            MultiOp::Create { req, .. } => req.encode(w),
            MultiOp::CreateTtl(x) => x.encode(w),
            MultiOp::Delete(x) | MultiOp::Check(x) => x.encode(w),
            MultiOp::SetData(x) => x.encode(w),
            MultiOp::GetChildren(x) | MultiOp::GetData(x) => PathAndWatch {
                path: x.path.clone(),
                watch: false,
            }
            .encode(w),
        }
    }
    TERMINATOR.encode(w);
}

/// The result of one operation of a multi or multiRead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// create: the created path.
    Create(String),
    /// create2, createTTL, createContainer: path and Stat.
    Create2(String, Stat),
    Delete,
    SetData(Stat),
    Check,
    GetChildren(Vec<String>),
    GetData(Data, Stat),
    /// A failed op, or an op rolled back because another failed (err 0 / code / −2).
    Error(i32),
}

impl MultiResult {
    fn op_type(&self) -> i32 {
        match self {
            MultiResult::Create(_) => OpCode::Create.code(),
            MultiResult::Create2(..) => OpCode::Create2.code(),
            MultiResult::Delete => OpCode::Delete.code(),
            MultiResult::SetData(_) => OpCode::SetData.code(),
            MultiResult::Check => OpCode::Check.code(),
            MultiResult::GetChildren(_) => OpCode::GetChildren.code(),
            MultiResult::GetData(..) => OpCode::GetData.code(),
            MultiResult::Error(_) => OpCode::Error.code(),
        }
    }
}

/// Encodes a multi reply body: each result's header and body, then the terminator.
pub fn encode_results(results: &[MultiResult], w: &mut Writer) {
    for result in results {
        let err = match result {
            MultiResult::Error(code) => *code,
            _ => 0,
        };
        MultiHeader {
            op_type: result.op_type(),
            done: false,
            err,
        }
        .encode(w);
        match result {
            MultiResult::Create(path) => w.write_ustring(path),
            MultiResult::Create2(path, stat) => {
                w.write_ustring(path);
                stat.encode(w);
            }
            MultiResult::Delete | MultiResult::Check => {}
            MultiResult::SetData(stat) => stat.encode(w),
            MultiResult::GetChildren(children) => children.encode(w),
            MultiResult::GetData(data, stat) => {
                data.encode(w);
                stat.encode(w);
            }
            MultiResult::Error(code) => w.write_i32(*code),
        }
    }
    TERMINATOR.encode(w);
}

/// Decodes a multi reply body (used by clients and tests).
pub fn decode_results(r: &mut Reader<'_>) -> Result<Vec<MultiResult>, DecodeError> {
    let mut results = Vec::new();
    loop {
        let header = MultiHeader::decode(r)?;
        if header.done {
            return Ok(results);
        }
        if results.len() >= MULTI_OPS_MAX {
            return Err(DecodeError::InvalidValue {
                what: "multi result count",
                value: results.len() as i64,
            });
        }
        let result = match OpCode::from_i32(header.op_type) {
            Some(OpCode::Create) => MultiResult::Create(String::decode(r)?),
            Some(OpCode::Create2) => MultiResult::Create2(String::decode(r)?, Stat::decode(r)?),
            Some(OpCode::Delete) => MultiResult::Delete,
            Some(OpCode::SetData) => MultiResult::SetData(Stat::decode(r)?),
            Some(OpCode::Check) => MultiResult::Check,
            Some(OpCode::GetChildren) => MultiResult::GetChildren(Vec::<String>::decode(r)?),
            Some(OpCode::GetData) => MultiResult::GetData(Data::decode(r)?, Stat::decode(r)?),
            Some(OpCode::Error) => MultiResult::Error(r.read_i32()?),
            _ => {
                return Err(DecodeError::InvalidValue {
                    what: "multi result type",
                    value: header.op_type as i64,
                })
            }
        };
        results.push(result);
    }
}
