//! The host side of each simulated server: executes the actions its Zab core returns, in
//! order (sends, epoch files, log appends and fsyncs, snapshots, deliveries, role changes).

use crate::network::Transit;
use crate::server::{decode_image, encode_image, replay, write_result};
use crate::world::{role_name, CrashPoint, Event, Wire, World};
use tree::Prep;
use zab::{Action, Message, Role, SharedEntry, Sid, Zab, Zxid};

impl World {
    // ----- the host: executing Zab's actions -----

    /// Crashes `sid` now if the armed crash point matches; true if it did.
    pub(crate) fn crash_point(&mut self, sid: Sid, point: CrashPoint) -> bool {
        if self.crash_at != Some(point) {
            return false;
        }
        let learner = matches!(
            self.server(sid).zab.as_ref().map(Zab::role),
            Some(Role::Following | Role::Looking)
        );
        if !learner {
            return false;
        }
        self.crash_at = None;
        self.trace
            .line(self.now, &format!("crash point {point:?} hit at s{sid}"));
        self.crash(sid);
        true
    }

    pub(crate) fn execute(&mut self, sid: Sid, action: Action) {
        let point = match &action {
            Action::SaveCurrentEpoch(_) => Some(CrashPoint::BeforeCurrentEpoch),
            Action::Send {
                msg: Message::Ack { zxid },
                ..
            } if zxid.counter() == 0 => Some(CrashPoint::BeforeNewLeaderAck),
            _ => None,
        };
        if let Some(p) = point {
            if self.crash_point(sid, p) {
                return;
            }
        }
        let after_epoch = matches!(action, Action::SaveCurrentEpoch(_));
        let ack = matches!(point, Some(CrashPoint::BeforeNewLeaderAck));
        self.execute_action(sid, action);
        if after_epoch {
            self.crash_point(sid, CrashPoint::AfterCurrentEpoch);
        }
        if ack && self.crash_at == Some(CrashPoint::AfterNewLeaderAck) {
            self.crash_at = None;
            let at = self.now + self.opts.net_delay_max_ms + 1;
            self.schedule(
                at,
                Event::Crash {
                    node: sid,
                    restart: false,
                },
            );
        }
    }

    pub(crate) fn execute_action(&mut self, sid: Sid, action: Action) {
        match action {
            Action::Abdicated { successor } => {
                self.trace.event(self.now, sid, "abdicated", successor, 0);
            }
            // The model simulator's ensembles never reconfigure: every member is connected.
            Action::MembershipChanged { .. } => {}
            Action::Send { to, msg } => {
                self.trace.message(self.now, sid, to, &msg);
                if self.crash_after_sync_ack
                    && matches!(msg, Message::Ack { zxid } if zxid.counter() == 0)
                {
                    self.crash_after_sync_ack = false;
                    let at = self.now + self.rng.range(0, self.opts.fsync_max_ms);
                    self.schedule(
                        at,
                        Event::Crash {
                            node: sid,
                            restart: true,
                        },
                    );
                }
                self.send_wire(sid, to, Wire::Zab(msg));
            }
            Action::Disconnect { peer } => {
                self.trace.event(self.now, sid, "disconnect", peer, 0);
                self.net.break_connection(sid, peer);
                let incarnation = self.server(peer).incarnation;
                self.schedule(
                    self.now,
                    Event::PeerDown {
                        node: peer,
                        peer: sid,
                        incarnation,
                    },
                );
            }
            Action::SaveAcceptedEpoch(e) => {
                if let Err(err) = self.server_mut(sid).disk.save_accepted_epoch(e) {
                    self.fail(format!("server {sid} disk: {err}"));
                }
            }
            Action::SaveCurrentEpoch(e) => {
                if let Err(err) = self.server_mut(sid).disk.save_current_epoch(e) {
                    self.fail(format!("server {sid} disk: {err}"));
                }
            }
            Action::Append(entry) => {
                let leading = self.server(sid).zab.as_ref().map(Zab::role) == Some(Role::Leading);
                if leading {
                    self.checker.on_propose(sid, &entry);
                    if self.opts.diskless {
                        self.durability_on_propose(entry.zxid);
                    }
                }
                let disk = &mut self.server_mut(sid).disk;
                // Diskless: about to acknowledge a proposal, so a whole checkpoint no longer
                // covers everything acknowledged; the mark goes first (contract point 3).
                disk.whole = None;
                if let Err(err) = disk.append(entry) {
                    self.fail(format!("server {sid} disk: {err}"));
                }
                self.maybe_start_fsync(sid);
            }
            Action::Truncate(z) => {
                self.trace.event(self.now, sid, "truncate", 0, z.0);
                self.server_mut(sid).disk.truncate(z);
                self.maybe_start_fsync(sid);
            }
            Action::SaveSnapshot { zxid, image, .. } => {
                self.trace.event(self.now, sid, "save-snapshot", 0, zxid.0);
                if self.opts.diskless {
                    self.save_leader_snapshot_diskless(sid, zxid, image);
                } else {
                    self.server_mut(sid).disk.save_snapshot(zxid, image);
                }
            }
            Action::SendSnapshot { to, zxid } => {
                let s = self.server(sid);
                let applied_to = s
                    .applied
                    .last()
                    .map_or(Zxid::ZERO, |t| Zxid::from_i64(t.header.zxid));
                let image = encode_image(&s.applied);
                if applied_to != zxid {
                    self.fail(format!(
                        "server {sid}: snapshot asked at {zxid}, applied {applied_to}"
                    ));
                }
                let msg = Message::Snap { zxid, image };
                self.trace.message(self.now, sid, to, &msg);
                self.send_wire(sid, to, Wire::Zab(msg));
            }
            Action::InstallSnapshot { zxid, image } => self.install_snapshot(sid, zxid, &image),
            Action::Deliver(entry) => self.deliver(sid, entry),
            Action::RoleChanged { role, epoch } => self.role_changed(sid, role, epoch),
            Action::RecoveryComplete => {
                self.trace.event(self.now, sid, "recovered", 0, 0);
                self.server_mut(sid).disk.wiped = false;
            }
        }
    }

