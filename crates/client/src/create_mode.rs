//! The kinds of znode (`CreateMode`), and which op code creates each.

use proto::OpCode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CreateMode {
    Persistent,
    Ephemeral,
    PersistentSequential,
    EphemeralSequential,
    /// Removed by the server once its last child is gone.
    Container,
    /// Removed after the TTL (ms) passes without a change while it has no children.
    PersistentWithTtl(i64),
    PersistentSequentialWithTtl(i64),
}

impl CreateMode {
    /// The `flags` field of a create request (`CreateMode.toFlag`).
    pub fn flags(self) -> i32 {
        match self {
            CreateMode::Persistent => 0,
            CreateMode::Ephemeral => 1,
            CreateMode::PersistentSequential => 2,
            CreateMode::EphemeralSequential => 3,
            CreateMode::Container => 4,
            CreateMode::PersistentWithTtl(_) => 5,
            CreateMode::PersistentSequentialWithTtl(_) => 6,
        }
    }

    pub fn is_sequential(self) -> bool {
        matches!(
            self,
            CreateMode::PersistentSequential
                | CreateMode::EphemeralSequential
                | CreateMode::PersistentSequentialWithTtl(_)
        )
    }

    pub fn is_ephemeral(self) -> bool {
        matches!(
            self,
            CreateMode::Ephemeral | CreateMode::EphemeralSequential
        )
    }

    pub fn ttl(self) -> Option<i64> {
        match self {
            CreateMode::PersistentWithTtl(ttl) | CreateMode::PersistentSequentialWithTtl(ttl) => {
                Some(ttl)
            }
            _ => None,
        }
    }

    /// The op code the Java client uses (`ZooKeeper.create`): 19 for containers, 21 for TTL
    /// znodes, otherwise create2 (15) so the Stat comes back.
    pub fn op_code(self) -> OpCode {
        match self {
            CreateMode::Container => OpCode::CreateContainer,
            CreateMode::PersistentWithTtl(_) | CreateMode::PersistentSequentialWithTtl(_) => {
                OpCode::CreateTtl
            }
            _ => OpCode::Create2,
        }
    }
}
