//! Fast Leader Election (ZAB.md §3): votes ordered by (epoch, zxid, sid); a round ends when a
//! quorum of voters agrees and nothing better arrives for `finalize_wait_ms`; a late joiner
//! learns an established leader from the FOLLOWING/LEADING answers of a quorum.
//!
//! # Full house (diskless mode only)
//! Servers recovering from amnesia never count toward a quorum. When so many voters lost their
//! memory that the whole ones are no quorum, the ensemble would wait forever. In diskless mode
//! amnesiac voters therefore take part in the rounds (their notifications say `voter: false`),
//! and when notifications of *every* voter of the configuration are present in one round while
//! the whole ones are fewer than a quorum, the round is a *full house*: every server adopts the
//! best vote among all of them, and the round ends when all agree. The leader's discovery then
//! checks the same thing against fresh reports of every voter (see `leader.rs`). A voter that
//! is slow or partitioned is not present, so no full house forms without it. Durable mode never
//! forms a full house: there amnesia means a lost disk, and silently electing without its data
//! would break the durable promise.
//!
//! Pure logic: the caller sends the notifications returned and acts on the decision.

use crate::config::{Config, Durability, Millis, Sid};
use crate::message::{Notification, PeerState, Vote};
use crate::zxid::Zxid;
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
    /// Votes of LOOKING amnesiac voters in our round (diskless mode only): never counted toward
    /// a quorum, only toward a full house.
    uncounted: BTreeMap<Sid, Vote>,
    /// Votes of servers that already follow or lead, with their state and round.
    out_of_election: BTreeMap<Sid, (Vote, PeerState, u64)>,
    finalize_at: Option<Millis>,
    /// The pending finalization is a full house's.
    finalize_full_house: bool,
    /// The decision was taken by a full house.
    decided_by_full_house: bool,
    resend_at: Millis,
    resend_interval: Millis,
    pub started_at: Millis,
    /// The successor a leader's hand-over designated: a round whose quorum agrees on it ends
    /// without the finalize wait (`transfer.rs`).
    designated: Option<Sid>,
}

impl Election {
    /// Starts a new round with a vote for ourselves, or for a designated successor.
    pub fn start(
        config: &Config,
        previous_round: u64,
        initial: Vote,
        voter: bool,
        now: Millis,
    ) -> Election {
        Election {
            round: previous_round + 1,
            vote: initial,
            voter,
            received: BTreeMap::new(),
            uncounted: BTreeMap::new(),
            out_of_election: BTreeMap::new(),
            finalize_at: None,
            finalize_full_house: false,
            decided_by_full_house: false,
            resend_at: now + config.notification_interval_min_ms,
            resend_interval: config.notification_interval_min_ms,
            started_at: now,
            designated: None,
        }
    }

    /// Marks `successor` as the one a leader's hand-over designated (see `transfer.rs`).
    pub fn designated(mut self, successor: Option<Sid>) -> Election {
        self.designated = successor;
        self
    }

    pub fn round(&self) -> u64 {
        self.round
    }

    /// Whether this server counts in the round (see [`Election::start`]).
    pub fn is_voter(&self) -> bool {
        self.voter
    }

    pub fn vote(&self) -> Vote {
        self.vote
    }

    /// True once a decision was taken by a full house: the leader must then hear every voter
    /// in discovery, and may count amnesiac voters.
    pub fn decided_by_full_house(&self) -> bool {
        self.decided_by_full_house
    }

