//! Storage variants that are deliberately wrong, so the simulator can prove it catches them in
//! the code the server runs (`planted-bugs` feature; never in production builds).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageBug {
    /// Group commit reports a zxid durable before its fsync has returned.
    DurableBeforeFsync,
    /// Diskless: the failure checkpoint's "whole" mark survives the next acknowledgement, so
    /// a restart trusts a checkpoint that lacks what the server acknowledged after it.
    KeepCheckpointAfterAck,
    /// The owner of the durability reports is not told when TRUNC or a leader's snapshot
    /// cuts the log back, so a report still unread names entries the log no longer holds.
    StaleDurableAfterTruncate,
    /// A leader's snapshot older than one the learner took itself leaves the learner's newer
    /// snapshot in place: after a crash, recovery loads it and refuses the new log generation
    /// (found by the 100,000-seed soak).
    KeepSupersededSnapshots,
    /// A leader's snapshot replaces the log at once, before the stream after it is durable:
    /// a crash in between loses transactions this server had acknowledged.
    DropLogAtSnap,
    /// Diskless: a delta batch opens with its epoch label instead of closing with it, so a
    /// crash that tears the batch leaves a label claiming transactions the state lacks.
    LabelOpensBatch,
}

impl StorageBug {
    pub const ALL: [StorageBug; 6] = [
        StorageBug::DurableBeforeFsync,
        StorageBug::KeepCheckpointAfterAck,
        StorageBug::StaleDurableAfterTruncate,
        StorageBug::KeepSupersededSnapshots,
        StorageBug::DropLogAtSnap,
        StorageBug::LabelOpensBatch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StorageBug::DurableBeforeFsync => "durable-before-fsync",
            StorageBug::KeepCheckpointAfterAck => "keep-checkpoint-after-ack",
            StorageBug::StaleDurableAfterTruncate => "stale-durable-after-truncate",
            StorageBug::KeepSupersededSnapshots => "keep-superseded-snapshots",
            StorageBug::DropLogAtSnap => "drop-log-at-snap",
            StorageBug::LabelOpensBatch => "label-opens-batch",
        }
    }

    pub fn from_name(name: &str) -> Option<StorageBug> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }
}
