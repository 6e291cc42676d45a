//! Executing what the Zab core asks, in order (the `zab` crate's contract): sends, epoch
//! files, log appends and truncations, snapshots, deliveries and role changes.
//!
//! Epoch saves, truncation and snapshot saves are synchronous here: they are durable before
//! the next action runs, because a following send may depend on them (ZAB.md §2).

use super::codec::{self, PeerMessage};
use super::host_message::HostMessage;
use super::state::{Ensemble, Waiting};
use crate::limits::DIGEST_CHECKS_MAX;
use crate::replica::{Replica, ReplyTo};
use crate::store::Store;
use crate::{Observation, Output};
use proto::txn::TxnBody;
use std::sync::Arc;
use zab::{Action, Role, SharedEntry, Sid, Zxid};

impl<S: Store> Replica<S> {
    pub(crate) fn ensemble(&mut self) -> Option<&mut Ensemble> {
        self.ensemble.as_deref_mut()
    }

    /// Tells a watching checker what happened ([`crate::Settings::observe`]).
    fn observe(&mut self, what: impl FnOnce(&Self) -> Observation) {
        if !self.settings.observe {
            return;
        }
        let seen = what(self);
        if let Some(ensemble) = self.ensemble() {
            ensemble.outbox.push(Output::Observed(seen));
        }
    }

    /// Runs Zab's pending actions until there are none, then reacts to a change of serving.
    pub(crate) fn run_zab(&mut self) {
        let mut delivered = false;
        loop {
            let Some(ensemble) = self.ensemble() else {
                return;
            };
            let actions = ensemble.zab.poll_actions();
            if actions.is_empty() {
                break;
            }
            for action in actions {
                delivered |= matches!(action, Action::Deliver(_));
                self.execute(action);
                if self.fatal.is_some() {
                    return;
                }
            }
        }
        if delivered {
            self.after_deliveries();
        }
        self.label_applied_state();
        self.update_serving();
        self.check_read_only();
    }

    /// Diskless (DESIGN.md §5): once Zab serves, the applied state holds its epoch's whole
    /// initial history (a leader applies it when established, a learner at UPTODATE), so only
    /// then may its snapshots carry the epoch as their label. An amnesiac boot votes with the
    /// label, so a label above what the state holds could elect a leader lacking writes.
    fn label_applied_state(&mut self) {
        if !self.store.is_diskless() {
            return;
        }
        let Some(ensemble) = self.ensemble.as_deref() else {
            return;
        };
        if ensemble.zab.is_serving() {
            let epoch = ensemble.zab.current_epoch();
            self.store.set_epoch_label(epoch);
        }
    }