    pub fn notification(&self) -> Notification {
        Notification {
            vote: self.vote,
            round: self.round,
            state: PeerState::Looking,
            voter: self.voter,
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
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
            PeerState::Looking => self.on_looking(config, from, n, initial, now, &mut step),
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
                    .or_else(|| self.established_leader(config, n))
                    .or_else(|| self.designated_leading(config, from, n));
                if let Some(Decision::Follow { .. }) = step.decision {
                    self.round = self.round.max(n.round);
                }
            }
        }
        step
    }

    /// A notification from a LOOKING server (see the module docs for the full house).
    fn on_looking(
        &mut self,
        config: &Config,
        from: Sid,
        n: &Notification,
        initial: Vote,
        now: Millis,
        step: &mut ElectionStep,
    ) {
        let counted = n.voter && config.is_voter(from);
        let amnesiac_peer = !n.voter && config.is_voter(from);
        let takes_part = full_house_allowed(config) && (counted || amnesiac_peer);
        if !takes_part && (!counted || !self.voter) {
            // A non-voter (observer or amnesiac) only ever follows an established
            // leader, which answers it itself; LOOKING servers have nothing to tell it
            // and it has nothing to tell them (answering each other would never stop).
            // Diskless mode is the exception: amnesiac voters take part in the rounds,
            // uncounted, so that a full house can form.
            return;
        }
        self.heard(config, now);
        if n.round > self.round {
            self.round = n.round;
            self.received.clear();
            self.uncounted.clear();
            self.finalize_at = None;
            self.vote = if counted && self.voter && n.vote.beats(&initial) {
                n.vote
            } else {
                initial
            };
            step.broadcast = true;
        } else if n.round < self.round {
            step.reply_to = Some(from);
            return;
        } else if counted && self.voter && n.vote.beats(&self.vote) {
            self.vote = n.vote;
            self.finalize_at = None;
            step.broadcast = true;
        }
        if counted {
            self.uncounted.remove(&from);
            self.received.insert(from, n.vote);
        } else {
            self.received.remove(&from);
            self.uncounted.insert(from, n.vote);
        }
        if self.full_house(config) {
            let best = self.best_present_vote();
            if best.beats(&self.vote) {
                self.vote = best;
                self.finalize_at = None;
                step.broadcast = true;
            }
        }
        self.update_finalize(config, now);
        if self.finalize_at.is_some_and(|at| at <= now) {
            step.decision = Some(self.decide(config));
        }
    }

    /// The round is over: lead if our vote is for ourselves, else follow it.
    fn decide(&mut self, config: &Config) -> Decision {
        assert!(
            self.voter || self.finalize_full_house,
            "a non-voter finalizes only in a full house"
        );
        self.decided_by_full_house = self.finalize_full_house;
        if self.vote.leader == config.my_id {
            Decision::Lead
        } else {
            Decision::Follow {
                leader: self.vote.leader,
            }
        }
    }

    /// In our own round, a leader that our own vote plus the votes of this round name, and
    /// that itself says it leads (FLE counts its own notification in `recvset`).
    fn same_round_leader(&self, config: &Config, n: &Notification) -> Option<Decision> {
        let leader = n.vote.leader;
        if !self.voter || n.round != self.round || leader == config.my_id {
            return None;
        }
        let agrees = |sid: Sid| {
            if sid == config.my_id {
                self.vote.leader == leader
            } else {
                self.received.get(&sid).is_some_and(|v| v.leader == leader)
            }
        };
        let leader_says_leading = self
            .out_of_election
            .get(&leader)
            .is_some_and(|(_, state, round)| *state == PeerState::Leading && *round == self.round);
        (config.is_quorum(agrees) && leader_says_leading).then_some(Decision::Follow { leader })
    }

    /// The successor a hand-over designated says it leads: follow it, whatever the rounds (it
    /// may have decided before our notifications reached it). Following is always safe; its
    /// discovery and sync decide whether it becomes established.
    fn designated_leading(&self, config: &Config, from: Sid, n: &Notification) -> Option<Decision> {
        (self.designated == Some(from)
            && from != config.my_id
            && n.state == PeerState::Leading
            && n.vote.leader == from)
            .then_some(Decision::Follow { leader: from })
    }

    /// Follow a leader that a quorum reports, and that itself says it leads (`checkLeader`).
    /// We never count ourselves here, so an amnesiac learns the leader from others only. (A
    /// server whose configuration is behind the ensemble's learns the newer one from the
    /// answers to its notifications first: see `activation.rs`.)
    fn established_leader(&self, config: &Config, n: &Notification) -> Option<Decision> {
        let leader = n.vote.leader;
        if leader == config.my_id {
            return None;
        }
        let agrees = |sid: Sid| {
            self.out_of_election.get(&sid).is_some_and(|(v, state, _)| {
                *state != PeerState::Observing && v.leader == leader && v.epoch == n.vote.epoch
            })
        };
        let leader_says_leading = self
            .out_of_election
            .get(&leader)
            .is_some_and(|(v, state, _)| *state == PeerState::Leading && v.epoch == n.vote.epoch);
        (config.is_quorum(agrees) && leader_says_leading).then_some(Decision::Follow { leader })
    }

    /// Every voter of the configuration is present in our round (ourselves included), and the
    /// whole ones among them are fewer than a quorum: only a full house can elect.
    fn full_house(&self, config: &Config) -> bool {
        if !full_house_allowed(config) {
            return false;
        }
        let present = config.all_voters().iter().all(|v| {
            *v == config.my_id || self.received.contains_key(v) || self.uncounted.contains_key(v)
        });
        let whole = |sid: Sid| {
            if sid == config.my_id {
                self.voter
            } else {
                self.received.contains_key(&sid)
            }
        };
        present && !config.is_quorum(whole)
    }

    /// The best vote any present voter proposes (our own included).
    fn best_present_vote(&self) -> Vote {
        let mut best = self.vote;
        for v in self.received.values().chain(self.uncounted.values()) {
            if v.beats(&best) {
                best = *v;
            }
        }
        best
    }

    /// Starts (or cancels) the finalize wait: a quorum of whole voters agrees with our vote, or
    /// a full house agrees on it unanimously.
    fn update_finalize(&mut self, config: &Config, now: Millis) {
        let normal = self.voter && self.quorum_agrees_with_own_vote(config);
        let full_house = !normal
            && self.full_house(config)
            && self
                .received
                .values()
                .chain(self.uncounted.values())
                .all(|v| *v == self.vote);
        if normal || full_house {
            // A quorum agreeing on a hand-over's successor need not wait for better votes: the
            // successor holds everything the ending epoch proposed.
            let wait = if normal && self.designated_agreed(config) {
                0
            } else {
                config.finalize_wait_ms
            };
            if self.finalize_at.is_none() || self.finalize_full_house != full_house {
                self.finalize_at = Some(now + wait);
                self.finalize_full_house = full_house;
            }
        } else {
            self.finalize_at = None;
            self.finalize_full_house = false;
        }
    }

    /// Our vote is for the designated successor, and the successor itself is LOOKING in our
    /// round (or is us): it will take the FOLLOWERINFO we send once we decide.
    fn designated_agreed(&self, config: &Config) -> bool {
        let leader = self.vote.leader;
        self.designated == Some(leader)
            && (leader == config.my_id || self.received.get(&leader) == Some(&self.vote))
    }

    /// The successor a leader's hand-over designated for this round, if any.
    pub fn designated_successor(&self) -> Option<Sid> {
        self.designated
    }

    fn quorum_agrees_with_own_vote(&self, config: &Config) -> bool {
        config.is_quorum(|sid| sid == config.my_id || self.received.get(&sid) == Some(&self.vote))
    }

    /// Time passes: decide after the finalize wait, or re-broadcast an unanswered vote.
    pub fn on_tick(&mut self, config: &Config, now: Millis) -> ElectionStep {
        let mut step = ElectionStep::default();
        // A configuration of one voter (after a reconfiguration or a lost-quorum recovery) hears
        // no notification that would start the finalize wait: its own vote is a quorum.
        if self.finalize_at.is_none() && self.voter {
            self.update_finalize(config, now);
        }
        if let Some(at) = self.finalize_at {
            if now >= at {
                step.decision = Some(self.decide(config));
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

/// Full houses exist only in diskless mode, and only voters take part in them. While a
/// reconfiguration is pending, a full house needs every voter of both configurations.
fn full_house_allowed(config: &Config) -> bool {
    config.durability == Durability::Diskless && config.is_voter(config.my_id)
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
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
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
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
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
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
            ..looking(vote(1, 5, 5), 1)
        };
        let step = voter.on_notification(&c, 2, &from_amnesiac, mine, 1);
        assert_eq!(
            step.reply_to, None,
            "LOOKING servers do not answer non-voters"
        );
        assert_eq!(voter.on_tick(&c, 1000).decision, None);
    }

    fn diskless(me: Sid) -> Config {
        let mut c = config(me);
        c.durability = Durability::Diskless;
        c
    }

    fn amnesiac(v: Vote, round: u64) -> Notification {
        Notification {
            voter: false,
            config: Zxid::ZERO,
            config_pending: Zxid::ZERO,
            ..looking(v, round)
        }
    }

    #[test]
    fn a_full_house_adopts_the_best_vote_of_all_and_decides() {
        // Server 1 is whole; 2 and 3 are amnesiac, and 3 holds the newest snapshot.
        let c = diskless(1);
        let mine = vote(1, 1, 4);
        let mut e = Election::start(&c, 0, mine, true, 0);
        let step = e.on_notification(&c, 2, &amnesiac(vote(2, 1, 2), 1), mine, 1);
        assert!(!step.broadcast, "two of three present: no full house yet");
        assert_eq!(e.vote(), mine);
        let best = vote(3, 1, 6);
        let step = e.on_notification(&c, 3, &amnesiac(best, 1), mine, 2);
        assert!(
            step.broadcast,
            "a full house adopts the best vote, amnesiac or not"
        );
        assert_eq!(e.vote(), best);
        assert_eq!(
            e.on_tick(&c, 100).decision,
            None,
            "2 still proposes its own vote"
        );
        e.on_notification(&c, 2, &amnesiac(best, 1), mine, 3);
        e.on_notification(&c, 3, &amnesiac(best, 1), mine, 3);
        let step = e.on_tick(&c, 3 + c.finalize_wait_ms);
        assert_eq!(step.decision, Some(Decision::Follow { leader: 3 }));
        assert!(e.decided_by_full_house());
    }

    #[test]
    fn an_amnesiac_voter_takes_part_and_can_be_elected_by_a_full_house() {
        let c = diskless(3);
        let mine = vote(3, 1, 6);
        let mut e = Election::start(&c, 0, mine, false, 0);
        e.on_notification(&c, 1, &looking(vote(1, 1, 4), 1), mine, 1);
        e.on_notification(&c, 2, &amnesiac(vote(2, 1, 2), 1), mine, 1);
        assert_eq!(
            e.on_tick(&c, 50).decision,
            None,
            "the others still disagree"
        );
        e.on_notification(&c, 1, &looking(mine, 1), mine, 60);
        e.on_notification(&c, 2, &amnesiac(mine, 1), mine, 60);
        let step = e.on_tick(&c, 60 + c.finalize_wait_ms);
        assert_eq!(step.decision, Some(Decision::Lead));
        assert!(e.decided_by_full_house());
    }

    #[test]
    fn whole_voters_that_are_a_quorum_elect_as_usual() {
        let c = diskless(1);
        let mine = vote(1, 1, 4);
        let mut e = Election::start(&c, 0, mine, true, 0);
        // An amnesiac with a better snapshot is present, but 1 and 2 are a quorum of whole
        // voters: no full house, and the amnesiac's vote is not adopted.
        e.on_notification(&c, 3, &amnesiac(vote(3, 1, 9), 1), mine, 1);
        e.on_notification(&c, 2, &looking(mine, 1), mine, 1);
        let step = e.on_tick(&c, 1 + c.finalize_wait_ms);
        assert_eq!(step.decision, Some(Decision::Lead));
        assert!(!e.decided_by_full_house());
    }

    #[test]
    fn durable_mode_never_forms_a_full_house() {
        let c = config(1);
        let mine = vote(1, 1, 4);
        let mut e = Election::start(&c, 0, mine, true, 0);
        let step = e.on_notification(&c, 2, &amnesiac(vote(2, 1, 9), 1), mine, 1);
        assert_eq!(step, ElectionStep::default(), "amnesiacs are ignored");
        e.on_notification(&c, 3, &amnesiac(vote(3, 1, 9), 1), mine, 1);
        assert_eq!(e.vote(), mine);
        assert_eq!(e.on_tick(&c, 1000).decision, None);
    }
}