    pub(crate) fn send_wire(&mut self, from: Sid, to: Sid, wire: Wire) {
        match self.net.send(&mut self.rng, self.now, from, to) {
            Transit::Deliver { at, generation } => self.schedule(
                at,
                Event::Deliver {
                    from,
                    to,
                    generation,
                    wire,
                },
            ),
            Transit::Lost => {}
        }
    }

    pub(crate) fn maybe_start_fsync(&mut self, sid: Sid) {
        if self.server_mut(sid).disk.start_fsync() {
            // Diskless: an append is as durable as it gets once it is in memory.
            let latency = if self.opts.diskless {
                0
            } else {
                self.rng
                    .range(self.opts.fsync_min_ms, self.opts.fsync_max_ms)
            };
            let incarnation = self.server(sid).incarnation;
            self.schedule(
                self.now + latency,
                Event::FsyncDone {
                    node: sid,
                    incarnation,
                },
            );
        }
    }

    pub(crate) fn on_fsync_done(&mut self, sid: Sid, incarnation: u64) {
        if self.server(sid).incarnation != incarnation || !self.server(sid).is_up() {
            return;
        }
        if let Some(z) = self.server_mut(sid).disk.finish_fsync() {
            self.with_zab(sid, |zab, now| zab.handle_log_durable(now, z));
        }
        self.maybe_start_fsync(sid);
    }

    pub(crate) fn install_snapshot(&mut self, sid: Sid, zxid: Zxid, image: &[u8]) {
        let txns = match decode_image(image) {
            Ok(t) => t,
            Err(e) => {
                self.fail(format!("server {sid}: undecodable snapshot: {e}"));
                return;
            }
        };
        self.trace
            .event(self.now, sid, "install-snapshot", 0, zxid.0);
        self.checker.on_image(sid, zxid, &txns);
        let s = self.server_mut(sid);
        s.tree = replay(&txns);
        s.applied = txns;
        s.prep = Prep::default();
        // A leader's SNAP: a committed prefix, labelled (safely) with its zxid's epoch. A busy
        // snapshot of the state it replaced is abandoned.
        s.applied_label = zxid.epoch();
        s.disk.busy = None;
    }

    /// Diskless `SaveSnapshot`: the leader's image is stored durably (never whole: what this
    /// server acknowledged before is not in it), and memory starts over from it.
    fn save_leader_snapshot_diskless(&mut self, sid: Sid, zxid: Zxid, image: zab::Image) {
        let zxids = match decode_image(&image) {
            Ok(txns) => txns.iter().map(|t| Zxid::from_i64(t.header.zxid)).collect(),
            Err(e) => {
                self.fail(format!("server {sid}: undecodable snapshot: {e}"));
                return;
            }
        };
        let disk = &mut self.server_mut(sid).disk;
        disk.store_snapshot(zxid, zxid.epoch(), image, std::sync::Arc::new(zxids));
        disk.log.clear();
        disk.durable_len = 0;
        disk.fsync_covers = None;
    }

