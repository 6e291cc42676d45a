//! The recipes under contention, each participant its own OS process, against any server.
//! These functions block (they drive processes); call them outside an async context or from
//! `spawn_blocking`.

use super::workers::Worker;
use super::*;
use client::recipes::lock::Lock;

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

/// Several processes take the lock many times; a marker znode shows nobody is ever inside
/// together, and a counter incremented under the lock loses no increment.
pub fn lock_mutual_exclusion(address: &str) {
    let lock = unique("mutex");
    let counter = unique("counter");
    block_on(async {
        let zk = connect(address).await;
        zk.create(&counter, b"0", &acl::open_unsafe(), CreateMode::Persistent)
            .await
            .unwrap();
        zk.close().await;
    });
    let (processes, rounds) = (4, 10);
    let mut workers: Vec<Worker> = (0..processes)
        .map(|i| {
            Worker::start(
                &format!("w{i}"),
                address,
                &["lock-loop", &lock, &counter, &rounds.to_string()],
            )
        })
        .collect();
    for w in &workers {
        let line = w.expect("done");
        assert_eq!(line, "done");
    }
    for w in &mut workers {
        assert!(w.wait_exit());
        assert!(w.try_line().is_none(), "no violation lines");
    }
    block_on(async {
        let zk = connect(address).await;
        let (data, _) = zk.get_data(&counter).await.unwrap();
        assert_eq!(
            String::from_utf8(data).unwrap(),
            (processes * rounds).to_string()
        );
        zk.close().await;
    });
}

/// One holder, N queued waiters in their own processes: a release wakes exactly one waiter
/// (counted watch notifications across all waiters = 1), and that one holds the lock.
pub fn lock_release_wakes_exactly_one(address: &str) {
    let lock = unique("herd");
    let mut holder = Worker::start("holder", address, &["lock", &lock]);
    holder.expect("acquired");
    let n = 5;
    let mut waiters: Vec<Worker> = (0..n)
        .map(|i| Worker::start(&format!("waiter{i}"), address, &["lock", &lock]))
        .collect();
    for w in &waiters {
        w.expect("waiting");
    }
    holder.send("release");
    holder.expect("released");
    // Exactly one waiter acquires; find it.
    let winner = within_blocking(|| {
        waiters
            .iter()
            .position(|w| matches!(w.try_line(), Some(l) if l.starts_with("acquired")))
    });
    let mut total_wakeups = 0;
    let mut holders = 0;
    for w in &mut waiters {
        w.send("report");
        let report = w.expect("report");
        let held = report.contains("held=true");
        holders += usize::from(held);
        let wakeups: u64 = report.rsplit('=').next().unwrap().parse().unwrap();
        total_wakeups += wakeups;
    }
    assert_eq!(holders, 1, "exactly one waiter holds the lock");
    assert_eq!(
        total_wakeups, 1,
        "exactly one watch notification for one release (no herd)"
    );
    assert!(waiters[winner].name.starts_with("waiter"));
    // The winner's release hands over to the next one, again exactly one.
    waiters[winner].send("release");
    waiters[winner].expect("released");
    let next = within_blocking(|| {
        waiters
            .iter()
            .position(|w| matches!(w.try_line(), Some(l) if l.starts_with("acquired")))
    });
    assert_ne!(next, winner);
    for w in &mut waiters {
        w.send("exit");
    }
    holder.send("exit");
}

/// A lock holder killed with SIGKILL: its session expires, its znode goes, the waiter gets the
/// lock.
pub fn dead_holder_releases(address: &str) {
    let lock = unique("dead");
    let mut holder = Worker::start("holder", address, &["lock", &lock]);
    holder.expect("acquired");
    let mut waiter = Worker::start("waiter", address, &["lock", &lock]);
    waiter.expect("waiting");
    holder.kill();
    let line = waiter.expect("acquired");
    assert!(line.contains(&lock));
    waiter.send("exit");
}

/// Several processes through a double barrier: each sees every participant arrived when it
/// enters, and every participant started leaving when it leaves.
pub fn double_barrier_enters_and_leaves_together(address: &str) {
    let barrier = unique("barrier");
    let flags = unique("flags");
    block_on(async {
        let zk = connect(address).await;
        mkdir(&zk, &flags).await;
        zk.close().await;
    });
    let size = 4;
    let mut workers: Vec<Worker> = (0..size)
        .map(|i| {
            Worker::start(
                &format!("p{i}"),
                address,
                &[
                    "barrier",
                    &barrier,
                    &format!("p{i}"),
                    &size.to_string(),
                    &flags,
                ],
            )
        })
        .collect();
    for w in &workers {
        assert_eq!(w.expect("entered"), format!("entered {size}"));
    }
    for w in &workers {
        assert_eq!(w.expect("left"), format!("left {size}"));
    }
    for w in &mut workers {
        assert!(w.wait_exit());
    }
}

/// Three candidates: one leads; when the leader's process dies (no close, so the session must
/// expire), exactly one other takes over.
pub fn election_fails_over(address: &str) {
    let path = unique("election");
    let mut candidates: Vec<Worker> = (0..3)
        .map(|i| {
            let w = Worker::start(
                &format!("c{i}"),
                address,
                &["elect", &path, &format!("c{i}")],
            );
            w.expect("started");
            w
        })
        .collect();
    // The first to start leads.
    assert_eq!(candidates[0].expect("leader"), "leader c0");
    for c in &mut candidates[1..] {
        c.send("status");
        assert_eq!(c.expect("status"), "status leader=false");
    }
    candidates[0].kill();
    assert_eq!(
        candidates[1].expect("leader"),
        "leader c1",
        "the next in line takes over"
    );
    candidates[2].send("status");
    assert_eq!(candidates[2].expect("status"), "status leader=false");
    for c in &mut candidates[1..] {
        c.send("exit");
    }
}

/// Consumers in several processes drain a queue: every message is taken exactly once.
pub fn queue_delivers_each_message_once(address: &str) {
    let path = unique("queue");
    let (consumers, each) = (3, 20);
    let mut workers: Vec<Worker> = (0..consumers)
        .map(|i| {
            Worker::start(
                &format!("q{i}"),
                address,
                &["consume", &path, &each.to_string()],
            )
        })
        .collect();
    block_on(async {
        let zk = connect(address).await;
        let queue = client::recipes::queue::Queue::new(&zk, &path);
        for i in 0..consumers * each {
            queue.put(format!("m{i}").as_bytes()).await.unwrap();
        }
        zk.close().await;
    });
    let mut got = Vec::new();
    for w in &mut workers {
        for _ in 0..each {
            got.push(w.expect("got ").trim_start_matches("got ").to_string());
        }
        w.expect("done");
        assert!(w.wait_exit());
    }
    got.sort();
    let mut want: Vec<String> = (0..consumers * each).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(got, want);
}

/// Polls `f` (bounded: 30 s) until it returns `Some`.
fn within_blocking<T>(mut f: impl FnMut() -> Option<T>) -> T {
    for _ in 0..3000 {
        if let Some(v) = f() {
            return v;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("condition not reached in 30 s");
}

/// Used by the interop test: our lock type is the one the workers use.
pub fn lock_type_name() -> &'static str {
    std::any::type_name::<Lock>()
}
