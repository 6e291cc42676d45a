//! The server's request path as far as it runs without sockets: per-session FIFO queues,
//! writes forwarded to the leader and prepared there, replies after the local apply, reads
//! answered in session order from the local tree.

use crate::client::{ClientRequest, Reply};
use crate::network::Receive;
use crate::ops::{ClientId, ClientOp, OpResult};
use crate::server::{prepare, read_value, Pending, SessionQueue, SESSION_QUEUE_MAX};
use crate::world::{Event, Wire, World};
use zab::{Message, Sid, Zab, Zxid};

impl World {
    // ----- the request path -----

    pub(crate) fn on_deliver(&mut self, from: Sid, to: Sid, generation: u64, wire: Wire) {
        if !self.server(to).is_up() {
            return;
        }
        match self.net.receive(from, to, generation) {
            Receive::Stale => return,
            Receive::AfterBreak => {
                self.trace.event(self.now, to, "peer-down", from, 0);
                self.with_zab(to, |z, now| z.handle_peer_disconnected(now, from));
            }
            Receive::Fresh => {}
        }
        match wire {
            Wire::Zab(msg) => {
                let snap = matches!(msg, Message::Snap { .. });
                self.with_zab(to, |z, now| z.handle_message(now, from, msg));
                if snap && self.crash_leader_after_snap {
                    self.crash_leader_after_snap = false;
                    self.trace
                        .line(self.now, &format!("leader s{from} dies after SNAP"));
                    self.crash(from);
                }
            }
            Wire::Forward {
                origin,
                client,
                cxid,
                op,
            } => self.propose_request(to, origin, client, cxid, op),
        }
    }

    /// The leader turns a client write (or sync) into a proposal.
    pub(crate) fn propose_request(
        &mut self,
        sid: Sid,
        origin: Sid,
        client: ClientId,
        cxid: i32,
        op: ClientOp,
    ) {
        let local = self.server(sid).local_time(self.now);
        let Some(zxid) = self.server(sid).zab.as_ref().and_then(Zab::next_zxid) else {
            return; // not an established leader: the client will time out
        };
        let s = self.server_mut(sid);
        let txn = prepare(s, client, cxid, &op, zxid, local as i64);
        let digest = s.speculative.as_mut().map(|spec| {
            spec.apply(&txn, &mut Vec::new());
            spec.digest()
        });
        let Some(zab) = s.zab.as_mut() else { return };
        match zab.propose(local, txn, digest) {
            Ok(z) => {
                self.trace.event(self.now, sid, "propose", origin, z.0);
                self.run_actions(sid);
            }
            Err(e) => {
                // next_zxid said yes, so a refusal means the host and Zab disagree.
                self.fail(format!("server {sid}: proposal refused: {e}"));
                self.server_mut(sid).speculative = None;
                self.run_actions(sid);
            }
        }
    }

    pub(crate) fn on_client_request(&mut self, sid: Sid, req: ClientRequest) {
        let client_idx = (req.client - 0x1000) as usize;
        let s = self.server(sid);
        let delivered = s.zab.as_ref().map_or(Zxid::ZERO, Zab::delivered);
        let accept = s.is_up() && s.serving && delivered >= req.last_zxid;
        let epoch = s.zab.as_ref().map_or(0, Zab::current_epoch);
        if self.opts.diskless && !accept && s.serving && req.last_zxid.epoch() < epoch {
            // A serving server of epoch e holds every surviving write of earlier epochs; one it
            // lacks was lost with the servers that held it (DESIGN.md §5), and so is the
            // session that saw it.
            self.reply(client_idx, req.conn, Reply::Expired);
            return;
        }
        if !accept {
            self.reply(client_idx, req.conn, Reply::Closed);
            return;
        }
        let s = self.server_mut(sid);
        let q = s.sessions.entry(req.client).or_default();
        if q.conn != req.conn {
            // A new connection of this session: whatever the old one queued is abandoned.
            *q = SessionQueue {
                conn: req.conn,
                queue: Default::default(),
            };
        }
        if q.queue.len() >= SESSION_QUEUE_MAX {
            self.reply(
                client_idx,
                req.conn,
                Reply::Result {
                    cxid: req.cxid,
                    result: OpResult::Refused,
                },
            );
            return;
        }
        q.queue.push_back(Pending {
            cxid: req.cxid,
            op: req.op.clone(),
            record: req.record,
            result: None,
        });
        if req.op.is_write() {
            let leader = self.server(sid).zab.as_ref().and_then(Zab::leader);
            match leader {
                Some(l) if l == sid => self.propose_request(sid, sid, req.client, req.cxid, req.op),
                Some(l) => self.send_wire(
                    sid,
                    l,
                    Wire::Forward {
                        origin: sid,
                        client: req.client,
                        cxid: req.cxid,
                        op: req.op,
                    },
                ),
                None => {}
            }
        }
        self.pump(sid, req.client);
    }

    /// Replies, in request order, to every finished request at the head of a session's queue.
    /// A read is answered when it reaches the head: all its session's earlier writes are
    /// applied here by then.
    pub(crate) fn pump(&mut self, sid: Sid, client: ClientId) {
        let client_idx = (client - 0x1000) as usize;
        loop {
            let s = self.server_mut(sid);
            // What the tree has applied, not what Zab has handed out: the host may still be
            // working through a batch of deliveries.
            let delivered = s
                .applied
                .last()
                .map_or(Zxid::ZERO, |t| Zxid::from_i64(t.header.zxid));
            let Some(q) = s.sessions.get_mut(&client) else {
                return;
            };
            let conn = q.conn;
            let Some(head) = q.queue.front() else { return };
            let result = match (&head.op, &head.result) {
                (_, Some(r)) => r.clone(),
                (ClientOp::Get { key }, None) => OpResult::Read {
                    zxid: delivered,
                    value: read_value(&s.tree, *key),
                },
                _ => return,
            };
            let cxid = head.cxid;
            q.queue.pop_front();
            self.reply(client_idx, conn, Reply::Result { cxid, result });
        }
    }

    pub(crate) fn reply(&mut self, client: usize, conn: u64, reply: Reply) {
        // One client connection is one TCP stream: FIFO.
        let at = (self.now + self.rng.range(0, 2)).max(self.clients[client].last_reply_at);
        self.clients[client].last_reply_at = at;
        self.schedule(
            at,
            Event::ToClient {
                client,
                conn,
                reply,
            },
        );
    }

    pub(crate) fn close_client_sessions(&mut self, sid: Sid) {
        let sessions = std::mem::take(&mut self.server_mut(sid).sessions);
        for (client, q) in sessions {
            self.reply((client - 0x1000) as usize, q.conn, Reply::Closed);
        }
    }
}
