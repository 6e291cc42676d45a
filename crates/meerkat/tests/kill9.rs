//! A real process killed mid-load (DESIGN.md §7: real processes, kill -9): clients write with
//! pipelining and record every acknowledgement, the server is SIGKILLed while snapshots and
//! log writes are under way, restarted on the same data dir, and every acknowledged write must
//! be there with its data. Repeated over several kills on one data dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../server/tests/support/mod.rs"]
mod support;

use proto::response::Response;
use proto::OpCode;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::*;

const WRITERS: usize = 4;
const WINDOW: usize = 16;
const KILLS: usize = 3;

/// Every acknowledged create: path and data.
type Acked = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// The server process; killed with SIGKILL if the test ends early.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(config: &Path, dir: &Path, round: usize) -> Server {
    let log = std::fs::File::create(dir.join(format!("server-{round}.log"))).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .arg("server")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn meerkat");
    Server(child)
}

async fn wait_serving(addr: SocketAddr) {
    testkit::four_letter::wait_serving(addr, Duration::from_secs(30))
        .await
        .expect("the server serves");
}

/// Writes unique znodes with up to WINDOW in flight until the connection dies; every
/// acknowledged (path, data) goes into `acked`.
async fn writer(addr: SocketAddr, id: usize, round: usize, acked: Acked) {
    let mut conn = Conn::session(addr).await;
    let mut next = 0usize;
    let mut in_flight = std::collections::VecDeque::new();
    loop {
        while in_flight.len() < WINDOW {
            let path = format!("/r{round}-w{id}-{next:06}");
            let data = format!("{path} payload {}", next * 7919).into_bytes();
            next += 1;
            let xid = conn.xid();
            if conn
                .write_all(&request_frame(xid, &create(&path, &data, 0)))
                .await
                .is_err()
            {
                return;
            }
            in_flight.push_back((xid, path, data));
        }
        let Some((xid, path, data)) = in_flight.pop_front() else {
            return;
        };
        let payload = match conn.read_frame_within(Duration::from_secs(5)).await {
            Ok(p) => p,
            Err(_) => return,
        };
        let reply = Reply::parse(&payload);
        assert_eq!(reply.header.xid, xid, "replies in request order");
        assert_eq!(reply.header.err, 0, "create {path}");
        acked.lock().unwrap().push((path, data));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_kill_9() {
    let dir = fresh_data_dir();
    let standalone =
        testkit::standalone::write_config(&dir, "tickTime=200\nsnapCount=200\npreAllocSize=256\n")
            .expect("zoo.cfg");
    let (config, addr) = (standalone.path, standalone.address);
    let acked: Acked = Arc::default();
    for round in 0..KILLS {
        let mut server = spawn(&config, &dir, round);
        wait_serving(addr).await;
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| tokio::spawn(writer(addr, id, round, acked.clone())))
            .collect();
        // Let a few hundred writes be acknowledged, then kill without warning.
        let target = (round + 1) * 400;
        let deadline = Instant::now() + Duration::from_secs(60);
        while acked.lock().unwrap().len() < target {
            assert!(
                Instant::now() < deadline,
                "writes are not being acknowledged"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        server.0.kill().expect("SIGKILL");
        server.0.wait().expect("reaped");
        for w in writers {
            w.await.expect("writer task");
        }
    }
    let server = spawn(&config, &dir, KILLS);
    wait_serving(addr).await;
    let mut conn = Conn::session(addr).await;
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= KILLS * 400);
    for (path, data) in &acked {
        let reply = conn.call(&get_data(path, false)).await;
        assert_eq!(
            reply.header.err, 0,
            "acknowledged {path} is missing after kill -9"
        );
        match reply.response(OpCode::GetData) {
            Response::GetData(r) => assert_eq!(r.data.as_deref(), Some(&data[..]), "{path}"),
            other => panic!("unexpected body {other:?}"),
        }
    }
    drop(server);
    // The operator's view of the data dir after three kills: every file verifies.
    let inspect = Command::new(env!("CARGO_BIN_EXE_meerkat"))
        .args(["data", "inspect"])
        .arg(&config)
        .output()
        .expect("run meerkat data inspect");
    let listing = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        inspect.status.success(),
        "inspect reports damage:\n{listing}"
    );
    assert!(
        listing.contains("snapshots (") && listing.contains("wal-"),
        "{listing}"
    );
}
