//! Fast Leader Election (ZAB.md §3): votes ordered by (epoch, zxid, sid); a round ends when a
//! quorum of voters agrees and nothing better arrives for `finalize_wait_ms`; a late joiner
//! learns an established leader from the FOLLOWING/LEADING answers of a quorum.
//!
//! Pure logic: the caller sends the notifications returned and acts on the decision.

use crate::config::{Config, Millis, Sid};
use crate::message::{Notification, PeerState, Vote};
use std::collections::BTreeMap;

/// What the election asks of its caller after one input.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ElectionStep {
    /// Broadcast our current notification to every peer.
    pub broadcast: bool,
    /// Answer one peer with our current notification.
    pub reply_to: Option<Sid>,
    pub decision: Option<Decision>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Lead,
    /// Follow (or observe) this leader; `epoch` is its advertised epoch when known.
    Follow {
        leader: Sid,
    },
}

#[derive(Debug)]
pub struct Election {
    round: u64,
    vote: Vote,
    /// Whether we count: observers and amnesiac servers do not.
    voter: bool,
    /// Votes of LOOKING voters in our round.
    received: BTreeMap<Sid, Vote>,
    /// Votes of servers that already follow or lead, with their state and round.
    out_of_election: BTreeMap<Sid, (Vote, PeerState, u64)>,
    finalize_at: Option<Millis>,
    resend_at: Millis,
    resend_interval: Millis,
    pub started_at: Millis,
}

impl Election {
    /// Starts a new round with a vote for ourselves.
    pub fn start(
        config: &Config,
        previous_round: u64,
        initial: Vote,
        voter: bool,
        now: Millis,
    ) -> Election {
        assert_eq!(initial.leader, config.my_id);
        Election {
            round: previous_round + 1,
            vote: initial,
            voter,
            received: BTreeMap::new(),
            out_of_election: BTreeMap::new(),
            finalize_at: None,
            resend_at: now + config.notification_interval_min_ms,
            resend_interval: config.notification_interval_min_ms,
            started_at: now,
        }
    }

    pub fn round(&self) -> u64 {
        self.round
    }

    pub fn vote(&self) -> Vote {
        self.vote
    }

    pub fn notification(&self) -> Notification {
        Notification {
            vote: self.vote,
            round: self.round,
            state: PeerState::Looking,
            voter: self.voter,
        }
    }

    /// Handles one notification from `from`. `initial` is our own vote for ourselves, which
    /// a new round starts from.
    pub fn on_notification(
        &mut self,
        config: &Config,
        from: Sid,
        n: &Notification,
        initial: Vote,
        now: Millis,
    ) -> ElectionStep {
        let mut step = ElectionStep::default();
        let counted = n.voter && config.is_voter(from);
        match n.state {
            PeerState::Looking => {
                if !counted || !self.voter {
                    // A non-voter (observer or amnesiac) only ever follows an established
                    // leader, which answers it itself; LOOKING servers have nothing to tell it
                    // and it has nothing to tell them (answering each other would never stop).
                    return step;
                }
                self.heard(config, now);
                if n.round > self.round {
                    self.round = n.round;
                    self.received.clear();
                    self.finalize_at = None;
                    self.vote = if n.vote.beats(&initial) && self.voter {
                        n.vote
                    } else if self.voter {
                        initial
                    } else {
                        self.vote
                    };
                    step.broadcast = true;
                } else if n.round < self.round {
                    step.reply_to = Some(from);
                    return step;
                } else if self.voter && n.vote.beats(&self.vote) {
                    self.vote = n.vote;
                    self.finalize_at = None;
                    step.broadcast = true;
                }
                self.received.insert(from, n.vote);
                if self.voter && self.quorum_agrees_with_own_vote(config) {
                    if self.finalize_at.is_none() {
                        self.finalize_at = Some(now + config.finalize_wait_ms);
                    }
                } else {
                    self.finalize_at = None;
                }
            }
            PeerState::Following | PeerState::Leading | PeerState::Observing => {
                if n.state != PeerState::Observing && counted {
                    if n.round == self.round && self.voter {
                        self.received.insert(from, n.vote);
                    }
                    self.out_of_election
                        .insert(from, (n.vote, n.state, n.round));
                }
                step.decision = self
                    .same_round_leader(config, n)
                    .or_else(|| self.established_leader(config, n));
                if let Some(Decision::Follow { .. }) = step.decision {
                    self.round = self.round.max(n.round);
                }
            }
        }
        step
    }

