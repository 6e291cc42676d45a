//! Operations of a multi (atomic transaction) or multiRead, and their results.

use crate::create_mode::CreateMode;
use crate::path::Chroot;
use proto::multi::{MultiOp, MultiResult};
use proto::{
    Acl, CreateRequest, CreateTtlRequest, PathAndVersion, PathRecord, SetDataRequest, Stat,
};

/// One operation of [`crate::Client::multi`] or [`crate::Client::multi_read`] (client paths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Create {
        path: String,
        data: Vec<u8>,
        acl: Vec<Acl>,
        mode: CreateMode,
    },
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        data: Vec<u8>,
        version: i32,
    },
    /// Succeeds only if the node's version is `version` (−1: the node exists).
    Check {
        path: String,
        version: i32,
    },
    /// multiRead only.
    GetChildren {
        path: String,
    },
    /// multiRead only.
    GetData {
        path: String,
    },
}

impl Op {
    pub fn create(path: &str, data: &[u8], acl: Vec<Acl>, mode: CreateMode) -> Op {
        Op::Create {
            path: path.into(),
            data: data.to_vec(),
            acl,
            mode,
        }
    }

    pub fn delete(path: &str, version: i32) -> Op {
        Op::Delete {
            path: path.into(),
            version,
        }
    }

    pub fn set_data(path: &str, data: &[u8], version: i32) -> Op {
        Op::SetData {
            path: path.into(),
            data: data.to_vec(),
            version,
        }
    }

    pub fn check(path: &str, version: i32) -> Op {
        Op::Check {
            path: path.into(),
            version,
        }
    }

    pub fn path(&self) -> &str {
        match self {
            Op::Create { path, .. }
            | Op::Delete { path, .. }
            | Op::SetData { path, .. }
            | Op::Check { path, .. }
            | Op::GetChildren { path }
            | Op::GetData { path } => path,
        }
    }

    /// The wire form with the chroot applied. Creates inside a multi use create2-style codes as
    /// the Java client does (`Op.Create` with a Stat: create2, container 19, TTL 21).
    pub(crate) fn to_wire(&self, chroot: &Chroot) -> MultiOp {
        match self {
            Op::Create {
                path,
                data,
                acl,
                mode,
            } => {
                let path = chroot.to_server(path);
                match mode.ttl() {
                    Some(ttl) => MultiOp::CreateTtl(CreateTtlRequest {
                        path,
                        data: Some(data.clone()),
                        acl: acl.clone(),
                        flags: mode.flags(),
                        ttl,
                    }),
                    None => MultiOp::Create {
                        // Plain create (1) so every server decodes the result as a path; the
                        // container code is needed for the server to make a container.
                        op: if *mode == CreateMode::Container {
                            proto::OpCode::CreateContainer
                        } else {
                            proto::OpCode::Create
                        },
                        req: CreateRequest {
                            path,
                            data: Some(data.clone()),
                            acl: acl.clone(),
                            flags: mode.flags(),
                        },
                    },
                }
            }
            Op::Delete { path, version } => MultiOp::Delete(PathAndVersion {
                path: chroot.to_server(path),
                version: *version,
            }),
            Op::SetData {
                path,
                data,
                version,
            } => MultiOp::SetData(SetDataRequest {
                path: chroot.to_server(path),
                data: Some(data.clone()),
                version: *version,
            }),
            Op::Check { path, version } => MultiOp::Check(PathAndVersion {
                path: chroot.to_server(path),
                version: *version,
            }),
            Op::GetChildren { path } => MultiOp::GetChildren(PathRecord {
                path: chroot.to_server(path),
            }),
            Op::GetData { path } => MultiOp::GetData(PathRecord {
                path: chroot.to_server(path),
            }),
        }
    }
}

/// The result of one operation of a successful multi, or of one multiRead operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpResult {
    /// The created path (client path), and its Stat when the server sent one.
    Create {
        path: String,
        stat: Option<Stat>,
    },
    Delete,
    SetData(Stat),
    Check,
    GetChildren(Vec<String>),
    GetData(Vec<u8>, Stat),
    /// In a multiRead, an operation that failed (the others still answer).
    Error(crate::Error),
}

pub(crate) fn from_wire(result: MultiResult, op: &Op, chroot: &Chroot) -> OpResult {
    match result {
        MultiResult::Create(path) => OpResult::Create {
            path: chroot.to_client(&path),
            stat: None,
        },
        MultiResult::Create2(path, stat) => OpResult::Create {
            path: chroot.to_client(&path),
            stat: Some(stat),
        },
        MultiResult::Delete => OpResult::Delete,
        MultiResult::SetData(stat) => OpResult::SetData(stat),
        MultiResult::Check => OpResult::Check,
        MultiResult::GetChildren(children) => OpResult::GetChildren(children),
        MultiResult::GetData(data, stat) => OpResult::GetData(data.unwrap_or_default(), stat),
        MultiResult::Error(code) => OpResult::Error(crate::Error::keeper(
            crate::error::error_code_from_wire(code),
            op.path(),
        )),
    }
}
