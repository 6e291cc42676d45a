//! The fault injector of the safety phase: crashes (any server, or the leader), partitions
//! (halves, a bridge, one-way links), clogged links, process pauses longer than syncLimit,
//! wiped disks (amnesia), whole-ensemble power loss and planned leadership hand-overs. Each fault heals on its own schedule.

use crate::options::FaultKind;
use crate::world::{Event, World};
use zab::{Role, Sid};

impl World {
    fn up_servers(&self) -> Vec<Sid> {
        self.servers
            .iter()
            .filter(|s| s.is_up())
            .map(|s| s.sid)
            .collect()
    }

    fn leader_now(&self) -> Option<Sid> {
        self.servers
            .iter()
            .find(|s| s.zab.as_ref().map(|z| z.role()) == Some(Role::Leading))
            .map(|s| s.sid)
    }

    pub fn schedule_restart(&mut self, sid: Sid) {
        let at = self.now + self.rng.range(20, 1500);
        self.schedule(at, Event::Restart { node: sid });
    }

    fn schedule_heal(&mut self) {
        let at = self.now + self.rng.range(100, 2000);
        self.schedule(at, Event::Heal);
    }

    /// A random split of all servers into two non-empty sides.
    fn split(&mut self) -> (Vec<Sid>, Vec<Sid>) {
        let mut a = Vec::new();
        let mut b = Vec::new();
        for sid in self.all_sids() {
            if self.rng.chance(0.5) {
                a.push(sid);
            } else {
                b.push(sid);
            }
        }
        if a.is_empty() {
            a.push(b.remove(0));
        }
        if b.is_empty() {
            b.push(a.remove(0));
        }
        (a, b)
    }

    pub fn inject(&mut self, kind: FaultKind) {
        self.trace.line(self.now, &format!("fault {kind:?}"));
        match kind {
            FaultKind::Crash => {
                let up = self.up_servers();
                if let Some(&sid) = self.rng.pick(&up) {
                    self.crash(sid);
                    self.schedule_restart(sid);
                }
            }
            FaultKind::CrashLeader => {
                if let Some(sid) = self.leader_now() {
                    self.crash(sid);
                    self.schedule_restart(sid);
                }
            }
            FaultKind::Partition => {
                let (a, b) = self.split();
                for &x in &a {
                    for &y in &b {
                        self.net.block(x, y);
                        self.net.block(y, x);
                    }
                }
                self.schedule_heal();
            }
            FaultKind::OneWay => {
                let (a, b) = self.split();
                for &x in &a {
                    for &y in &b {
                        self.net.block(x, y);
                    }
                }
                self.schedule_heal();
            }
            FaultKind::Bridge => {
                let (mut a, b) = self.split();
                // One server of side a talks to both sides; the rest of a and b are cut.
                let bridge = a.pop();
                for &x in &a {
                    for &y in &b {
                        self.net.block(x, y);
                        self.net.block(y, x);
                    }
                }
                let _ = bridge;
                self.schedule_heal();
            }
            FaultKind::Clog => {
                let all = self.all_sids();
                let from = self.rng.pick(&all).copied();
                let to = self.rng.pick(&all).copied();
                if let (Some(from), Some(to)) = (from, to) {
                    if from != to {
                        let until = self.now + self.rng.range(100, 1000);
                        self.net.clog(from, to, until);
                    }
                }
            }
            FaultKind::Pause => {
                let up = self.up_servers();
                if let Some(&sid) = self.rng.pick(&up) {
                    let until = self.now + self.rng.range(100, 800);
                    self.pause(sid, until);
                }
            }
            FaultKind::Wipe => {
                // Keep a quorum with whole state, or the ensemble is (by design) unavailable.
                let f = (self.opts.servers - 1) / 2;
                let wiped = self.servers.iter().filter(|s| s.disk.wiped).count();
                let up = self.up_servers();
                if wiped < f {
                    if let Some(&sid) = self.rng.pick(&up) {
                        self.wipe(sid);
                        self.schedule_restart(sid);
                    }
                }
            }
            FaultKind::CrashAfterSyncAck => self.crash_after_sync_ack = true,
            FaultKind::HandOver => {
                if let Some(sid) = self.leader_now() {
                    let within = self.config_for(sid).tick_ms * 2;
                    self.with_zab(sid, |z, now| {
                        let _ = z.transfer_leadership(now, within);
                    });
                }
            }
            FaultKind::PowerLoss => {
                for sid in self.all_sids() {
                    self.crash(sid);
                    self.schedule_restart(sid);
                }
                // The window counts from the first power loss since the last establishment.
                self.durability.power_loss_at.get_or_insert(self.now);
            }
        }
    }
}