    /// In our own round, a leader that our own vote plus the votes of this round name, and
    /// that itself says it leads (FLE counts its own notification in `recvset`).
    fn same_round_leader(&self, config: &Config, n: &Notification) -> Option<Decision> {
        let leader = n.vote.leader;
        if !self.voter || n.round != self.round || leader == config.my_id {
            return None;
        }
        let mine = usize::from(self.vote.leader == leader);
        let agree = mine
            + self
                .received
                .iter()
                .filter(|(sid, v)| **sid != config.my_id && v.leader == leader)
                .count();
        let leader_says_leading = self
            .out_of_election
            .get(&leader)
            .is_some_and(|(_, state, round)| *state == PeerState::Leading && *round == self.round);
        (agree >= config.quorum_size() && leader_says_leading)
            .then_some(Decision::Follow { leader })
    }

    /// Follow a leader that a quorum reports, and that itself says it leads (`checkLeader`).
    /// We never count ourselves here, so an amnesiac learns the leader from others only.
    fn established_leader(&self, config: &Config, n: &Notification) -> Option<Decision> {
        let leader = n.vote.leader;
        if leader == config.my_id {
            return None;
        }
        let agree = self
            .out_of_election
            .iter()
            .filter(|(_, (v, state, _))| {
                *state != PeerState::Observing && v.leader == leader && v.epoch == n.vote.epoch
            })
            .count();
        let leader_says_leading = self
            .out_of_election
            .get(&leader)
            .is_some_and(|(v, state, _)| *state == PeerState::Leading && v.epoch == n.vote.epoch);
        (agree >= config.quorum_size() && leader_says_leading)
            .then_some(Decision::Follow { leader })
    }

    fn quorum_agrees_with_own_vote(&self, config: &Config) -> bool {
        let others = self
            .received
            .iter()
            .filter(|(sid, v)| **sid != config.my_id && **v == self.vote)
            .count();
        others + 1 >= config.quorum_size()
    }

    /// Time passes: decide after the finalize wait, or re-broadcast an unanswered vote.
    pub fn on_tick(&mut self, config: &Config, now: Millis) -> ElectionStep {
        let mut step = ElectionStep::default();
        if let Some(at) = self.finalize_at {
            if now >= at {
                assert!(self.voter, "a non-voter never finalizes");
                step.decision = Some(if self.vote.leader == config.my_id {
                    Decision::Lead
                } else {
                    Decision::Follow {
                        leader: self.vote.leader,
                    }
                });
                return step;
            }
        }
        if now >= self.resend_at {
            self.resend_interval =
                (self.resend_interval * 2).min(config.notification_interval_max_ms);
            self.resend_at = now + self.resend_interval;
            step.broadcast = true;
        }
        step
    }

