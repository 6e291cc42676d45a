//! Host variants that are deliberately wrong, so the simulator can prove it catches them in
//! the code the server runs (`planted-bugs` feature; never in production builds). Each lives
//! where the bug would: see the `bug(...)` checks in the replica.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostBug {
    /// A request the full leader backlog cannot take is dropped without a word: its client's
    /// later writes are applied but never answered (the bug the replica issue found).
    DropWhenBacklogFull,
    /// A reply that reflects a change leaves before that change's watch event.
    ReplyBeforeEvent,
    /// A member that is not the leader expires sessions by its own clock, though it never
    /// hears from clients of other members.
    LearnerExpiresSessions,
    /// The leader takes due sessions off its tracker whether or not its backlog has room, and
    /// an expiry the full backlog refuses is forgotten: the session never ends.
    ForgetRefusedExpiry,
    /// A member without a leader holds its clients forever instead of releasing them at the
    /// hold's bound, so they never move to the majority side.
    HoldForever,
    /// A member that serves again sends every waiting write again, even one its log already
    /// holds from the leader (committed or about to be): that write runs twice.
    ResendLogged,
    /// A leader keeps the requests of a member whose link broke in its backlog, and proposes
    /// them after that member synced and sent them again: they run twice.
    KeepWorkOfLostMembers,
    /// Work queued while a hand-over was under way is drained only by a commit: when the
    /// hand-over is abandoned and no commit comes, the leader stalls (sim seed 9036872).
    StallAfterAbandonedHandOver,
    /// A member a reconfiguration leaves out holds its clients as if it had lost its leader,
    /// and when a later configuration takes it back sends their forwarded writes again,
    /// though its leader never lost them: they run twice (sim seed 34943 with --reconfig).
    HoldWhenExcluded,
}

impl HostBug {
    pub const ALL: [HostBug; 9] = [
        HostBug::DropWhenBacklogFull,
        HostBug::ReplyBeforeEvent,
        HostBug::LearnerExpiresSessions,
        HostBug::ForgetRefusedExpiry,
        HostBug::HoldForever,
        HostBug::ResendLogged,
        HostBug::KeepWorkOfLostMembers,
        HostBug::StallAfterAbandonedHandOver,
        HostBug::HoldWhenExcluded,
    ];

    pub fn name(self) -> &'static str {
        match self {
            HostBug::DropWhenBacklogFull => "drop-when-backlog-full",
            HostBug::ReplyBeforeEvent => "reply-before-event",
            HostBug::LearnerExpiresSessions => "learner-expires-sessions",
            HostBug::ForgetRefusedExpiry => "forget-refused-expiry",
            HostBug::HoldForever => "hold-forever",
            HostBug::ResendLogged => "resend-logged",
            HostBug::KeepWorkOfLostMembers => "keep-work-of-lost-members",
            HostBug::StallAfterAbandonedHandOver => "stall-after-abandoned-hand-over",
            HostBug::HoldWhenExcluded => "hold-when-excluded",
        }
    }

    pub fn from_name(name: &str) -> Option<HostBug> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }
}
