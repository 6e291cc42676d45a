//! A process that plays one role in a recipe, for the multi-process recipe tests (and for
//! trying recipes by hand). It prints what happens, one event per line on stdout, and takes
//! commands, one per line on stdin.
//!
//! ```text
//! meerkat-recipe-worker ADDRESS lock PATH                 stdin: release | report | exit
//! meerkat-recipe-worker ADDRESS lock-loop PATH COUNTER ROUNDS
//! meerkat-recipe-worker ADDRESS barrier PATH NAME SIZE FLAGS
//! meerkat-recipe-worker ADDRESS elect PATH ID             stdin: status | exit
//! meerkat-recipe-worker ADDRESS consume PATH COUNT
//! ```

use client::recipes::barrier::DoubleBarrier;
use client::recipes::election::LeaderLatch;
use client::recipes::lock::{Lock, LockEvent};
use client::recipes::queue::Queue;
use client::{acl, Client, ClientConfig, CreateMode, ErrorCode};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Stdin lines, read by a task so a role can wait for a command and an event at once.
fn commands() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if tx.send(line.trim().to_string()).await.is_err() {
                return;
            }
        }
    });
    rx
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: meerkat-recipe-worker ADDRESS ROLE ARGS...");
        std::process::exit(2);
    }
    let config = ClientConfig::default()
        .with_session_timeout(Duration::from_secs(4))
        .with_connect_timeout(Duration::from_secs(20));
    let zk = match Client::connect(&args[0], config).await {
        Ok(zk) => zk,
        Err(e) => {
            say(&format!("error {e}"));
            std::process::exit(1);
        }
    };
    let result = match args[1].as_str() {
        "lock" => lock(&zk, &args[2]).await,
        "lock-loop" => lock_loop(&zk, &args[2..]).await,
        "barrier" => barrier(&zk, &args[2..]).await,
        "elect" => elect(&zk, &args[2..]).await,
        "consume" => consume(&zk, &args[2..]).await,
        other => {
            say(&format!("error unknown role {other}"));
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        say(&format!("error {e}"));
        std::process::exit(1);
    }
    zk.close().await;
}

/// Acquires the lock (printing `waiting`, `woken`, `acquired`), then obeys stdin.
async fn lock(zk: &Client, path: &str) -> client::Result<()> {
    let mut lock = Lock::new(zk, path).with_observer(|event| match event {
        LockEvent::Waiting { on, .. } => say(&format!("waiting {on}")),
        LockEvent::Woken { .. } => say("woken"),
        LockEvent::Acquired { node } => say(&format!("acquired {node}")),
    });
    let mut commands = commands();
    let acquired = async {
        lock.acquire().await?;
        Ok::<_, client::Error>(lock)
    };
    tokio::pin!(acquired);
    let mut lock = None;
    loop {
        tokio::select! {
            done = &mut acquired, if lock.is_none() => lock = Some(done?),
            command = commands.recv() => match command.as_deref() {
                Some("release") => {
                    if let Some(held) = lock.as_mut() {
                        held.release().await?;
                        say("released");
                    }
                }
                Some("report") => {
                    // sync first: every notification sent before is delivered before its answer.
                    zk.sync("/").await?;
                    let wakeups = lock.as_ref().map(Lock::wakeups).unwrap_or(0);
                    say(&format!("report held={} wakeups={wakeups}", lock.as_ref().is_some_and(Lock::is_held)));
                }
                Some("exit") | None => return Ok(()),
                Some(other) => say(&format!("error unknown command {other}")),
            }
        }
    }
}

/// ROUNDS times: acquire, check that nobody else is inside (an ephemeral marker), increment a
/// counter with a version check, release.
async fn lock_loop(zk: &Client, args: &[String]) -> client::Result<()> {
    let (path, counter) = (&args[0], &args[1]);
    let rounds: u32 = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(1);
    let marker = format!("{counter}-holder");
    for _ in 0..rounds {
        let mut lock = Lock::new(zk, path);
        lock.acquire().await?;
        match zk
            .create(&marker, b"", &acl::open_unsafe(), CreateMode::Ephemeral)
            .await
        {
            Ok(_) => {}
            Err(e) if e.code() == ErrorCode::NodeExists => say("violation"),
            Err(e) => return Err(e),
        }
        let (data, stat) = zk.get_data(counter).await?;
        let n: u64 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
        tokio::task::yield_now().await;
        zk.set_data(counter, (n + 1).to_string().as_bytes(), stat.version)
            .await?;
        zk.delete(&marker, -1).await?;
        lock.release().await?;
    }
    say("done");
    Ok(())
}

/// Records arrival in FLAGS, enters, counts arrivals; records leaving, leaves, counts.
async fn barrier(zk: &Client, args: &[String]) -> client::Result<()> {
    let (path, name, flags) = (&args[0], &args[1], &args[3]);
    let size: usize = args[2].parse().unwrap_or(1);
    let barrier = DoubleBarrier::new(zk, path, name, size);
    let count = |prefix: &'static str| async move {
        let (children, _) = zk.get_children(flags).await?;
        Ok::<_, client::Error>(children.iter().filter(|c| c.starts_with(prefix)).count())
    };
    let mark = |what: String| async move {
        zk.create(
            &format!("{flags}/{what}"),
            b"",
            &acl::open_unsafe(),
            CreateMode::Persistent,
        )
        .await
        .map(drop)
    };
    mark(format!("enter-{name}")).await?;
    barrier.enter().await?;
    say(&format!("entered {}", count("enter-").await?));
    mark(format!("leave-{name}")).await?;
    barrier.leave().await?;
    say(&format!("left {}", count("leave-").await?));
    Ok(())
}

/// Runs for leadership; prints `leader ID` on winning; obeys `status` and `exit`.
async fn elect(zk: &Client, args: &[String]) -> client::Result<()> {
    let (path, id) = (&args[0], &args[1]);
    let mut latch = LeaderLatch::new(zk, path, id);
    latch.start().await?;
    say("started");
    let mut commands = commands();
    let mut leading = false;
    loop {
        tokio::select! {
            won = latch.await_leadership(), if !leading => {
                won?;
                leading = true;
                say(&format!("leader {id}"));
            }
            command = commands.recv() => match command.as_deref() {
                Some("status") => say(&format!("status leader={}", latch.is_leader().await?)),
                Some("exit") | None => return latch.close().await,
                Some(other) => say(&format!("error unknown command {other}")),
            }
        }
    }
}

/// Takes COUNT messages, printing each.
async fn consume(zk: &Client, args: &[String]) -> client::Result<()> {
    let queue = Queue::new(zk, &args[0]);
    let count: usize = args.get(1).and_then(|c| c.parse().ok()).unwrap_or(1);
    for _ in 0..count {
        let message = queue.take().await?;
        say(&format!("got {}", String::from_utf8_lossy(&message)));
    }
    say("done");
    Ok(())
}