    /// Any notification resets the back-off, as FLE's poll succeeds.
    pub fn heard(&mut self, config: &Config, now: Millis) {
        self.resend_interval = config.notification_interval_min_ms;
        self.resend_at = now + self.resend_interval;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zxid::Zxid;

    fn config(me: Sid) -> Config {
        Config::new(me, [1, 2, 3].into(), Default::default())
    }

    fn vote(leader: Sid, epoch: u32, counter: u32) -> Vote {
        Vote {
            leader,
            zxid: Zxid::new(epoch.max(1), counter),
            epoch,
        }
    }

    fn looking(v: Vote, round: u64) -> Notification {
        Notification {
            vote: v,
            round,
            state: PeerState::Looking,
            voter: true,
        }
    }

    #[test]
    fn epoch_beats_longer_log() {
        assert!(vote(1, 2, 1).beats(&vote(3, 1, 99)));
        assert!(vote(3, 1, 5).beats(&vote(2, 1, 5)));
    }

    #[test]
    fn adopts_better_vote_and_decides_after_finalize_wait() {
        let c = config(1);
        let mine = vote(1, 1, 3);
        let mut e = Election::start(&c, 0, mine, true, 0);
        let step = e.on_notification(&c, 2, &looking(vote(2, 1, 5), 1), mine, 1);
        assert!(step.broadcast);
        assert_eq!(e.vote().leader, 2);
        assert_eq!(e.on_tick(&c, 5).decision, None);
        let step = e.on_tick(&c, 1 + c.finalize_wait_ms);
        assert_eq!(step.decision, Some(Decision::Follow { leader: 2 }));
    }

    #[test]
    fn better_vote_during_finalize_restarts_it() {
        let c = Config::new(1, [1, 2, 3, 4, 5].into(), Default::default());
        let mine = vote(1, 1, 9);
        let mut e = Election::start(&c, 0, mine, true, 0);
        e.on_notification(&c, 2, &looking(vote(1, 1, 9), 1), mine, 1);
        e.on_notification(&c, 4, &looking(vote(1, 1, 9), 1), mine, 1);
        let step = e.on_notification(&c, 3, &looking(vote(3, 2, 1), 1), mine, 2);
        assert!(step.broadcast);
        assert_eq!(
            e.on_tick(&c, 100).decision,
            None,
            "no quorum for the new vote yet"
        );
    }

    #[test]
    fn higher_round_resets_and_lower_round_gets_a_reply() {
        let c = config(1);
        let mine = vote(1, 1, 1);
        let mut e = Election::start(&c, 4, mine, true, 0);
        let step = e.on_notification(&c, 2, &looking(vote(2, 1, 0), 3), mine, 1);
        assert_eq!(step.reply_to, Some(2));
        let step = e.on_notification(&c, 2, &looking(vote(2, 1, 0), 9), mine, 1);
        assert!(step.broadcast);
        assert_eq!(e.round(), 9);
        assert_eq!(e.vote(), mine);
    }

    #[test]
    fn late_joiner_follows_established_leader_only_if_it_says_leading() {
        let c = config(3);
        let mine = vote(3, 1, 1);
        let mut e = Election::start(&c, 0, mine, true, 0);
        let following = Notification {
            vote: vote(1, 2, 0),
            round: 7,
            state: PeerState::Following,
            voter: true,
        };
        assert_eq!(e.on_notification(&c, 2, &following, mine, 1).decision, None);
        let leading = Notification {
            state: PeerState::Leading,
            ..following
        };
        let step = e.on_notification(&c, 1, &leading, mine, 2);
        assert_eq!(step.decision, Some(Decision::Follow { leader: 1 }));
    }

    #[test]
    fn non_voter_never_finalizes_and_is_never_counted() {
        let c = config(1);
        let mine = vote(1, 5, 5);
        let mut amnesiac = Election::start(&c, 0, mine, false, 0);
        amnesiac.on_notification(&c, 2, &looking(vote(2, 1, 1), 1), mine, 1);
        amnesiac.on_notification(&c, 3, &looking(vote(2, 1, 1), 1), mine, 1);
        assert_eq!(amnesiac.on_tick(&c, 1000).decision, None);

        let mut voter = Election::start(&c, 0, mine, true, 0);
        let from_amnesiac = Notification {
            voter: false,
            ..looking(vote(1, 5, 5), 1)
        };
        let step = voter.on_notification(&c, 2, &from_amnesiac, mine, 1);
        assert_eq!(
            step.reply_to, None,
            "LOOKING servers do not answer non-voters"
        );
        assert_eq!(voter.on_tick(&c, 1000).decision, None);
    }
}
