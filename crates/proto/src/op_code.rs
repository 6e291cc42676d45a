//! Operation codes (`ZooDefs.OpCode`). There is no op code 10.

/// A request type. Unknown codes are kept as `i32` by callers, never panicked on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum OpCode {
    Notification = 0,
    Create = 1,
    Delete = 2,
    Exists = 3,
    GetData = 4,
    SetData = 5,
    GetAcl = 6,
    SetAcl = 7,
    GetChildren = 8,
    Sync = 9,
    Ping = 11,
    GetChildren2 = 12,
    Check = 13,
    Multi = 14,
    Create2 = 15,
    Reconfig = 16,
    CheckWatches = 17,
    RemoveWatches = 18,
    CreateContainer = 19,
    DeleteContainer = 20,
    CreateTtl = 21,
    MultiRead = 22,
    Auth = 100,
    SetWatches = 101,
    Sasl = 102,
    GetEphemerals = 103,
    GetAllChildrenNumber = 104,
    SetWatches2 = 105,
    AddWatch = 106,
    WhoAmI = 107,
    CreateSession = -10,
    CloseSession = -11,
    Error = -1,
}

impl OpCode {
    pub fn from_i32(code: i32) -> Option<OpCode> {
        use OpCode::*;
        Some(match code {
            0 => Notification,
            1 => Create,
            2 => Delete,
            3 => Exists,
            4 => GetData,
            5 => SetData,
            6 => GetAcl,
            7 => SetAcl,
            8 => GetChildren,
            9 => Sync,
            11 => Ping,
            12 => GetChildren2,
            13 => Check,
            14 => Multi,
            15 => Create2,
            16 => Reconfig,
            17 => CheckWatches,
            18 => RemoveWatches,
            19 => CreateContainer,
            20 => DeleteContainer,
            21 => CreateTtl,
            22 => MultiRead,
            100 => Auth,
            101 => SetWatches,
            102 => Sasl,
            103 => GetEphemerals,
            104 => GetAllChildrenNumber,
            105 => SetWatches2,
            106 => AddWatch,
            107 => WhoAmI,
            -10 => CreateSession,
            -11 => CloseSession,
            -1 => Error,
            _ => return None,
        })
    }

    pub fn code(self) -> i32 {
        self as i32
    }

    /// The short name ZooKeeper's `cons` output and logs use for the last operation.
    pub fn short_name(self) -> &'static str {
        use OpCode::*;
        match self {
            Notification => "NOTF",
            Create | Create2 | CreateContainer | CreateTtl => "CREA",
            Delete | DeleteContainer => "DELE",
            Exists => "EXIS",
            GetData => "GETD",
            SetData => "SETD",
            GetAcl => "GETA",
            SetAcl => "SETA",
            GetChildren | GetChildren2 => "GETC",
            Sync => "SYNC",
            Ping => "PING",
            Check => "CHEC",
            Multi => "MULT",
            MultiRead => "MLTR",
            Reconfig => "RECO",
            CheckWatches => "CHKW",
            RemoveWatches => "REMW",
            Auth => "AUTH",
            SetWatches | SetWatches2 => "SETW",
            Sasl => "SASL",
            GetEphemerals => "GETE",
            GetAllChildrenNumber => "GETACN",
            AddWatch => "ADDW",
            WhoAmI => "HOMI",
            CreateSession => "SESS",
            CloseSession => "CLOS",
            Error => "ERR",
        }
    }
}

/// Special xids (`ClientCnxn`): replies carrying them are not answers to numbered requests.
pub mod xid {
    pub const NOTIFICATION: i32 = -1;
    pub const PING: i32 = -2;
    pub const AUTH: i32 = -4;
    pub const SET_WATCHES: i32 = -8;
}
