//! Interop with Apache Curator: its InterProcessMutex (compat/curator, run through
//! scripts/compat-curator.sh) and our lock recipe on the same path must exclude each other.

use super::workers::Worker;
use super::*;
use client::recipes::lock::{Lock, LockEvent};
use std::process::Command;

fn curator(address: &str, path: &str) -> Worker {
    curator_process(&["run", address, path])
}

fn curator_latch(address: &str, path: &str, id: &str) -> Worker {
    let worker = curator_process(&["latch", address, path, id]);
    worker.expect("started");
    worker
}

fn curator_process(args: &[&str]) -> Worker {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts/compat-curator.sh");
    // Fetch and compile first (Maven, first run only), outside the bounded waits for lines.
    let built = Command::new("bash")
        .arg(&script)
        .arg("build")
        .status()
        .expect("compat-curator.sh build");
    assert!(built.success(), "building compat/curator failed");
    let mut command = Command::new("bash");
    command.arg(script).args(args);
    let worker = Worker::spawn("curator", command);
    if args[0] == "run" {
        worker.expect("ready");
    }
    worker
}

/// Both orders: Curator holds and we wait behind its node, then we hold and Curator waits.
pub fn locks_exclude_each_other(address: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let path = unique("interop-lock");
    let zk = runtime.block_on(connect(address));
    let mut curator = curator(address, &path);

    // 1. Curator first.
    curator.send("acquire");
    curator.expect("acquired");
    let (events_tx, events_rx) = std::sync::mpsc::channel();
    let mut ours = Lock::new(&zk, &path).with_observer(move |event| {
        let _ = events_tx.send(event);
    });
    let participants = {
        let probe = Lock::new(&zk, &path);
        move |rt: &tokio::runtime::Runtime| rt.block_on(probe.participants()).unwrap()
    };
    let waiting = runtime.spawn(async move {
        ours.acquire().await.unwrap();
        ours
    });
    let on = match events_rx.recv_timeout(WAIT).expect("a lock event") {
        LockEvent::Waiting { on, .. } => on,
        other => panic!("acquired while Curator holds the lock: {other:?}"),
    };
    let queue = participants(&runtime);
    assert_eq!(queue.len(), 2);
    assert_eq!(
        on,
        format!("{path}/{}", queue[0]),
        "we wait on Curator's node"
    );
    for name in &queue {
        assert!(
            name.starts_with("_c_") && name.contains("-lock-") && name.len() == 3 + 36 + 6 + 10,
            "both use Curator's layout: {name}"
        );
    }
    curator.send("status");
    assert_eq!(curator.expect("status"), "status held=true");
    assert!(!waiting.is_finished());
    curator.send("release");
    curator.expect("released");
    let mut ours = runtime.block_on(async { within("our lock", waiting).await.unwrap() });
    assert!(ours.is_held());

    // 2. We hold; Curator queues behind us and gets the lock only when we release.
    curator.send("acquire");
    let queued = (0..3000).any(|_| {
        if participants(&runtime).len() == 2 {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        false
    });
    assert!(queued, "Curator's node appears");
    let queue = participants(&runtime);
    assert_eq!(Some(queue[0].as_str()), ours.node().map(client::path::name));
    curator.send("status");
    assert_eq!(curator.expect("status"), "status held=false");
    runtime.block_on(ours.release()).unwrap();
    curator.expect("acquired");
    curator.send("status");
    assert_eq!(curator.expect("status"), "status held=true");
    curator.send("exit");
    assert!(curator.wait_exit());
    runtime.block_on(zk.close());
}

/// Our LeaderLatch and Curator's in one election: whoever started first leads, the other
/// follows and takes over when the leader leaves; both use Curator's `latch-` nodes.
pub fn elections_share_leadership(address: &str) {
    use client::recipes::election::LeaderLatch;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let path = unique("interop-election");
    let zk = runtime.block_on(connect(address));

    // 1. Curator leads; we follow, then take over when it leaves.
    let mut curator = curator_latch(address, &path, "curator-1");
    curator.expect("leader");
    let mut ours = LeaderLatch::new(&zk, &path, "meerkat");
    runtime.block_on(ours.start()).unwrap();
    assert!(!runtime.block_on(ours.is_leader()).unwrap());
    assert_eq!(
        runtime.block_on(ours.leader_id()).unwrap(),
        Some(b"curator-1".to_vec())
    );
    let (children, _) = runtime.block_on(zk.get_children(&path)).unwrap();
    assert_eq!(children.len(), 2);
    for name in &children {
        assert!(
            name.starts_with("_c_") && name.contains("-latch-"),
            "Curator's layout: {name}"
        );
    }
    let waiting = runtime.spawn(async move {
        ours.await_leadership().await.unwrap();
        ours
    });
    curator.send("exit");
    assert!(curator.wait_exit());
    let mut ours = runtime.block_on(async { within("our leadership", waiting).await.unwrap() });
    assert!(runtime.block_on(ours.is_leader()).unwrap());

    // 2. We lead; a Curator candidate follows until we leave.
    let mut curator = curator_latch(address, &path, "curator-2");
    curator.send("status");
    assert_eq!(curator.expect("status"), "status leader=false");
    assert_eq!(
        runtime.block_on(ours.leader_id()).unwrap(),
        Some(b"meerkat".to_vec())
    );
    runtime.block_on(ours.close()).unwrap();
    curator.expect("leader");
    curator.send("exit");
    assert!(curator.wait_exit());
    runtime.block_on(zk.close());
}
