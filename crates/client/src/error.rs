//! Typed errors, mapped one to one onto ZooKeeper's `KeeperException.Code`.
//!
//! A server answer with a non-zero `err` becomes [`Error::Keeper`] with the code and the path the
//! request named, exactly as the Java client builds a `KeeperException`. Failures the client
//! detects itself use the same codes ZooKeeper's client uses for them: a lost connection is
//! `ConnectionLoss`, a request on a closed client `SessionExpired`, a reply that does not decode
//! `MarshallingError`.

use proto::ErrorCode;

/// Why an operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The server (or the connection) failed the request with `code`; `path` is the path the
    /// request named, as the application gave it (chroot not included), empty if none.
    #[error("KeeperErrorCode = {}{}", code_message(*code), for_path(path))]
    Keeper { code: ErrorCode, path: String },
    /// The path is not a valid ZooKeeper path; nothing was sent.
    #[error("Invalid path string \"{path}\" caused by {reason}")]
    InvalidPath { path: String, reason: &'static str },
    /// The connect string cannot be used; nothing was sent.
    #[error("invalid connect string {text:?}: {reason}")]
    InvalidConnectString { text: String, reason: String },
    /// An argument other than the path is invalid (for example a TTL on a non-TTL mode).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// A failure carrying a ZooKeeper error code and the path it concerns.
    pub fn keeper(code: ErrorCode, path: impl Into<String>) -> Error {
        Error::Keeper {
            code,
            path: path.into(),
        }
    }

    /// The `KeeperException.Code` this error corresponds to. Client-side argument errors map to
    /// `BadArguments`, as ZooKeeper's server reports them.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Keeper { code, .. } => *code,
            Error::InvalidPath { .. }
            | Error::InvalidConnectString { .. }
            | Error::InvalidArgument(_) => ErrorCode::BadArguments,
        }
    }

    /// The path the failed request named ("" if none).
    pub fn path(&self) -> &str {
        match self {
            Error::Keeper { path, .. } | Error::InvalidPath { path, .. } => path,
            _ => "",
        }
    }

    /// True if the outcome of the request is unknown: the connection was lost after it may have
    /// been sent. Recipes retry such operations idempotently.
    pub fn is_connection_loss(&self) -> bool {
        self.code() == ErrorCode::ConnectionLoss
    }
}

/// The result of a client operation.
pub type Result<T> = std::result::Result<T, Error>;

fn for_path(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" for {path}")
    }
}

/// `KeeperException.getCodeMessage`: the words ZooKeeper prints for each code.
pub fn code_message(code: ErrorCode) -> &'static str {
    use ErrorCode as C;
    match code {
        C::Ok => "ok",
        C::SystemError => "SystemError",
        C::RuntimeInconsistency => "RuntimeInconsistency",
        C::DataInconsistency => "DataInconsistency",
        C::ConnectionLoss => "ConnectionLoss",
        C::MarshallingError => "MarshallingError",
        C::NewConfigNoQuorum => "NewConfigNoQuorum",
        C::ReconfigInProgress => "ReconfigInProgress",
        C::Unimplemented => "Unimplemented",
        C::OperationTimeout => "OperationTimeout",
        C::BadArguments => "BadArguments",
        C::UnknownSession => "UnknownSession",
        C::ApiError => "APIError",
        C::NoNode => "NoNode",
        C::NoAuth => "NoAuth",
        C::BadVersion => "BadVersion",
        C::NoChildrenForEphemerals => "NoChildrenForEphemerals",
        C::NodeExists => "NodeExists",
        C::InvalidAcl => "InvalidACL",
        C::AuthFailed => "AuthFailed",
        C::NotEmpty => "Directory not empty",
        C::SessionExpired => "Session expired",
        C::InvalidCallback => "Invalid callback",
        C::SessionMoved => "Session moved",
        C::NotReadOnly => "Not a read-only call",
        C::EphemeralOnLocalSession => "Ephemeral node on local session",
        C::NoWatcher => "No such watcher",
        C::RequestTimeout => "RequestTimeout",
        C::ReconfigDisabled => "Reconfig is disabled",
        C::SessionClosedRequireSaslAuth => "Session closed because client failed to authenticate",
        C::QuotaExceeded => "Quota has exceeded",
        C::ThrottledOp => "Op throttled due to high load",
    }
}

/// Maps a wire error code to an [`ErrorCode`]; a code this client does not know becomes
/// `SystemError` rather than a panic (a newer server may send one).
pub fn error_code_from_wire(code: i32) -> ErrorCode {
    ErrorCode::from_i32(code).unwrap_or(ErrorCode::SystemError)
}