    fn execute(&mut self, action: Action) {
        let Some(ensemble) = self.ensemble.as_deref_mut() else {
            return;
        };
        match action {
            Action::Send {
                to,
                msg: zab::Message::Proposal(entry),
            } => {
                // A proposal goes to every follower: encoded once, when it was appended.
                let frame = match &ensemble.proposal_frame {
                    Some((zxid, frame)) if *zxid == entry.zxid => frame.clone(),
                    _ => codec::encode_zab(&zab::Message::Proposal(entry)),
                };
                ensemble.outbox.push(Output::ToPeer { to, frame });
            }
            Action::Send { to, msg } => send(ensemble, to, &PeerMessage::Zab(msg)),
            Action::Disconnect { peer } => ensemble.outbox.push(Output::DisconnectPeer { peer }),
            Action::SaveAcceptedEpoch(epoch) => {
                if let Err(e) = self.store.save_accepted_epoch(epoch) {
                    self.fail(format!("cannot save acceptedEpoch {epoch}: {e}"));
                }
            }
            Action::SaveCurrentEpoch(epoch) => {
                if let Err(e) = self.store.save_current_epoch(epoch) {
                    self.fail(format!("cannot save currentEpoch {epoch}: {e}"));
                }
            }
            Action::Append(entry) => {
                if ensemble.is_leader() && self.settings.observe {
                    let seen = Observation::Proposed(entry.clone());
                    ensemble.outbox.push(Output::Observed(seen));
                }
                if ensemble.is_leader() {
                    let frame = codec::encode_zab(&zab::Message::Proposal(entry.clone()));
                    let bytes = codec::proposal_txn_bytes(&entry, &frame);
                    ensemble.proposal_frame = Some((entry.zxid, frame));
                    let s = &mut ensemble.stats;
                    s.proposals += 1;
                    s.last_proposal_bytes = bytes;
                    s.max_proposal_bytes = s.max_proposal_bytes.max(bytes);
                    s.min_proposal_bytes = if s.proposals == 1 {
                        bytes
                    } else {
                        s.min_proposal_bytes.min(bytes)
                    };
                }
                self.learn_addresses(&entry.txn);
                if let Err(e) = self.store.append(&entry.txn) {
                    self.fail(format!("cannot append to the transaction log: {e}"));
                }
            }
            Action::Truncate(zxid) => {
                tracing::info!(
                    zxid = %zxid,
                    "truncating the log to the leader's history (TRUNC)"
                );
                if let Err(e) = self.store.truncate_log_after(zxid.as_i64()) {
                    self.fail(format!("cannot truncate the log after {zxid}: {e}"));
                }
            }
            Action::SaveSnapshot {
                zxid,
                image,
                stream_end,
            } => {
                tracing::info!(zxid = %zxid, bytes = image.len(), stream_end = %stream_end, "saving the leader's snapshot (SNAP)");
                match self
                    .store
                    .replace_with_snapshot(&image, stream_end.as_i64())
                {
                    Ok(tree) if tree.last_processed_zxid() == zxid.as_i64() => {
                        ensemble.installed = Some((zxid.as_i64(), tree));
                    }
                    Ok(tree) => self.fail(format!(
                        "the leader's snapshot for {zxid} holds {:#x}",
                        tree.last_processed_zxid()
                    )),
                    Err(e) => self.fail(format!("cannot save the leader's snapshot: {e}")),
                }
            }
            Action::SendSnapshot { to, zxid } => {
                let applied = self.tree.last_processed_zxid();
                if applied != zxid.as_i64() {
                    self.fail(format!(
                        "asked to send a snapshot at {zxid} while the tree is at {applied:#x}"
                    ));
                    return;
                }
                // Encoded by the host off the request path: at a million znodes that takes
                // about a second, which no client should wait for.
                let tree = self.tree.freeze();
                if let Some(ensemble) = self.ensemble() {
                    ensemble
                        .outbox
                        .push(Output::SendSnapshot { to, zxid, tree });
                }
            }
            Action::InstallSnapshot { zxid, image } => self.install_snapshot(zxid, &image),
            Action::Deliver(entry) => self.deliver(entry),
            Action::RoleChanged { role, epoch } => self.role_changed(role, epoch),
            Action::RecoveryComplete => {
                tracing::info!("caught up with the leader: this server's state is whole again")
            }
            Action::Abdicated { successor } => {
                tracing::info!(successor, "handed leadership over");
                ensemble.handed_over_to = Some(successor);
            }
            Action::MembershipChanged { active, pending } => {
                self.members_changed(&active, pending.as_ref())
            }
        }
    }

    fn install_snapshot(&mut self, zxid: Zxid, image: &[u8]) {
        let saved = self.ensemble().and_then(|r| r.installed.take());
        let tree = match saved {
            Some((at, tree)) if at == zxid.as_i64() => tree,
            _ => match storage::snapshot_file::decode_bytes(image) {
                Ok(loaded) => loaded.tree,
                Err(e) => {
                    self.fail(format!("cannot load the leader's snapshot: {e}"));
                    return;
                }
            },
        };
        tracing::info!(zxid = %zxid, nodes = tree.node_count(), "installed the leader's snapshot");
        self.replace_tree(tree);
        self.close_held_after_snapshot();
        self.observe(|r| Observation::Installed {
            zxid,
            digest: r.tree.digest(),
        });
    }

    /// Applies a committed transaction and answers whoever here waits for it.
    fn deliver(&mut self, entry: SharedEntry) {
        if self.settings.observe {
            let seen = Observation::Delivered(entry.clone());
            self.observe(|_| seen);
        }
        let txn = Arc::unwrap_or_clone(entry).txn;
        let session_id = txn.header.client_id;
        let zxid = txn.header.zxid;
        let created = match &txn.body {
            TxnBody::CreateSession(c) => Some(c.timeout_ms),
            _ => None,
        };
        let reply = self.waiting_write(session_id, txn.header.cxid);
        let connect = created.and_then(|_| {
            self.ensemble()
                .and_then(|r| r.connecting.remove(&session_id))
        });
        self.apply(txn, reply);
        if let Some(timeout_ms) = created {
            self.sessions
                .add(session_id, timeout_ms.max(0) as u32, self.now_ms());
        }
        if let Some(pc) = connect {
            if self.conns.contains_key(&pc.conn) {
                self.attach(pc.conn, session_id, pc.timeout_ms, pc.read_only);
            }
        }
        if let Some(conn) = self.session_conn.get(&session_id).copied() {
            self.answer_waiting_reads(conn);
        }
        self.check_digest_at(zxid);
    }