    pub(crate) fn deliver(&mut self, sid: Sid, entry: SharedEntry) {
        self.trace.event(self.now, sid, "deliver", 0, entry.zxid.0);
        let parent = self.server(sid).applied_zxid();
        self.checker.on_deliver(sid, &entry, parent);
        let leading = self.server(sid).zab.as_ref().map(Zab::role) == Some(Role::Leading);
        if !self.opts.diskless && leading && self.opts.check_quorum_durability {
            self.check_committed_is_durable_on_a_quorum(sid, entry.zxid);
        }
        let s = self.server_mut(sid);
        let mut triggers = Vec::new();
        let outcome = s.tree.apply(&entry.txn, &mut triggers);
        s.applied.push(entry.txn.clone());
        s.delivered_in_batch = true;
        if self.opts.diskless {
            // After the apply: the committing leader holds what it applies.
            if leading {
                self.durability_on_commit(sid, entry.zxid);
            }
            self.durability_on_deliver(sid, entry.zxid);
        }
        let s = self.server_mut(sid);
        s.prep.applied(entry.zxid.as_i64());
        let digest = s.tree.digest();
        if let Some(zab) = s.zab.as_mut() {
            if let Err(mismatch) = zab.check_applied_digest(&entry, digest) {
                self.fail(format!("server {sid}: {mismatch}"));
            }
        }
        // Complete the client request this transaction answers, if it came through us.
        let client = entry.txn.header.client_id;
        let cxid = entry.txn.header.cxid;
        let s = self.server_mut(sid);
        if let Some(q) = s.sessions.get_mut(&client) {
            if let Some(p) = q
                .queue
                .iter_mut()
                .find(|p| p.cxid == cxid && p.result.is_none())
            {
                p.result = Some(write_result(entry.zxid, &outcome));
            }
        }
        self.pump(sid, client);
    }

    pub(crate) fn role_changed(&mut self, sid: Sid, role: Role, epoch: u32) {
        self.trace
            .event(self.now, sid, role_name(role), 0, u64::from(epoch));
        let was_serving = self.server(sid).serving;
        if self.opts.diskless && was_serving && role == Role::Looking {
            self.failure_checkpoint(sid);
        }
        match role {
            Role::Leading => {
                let delivered = self
                    .server(sid)
                    .zab
                    .as_ref()
                    .map_or(Zxid::ZERO, Zab::delivered);
                self.checker.on_established(sid, epoch, delivered, self.now);
                if self.opts.diskless {
                    self.durability_on_established(sid, epoch);
                    self.sample_full_house(sid);
                }
                let s = self.server_mut(sid);
                s.speculative = Some(replay(&s.applied));
                s.prep = Prep::default();
                s.serving = true;
                if let Some((crashed_at, detected)) = self.leader_loss.take() {
                    let from = detected.unwrap_or(crashed_at);
                    self.election_samples.push(self.now - from);
                }
            }
            Role::Following | Role::Observing => self.server_mut(sid).serving = true,
            Role::Looking | Role::Halted => {
                if let Some((_, detected @ None)) = &mut self.leader_loss {
                    *detected = Some(self.now);
                }
                let s = self.server_mut(sid);
                s.serving = false;
                s.speculative = None;
                if was_serving {
                    self.close_client_sessions(sid);
                }
                if role == Role::Halted {
                    self.fail(format!("server {sid} halted"));
                }
            }
        }
    }

    /// ZAB.md §9 invariant 6: when a leader commits, a quorum of voters holds the transaction
    /// on disk (fsynced), so no later quorum can come up without it. A disk wiped by the
    /// nemesis may have held it before the wipe (amnesia is the amnesia rule's business), so
    /// it counts as holding.
    fn check_committed_is_durable_on_a_quorum(&mut self, leader: Sid, zxid: Zxid) {
        let voters = self.opts.servers;
        let holding = self.servers[..voters]
            .iter()
            .filter(|s| {
                let d = &s.disk;
                if d.wiped {
                    return true;
                }
                let durable = &d.log[..d.durable_len];
                d.snapshot_zxid >= zxid || durable.binary_search_by(|e| e.zxid.cmp(&zxid)).is_ok()
            })
            .count();
        if holding < voters / 2 + 1 {
            self.fail(format!(
                "durability: leader {leader} committed {zxid} while only {holding} of {voters} disks hold it"
            ));
        }
    }
}
