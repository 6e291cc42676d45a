//! The run's trace: a readable line per event when asked for (`--seed S`), and always a hash
//! of every event, so two runs of one seed can be compared for determinism.

use zab::{Message, Millis, Sid};

#[derive(Debug)]
pub struct Trace {
    verbose: bool,
    hash: u64,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl Trace {
    pub fn new(verbose: bool) -> Trace {
        Trace {
            verbose,
            hash: FNV_OFFSET,
        }
    }

    pub fn hash(&self) -> u64 {
        self.hash
    }

    fn eat(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.hash ^= u64::from(*b);
            self.hash = self.hash.wrapping_mul(FNV_PRIME);
        }
    }

    pub fn line(&mut self, now: Millis, text: &str) {
        self.eat(&now.to_le_bytes());
        self.eat(text.as_bytes());
        if self.verbose {
            println!("{now:>8} {text}");
        }
    }

    /// A readable line that is not part of the hash (client chatter, printed only when
    /// verbose), so the hash of a seed is the same with and without `--seed`'s trace.
    pub fn note(&self, now: Millis, text: &str) {
        if self.verbose {
            println!("{now:>8} {text}");
        }
    }

    pub fn event(&mut self, now: Millis, sid: Sid, kind: &str, peer: Sid, value: u64) {
        self.eat(&now.to_le_bytes());
        self.eat(&sid.to_le_bytes());
        self.eat(kind.as_bytes());
        self.eat(&peer.to_le_bytes());
        self.eat(&value.to_le_bytes());
        if self.verbose {
            let z = zab::Zxid(value);
            println!("{now:>8} s{sid} {kind} peer={peer} value={value} ({z})");
        }
    }

    pub fn message(&mut self, now: Millis, from: Sid, to: Sid, msg: &Message) {
        self.eat(&now.to_le_bytes());
        self.eat(&from.to_le_bytes());
        self.eat(&to.to_le_bytes());
        self.eat(msg.kind().as_bytes());
        if self.verbose {
            let detail = match msg {
                Message::Notification(n) => format!(
                    "vote=(s{}, {}, e{}) round={} {:?} voter={}",
                    n.vote.leader, n.vote.zxid, n.vote.epoch, n.round, n.state, n.voter
                ),
                Message::Proposal(e) | Message::Inform(e) => format!("{}", e.zxid),
                Message::Commit { zxid }
                | Message::Ack { zxid }
                | Message::Diff { zxid }
                | Message::Trunc { zxid }
                | Message::UpToDate { committed: zxid }
                | Message::Snap { zxid, .. } => format!("{zxid}"),
                Message::LeaderInfo { epoch } | Message::NewLeader { epoch } => format!("e{epoch}"),
                Message::AckEpoch {
                    current_epoch,
                    last_zxid,
                } => format!("current={current_epoch:?} last={last_zxid}"),
                Message::FollowerInfo {
                    accepted_epoch,
                    last_zxid,
                    recovering,
                    ..
                } => format!("accepted=e{accepted_epoch} last={last_zxid} recovering={recovering}"),
                Message::Ping => String::new(),
                Message::Abdicate { successor } => format!(
                    "successor=(s{}, {}, e{})",
                    successor.leader, successor.zxid, successor.epoch
                ),
                Message::Config {
                    membership: m,
                    committed,
                } => format!(
                    "version={} voters={:?} observers={:?} committed={committed}",
                    m.version, m.voters, m.observers
                ),
            };
            println!("{now:>8} s{from} -> s{to} {} {detail}", msg.kind());
        }
    }
}