    /// The waiting write of the session's connection with this cxid, taken off its queue once
    /// everything ahead of it is answered. A leader takes a connection's writes in order, so a
    /// write still waiting ahead of a delivered one was refused (the THROTTLED notice lost
    /// with a broken link): it is answered THROTTLEDOP in its turn.
    fn waiting_write(&mut self, session_id: i64, cxid: i32) -> Option<ReplyTo> {
        let conn = self.session_conn.get(&session_id).copied()?;
        let queue = self.ensemble.as_deref_mut()?.queues.get_mut(&conn)?;
        let at = queue.iter().position(
            |w| matches!(w, Waiting::Write { reply, sent: true, .. } if reply.xid == cxid),
        )?;
        if at > 0 {
            let ahead: Vec<Waiting> = queue
                .drain(..at)
                .map(|waiting| match waiting {
                    Waiting::Write {
                        reply, sent: true, ..
                    } => {
                        tracing::debug!(
                            session = format!("0x{session_id:x}"),
                            xid = reply.xid,
                            later = cxid,
                            "a write the leader passed over (refused, its notice lost): THROTTLEDOP"
                        );
                        Waiting::Throttled(reply)
                    }
                    other => other,
                })
                .collect();
            for waiting in ahead.into_iter().rev() {
                queue.push_front(waiting);
            }
            self.answer_waiting_reads(conn);
        }
        let queue = self.ensemble.as_deref_mut()?.queues.get_mut(&conn)?;
        match queue.front() {
            Some(Waiting::Write {
                reply, sent: true, ..
            }) if reply.xid == cxid => match queue.pop_front() {
                Some(Waiting::Write { reply, .. }) => Some(reply),
                _ => None,
            },
            _ => None,
        }
    }

    /// Answers what waits at the head of a connection's queue up to its next write: reads,
    /// and writes the leader refused. A read that arrived while this member had no leader
    /// waits until it has one.
    pub(crate) fn answer_waiting_reads(&mut self, conn: crate::watch_manager::ConnId) {
        loop {
            let Some(ensemble) = self.ensemble.as_deref_mut() else {
                return;
            };
            let serving = ensemble.serving;
            let Some(queue) = ensemble.queues.get_mut(&conn) else {
                return;
            };
            match queue.front() {
                Some(Waiting::Read { held: true, .. }) if !serving => return,
                Some(Waiting::Read { .. } | Waiting::Throttled(_)) => {}
                Some(Waiting::Write { .. }) => return,
                None => {
                    ensemble.remove_queue(conn);
                    return;
                }
            }
            match queue.pop_front() {
                Some(Waiting::Read {
                    xid,
                    request,
                    received_ms,
                    ..
                }) => self.handle_read(conn, xid, request, received_ms),
                Some(Waiting::Throttled(reply)) => {
                    let zxid = self.last_zxid();
                    let code = proto::ErrorCode::ThrottledOp.code();
                    self.finish_reply(conn, reply.xid, zxid, code, None, reply.received_ms);
                }
                _ => {}
            }
        }
    }

    /// The leader tells its learners its digest after each batch it applied.
    fn after_deliveries(&mut self) {
        let zxid = self.tree.last_processed_zxid();
        let digest = self.tree.digest();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if !ensemble.is_leader() {
            return;
        }
        let msg = PeerMessage::Host(HostMessage::DigestAt { zxid, digest });
        for i in 0..ensemble.peers.len() {
            let to = ensemble.peers[i];
            send(ensemble, to, &msg);
        }
        // Room in the pipeline may have opened for waiting work.
        self.drain_backlog();
    }

    /// A learner records the leader's digest for `zxid` and checks it once applied.
    pub(crate) fn on_digest_at(&mut self, zxid: i64, digest: u64) {
        let applied = self.tree.last_processed_zxid();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        if zxid > applied {
            if ensemble.digest_checks.len() >= DIGEST_CHECKS_MAX {
                ensemble.digest_checks.pop_front();
            }
            ensemble.digest_checks.push_back((zxid, digest));
        } else if zxid == applied {
            ensemble.digest_checks.push_back((zxid, digest));
            self.check_digest_at(zxid);
        }
    }

