//! Driving the simulated clients: issuing operations, timing out silent connections, and
//! recording every reply in the history (checking FIFO order as replies arrive).

use crate::client::{ClientRequest, Reply, CLIENT_OUTSTANDING_MAX, CLIENT_TIMEOUT_MS};
use crate::ops::{ClientOp, OpRecord, OpResult, KEYS};
use crate::world::{Event, World};
use zab::Sid;

impl World {
    // ----- clients -----

    pub fn start_clients(&mut self) {
        for i in 0..self.clients.len() {
            let at = self.now + self.rng.range(0, 20);
            self.schedule(at, Event::ClientWake { client: i });
        }
    }

    pub(crate) fn on_client_reply(&mut self, ci: usize, conn: u64, reply: Reply) {
        if self.opts.verbose {
            let line = format!(
                "client {ci} <- conn {conn} (now {}) {reply:?}",
                self.clients[ci].conn
            );
            self.trace.note(self.now, &line);
        }
        if self.clients[ci].conn != conn {
            return;
        }
        match reply {
            Reply::Closed => self.client_disconnect(ci),
            Reply::Expired => {
                // A new session: it has seen nothing yet.
                self.client_disconnect(ci);
                self.clients[ci].last_zxid = zab::Zxid::ZERO;
                self.sessions_expired += 1;
            }
            Reply::Result { cxid, result } => {
                let Some((expected, record)) = self.clients[ci].outstanding.pop_front() else {
                    self.fail(format!(
                        "client {ci}: reply {cxid} with nothing outstanding"
                    ));
                    return;
                };
                if expected != cxid {
                    self.fail(format!(
                        "FIFO: client {ci} expected reply {expected}, got {cxid}"
                    ));
                }
                let zxid = match &result {
                    OpResult::Written { zxid, .. } | OpResult::Read { zxid, .. } => Some(*zxid),
                    OpResult::Refused | OpResult::Watched { .. } | OpResult::ClosedLocally => None,
                };
                if let Some(z) = zxid {
                    let c = &mut self.clients[ci];
                    if z < c.last_zxid {
                        let last = c.last_zxid;
                        self.fail(format!("session {ci}: zxid went back from {last} to {z}"));
                    }
                    let c = &mut self.clients[ci];
                    c.last_zxid = c.last_zxid.max(z);
                }
                if let (ClientOp::Get { key }, OpResult::Read { value, .. }) =
                    (&self.history[record].op, &result)
                {
                    let key = *key;
                    self.clients[ci].known_version[key] = value.as_ref().map_or(-1, |v| v.1);
                }
                let rec = &mut self.history[record];
                rec.completed_at = Some(self.now);
                rec.result = Some(result);
            }
        }
    }

    pub(crate) fn client_disconnect(&mut self, ci: usize) {
        let c = &mut self.clients[ci];
        c.outstanding.clear(); // outcomes unknown: their records keep result None
        c.server = None;
        c.conn += 1;
    }

    pub(crate) fn on_client_wake(&mut self, ci: usize) {
        let next = self.now + self.rng.range(5, 40);
        if self.opts.verbose {
            let c = &self.clients[ci];
            let line = format!(
                "client {ci} wake server={:?} conn={} outstanding={:?}",
                c.server, c.conn, c.outstanding
            );
            self.trace.note(self.now, &line);
        }
        if self.clients[ci].stopped {
            return;
        }
        self.schedule(next, Event::ClientWake { client: ci });
        // A silent connection is abandoned after a timeout.
        if let Some(&(_, rec)) = self.clients[ci].outstanding.front() {
            if self.now > self.history[rec].invoked_at + CLIENT_TIMEOUT_MS {
                self.client_disconnect(ci);
            }
        }
        if !self.workload_on {
            return;
        }
        if self.clients[ci].server.is_none() {
            let n = self.servers.len() as u64;
            let sid = self.rng.range(1, n);
            let c = &mut self.clients[ci];
            c.server = Some(sid);
            c.conn += 1;
        }
        if self.clients[ci].outstanding.len() + 2 > CLIENT_OUTSTANDING_MAX {
            return;
        }
        let key = self.rng.below(KEYS.len() as u64) as usize;
        let roll = self.rng.below(100);
        let c = &mut self.clients[ci];
        let op = match roll {
            0..=14 => ClientOp::Create {
                key,
                value: c.unique_value(),
            },
            15..=39 => ClientOp::Set {
                key,
                value: c.unique_value(),
                version: -1,
            },
            40..=49 => ClientOp::Set {
                key,
                value: c.unique_value(),
                version: c.known_version[key],
            },
            50..=59 => ClientOp::Delete { key },
            60..=79 => ClientOp::Get { key },
            _ => ClientOp::Sync,
        };
        let sync = matches!(op, ClientOp::Sync);
        let sync_record = self.issue(ci, op);
        if sync {
            let get = self.issue(ci, ClientOp::Get { key });
            self.history[get].after_sync = Some(sync_record);
        }
    }

    pub(crate) fn issue(&mut self, ci: usize, op: ClientOp) -> usize {
        let c = &mut self.clients[ci];
        let cxid = c.next_cxid;
        c.next_cxid += 1;
        let record = self.history.len();
        let server = c.server.unwrap_or(1);
        let req = ClientRequest {
            client: c.id,
            conn: c.conn,
            cxid,
            op: op.clone(),
            record,
            last_zxid: c.last_zxid,
        };
        c.outstanding.push_back((cxid, record));
        if self.opts.verbose {
            let line = format!("client {ci} -> s{server} #{cxid} {op:?}");
            self.trace.note(self.now, &line);
        }
        self.history.push(OpRecord {
            client: c.id,
            cxid,
            op,
            server,
            invoked_at: self.now,
            completed_at: None,
            result: None,
            after_sync: None,
        });
        let at = (self.now + self.rng.range(0, 2)).max(self.clients[ci].last_request_at);
        self.clients[ci].last_request_at = at;
        self.schedule(at, Event::ToServer { server, req });
        record
    }

    /// Scenario helper: `client` sends `op` to `server` now (reconnecting if needed).
    pub fn submit(&mut self, client: usize, server: Sid, op: ClientOp) -> usize {
        let c = &mut self.clients[client];
        if c.server != Some(server) {
            c.server = Some(server);
            c.conn += 1;
            c.outstanding.clear();
        }
        self.issue(client, op)
    }
}