    fn check_digest_at(&mut self, zxid: i64) {
        let local = self.tree.digest();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        while let Some(&(at, leader)) = ensemble.digest_checks.front() {
            if at > zxid {
                return;
            }
            ensemble.digest_checks.pop_front();
            if at < zxid {
                continue;
            }
            ensemble.stats.digest_checks += 1;
            if leader != local {
                tracing::error!(
                    zxid = format!("{zxid:#x}"),
                    leader = format!("{leader:#x}"),
                    local = format!("{local:#x}"),
                    "this server's data tree differs from the leader's after the same \
                     transactions: it stops serving (restart it with an empty data dir to \
                     resync from the leader)"
                );
                ensemble.zab.halt("digest mismatch");
                return;
            }
        }
    }

    fn role_changed(&mut self, role: Role, epoch: u32) {
        self.observe(|r| Observation::RoleChanged {
            role,
            epoch,
            delivered: Zxid::from_i64(r.tree.last_processed_zxid()),
        });
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let before = ensemble.role;
        ensemble.role = role;
        tracing::info!(role = ensemble.role_name(), epoch, "role changed");
        if role == Role::Leading {
            // A new leader owns expiry: every session gets a full timeout from now, as after
            // a restart; owners are learned again as clients reconnect.
            ensemble.owners.clear();
            ensemble.backlog.clear();
            self.prep.reset();
            self.reset_session_expiry();
            self.queue_initial_config();
        }
        if before == Role::Leading && role != Role::Leading {
            self.prep.reset();
        }
        let lost = matches!(before, Role::Leading | Role::Following | Role::Observing);
        if role == Role::Looking && lost && self.store.is_diskless() {
            self.failure_checkpoint();
        }
    }

    /// Diskless (thesis Alg. 4.2/4.3): this server lost its leader or its quorum. Before it
    /// takes part in the election it writes a complete snapshot and the proposals it
    /// acknowledged that are not committed yet, so that its disk again holds everything it
    /// acknowledged: after a restart it may vote, and if it leads it re-proposes them.
    fn failure_checkpoint(&mut self) {
        let Some(ensemble) = self.ensemble.as_deref() else {
            return;
        };
        let txns = |entries: Vec<zab::SharedEntry>| entries.iter().map(|e| e.txn.clone()).collect();
        let undelivered: Vec<proto::txn::Txn> = txns(ensemble.zab.undelivered());
        let zab = &ensemble.zab;
        let since = |zxid: i64| zab.entries_since(zab::Zxid::from_i64(zxid)).map(txns);
        if let Err(e) = self.store.checkpoint(&self.tree, &undelivered, &since) {
            tracing::error!(error = %e, "diskless: the failure checkpoint failed; after a restart this server will not vote until a leader has brought it up to date");
        }
    }

    fn hold_when_excluded_planted(&self) -> bool {
        #[cfg(feature = "planted-bugs")]
        if self.settings.bug(crate::planted::HostBug::HoldWhenExcluded) {
            return true;
        }
        false
    }

    /// Opens or closes the doors to clients when Zab starts or stops serving.
    fn update_serving(&mut self) {
        let now_ms = self.now_ms();
        let Some(ensemble) = self.ensemble() else {
            return;
        };
        let serving = ensemble.zab.is_serving();
        if serving == ensemble.serving {
            return;
        }
        ensemble.serving = serving;
        if serving {
            let waited = ensemble
                .not_serving_since
                .take()
                .map_or(0, |since| now_ms.saturating_sub(since));
            ensemble.stats.elections += 1;
            ensemble.stats.last_election_ms = waited;
            if ensemble.zab.elected_by_full_house() {
                ensemble.stats.full_house_elections += 1;
                tracing::warn!(
                    epoch = ensemble.zab.current_epoch(),
                    zxid = %ensemble.zab.delivered(),
                    "diskless: elected by a full house: too few voters kept what they acknowledged \
                     to form a quorum, so every voter agreed on the best state any of them had. \
                     Writes acknowledged after it (if any) were lost with the servers that held them"
                );
            }
            tracing::info!(
                role = ensemble.role_name(),
                leader = ensemble.zab.leader(),
                epoch = ensemble.zab.current_epoch(),
                zxid = format!("{:#x}", self.tree.last_processed_zxid()),
                after_ms = waited,
                "serving clients"
            );
            self.end_hold();
        } else if ensemble.zab.is_excluded() && !self.hold_when_excluded_planted() {
            self.exclude_clients(now_ms);
        } else {
            self.start_hold(now_ms);
        }
    }
}

/// Encodes and queues one message for a peer.
pub(crate) fn send(ensemble: &mut Ensemble, to: Sid, msg: &PeerMessage) {
    ensemble.outbox.push(Output::ToPeer {
        to,
        frame: codec::encode(msg),
    });
}
