//! The bounded queue between the application's calls and the session driver.
//!
//! Requests must reach the server in the order the application issued them, including when
//! many calls are in flight from one task (`join_all` of many futures): a plain bounded tokio
//! channel does not promise that, because cooperative scheduling can let a later sender take
//! a freed slot before an earlier one. So each call takes a ticket, in call order, the first
//! time it is polled, and requests enter the queue strictly in ticket order. The queue holds at
//! most [`SUBMIT_QUEUE_LEN_MAX`] requests; callers beyond that wait (holding their own
//! request), so memory stays bounded. A call dropped before its turn gives its ticket up.

use crate::limits::SUBMIT_QUEUE_LEN_MAX;
use crate::session::Command;
use std::collections::{BTreeSet, VecDeque};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::Notify;

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Command>,
    next_ticket: u64,
    /// The ticket allowed to enter the queue next.
    next_turn: u64,
    /// Tickets whose call was dropped before its turn.
    abandoned: BTreeSet<u64>,
    /// The driver has ended: nothing will be taken any more.
    closed: bool,
    /// Every client handle is gone: the driver should close the session.
    orphaned: bool,
}

impl State {
    fn advance(&mut self) {
        self.next_turn += 1;
        while self.abandoned.remove(&self.next_turn) {
            self.next_turn += 1;
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct SubmitQueue {
    state: Mutex<State>,
    /// Wakes callers waiting for their turn or for room.
    room: Notify,
    /// Wakes the driver when a request arrives.
    arrived: Notify,
}

/// Why a request could not be queued: the session is over.
pub(crate) struct Closed;

impl SubmitQueue {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the state half-updated (every update is
        // a single field change), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues `command` after every call made before this one.
    pub(crate) async fn submit(&self, command: Command) -> Result<(), Closed> {
        let ticket = {
            let mut state = self.lock();
            let ticket = state.next_ticket;
            state.next_ticket += 1;
            ticket
        };
        let mut guard = TicketGuard {
            queue: self,
            ticket,
            done: false,
        };
        loop {
            let notified = self.room.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if state.closed {
                    guard.done = true;
                    state.abandoned.insert(ticket);
                    drop(command);
                    return Err(Closed);
                }
                if state.next_turn == ticket && state.queue.len() < SUBMIT_QUEUE_LEN_MAX {
                    state.queue.push_back(command);
                    state.advance();
                    guard.done = true;
                    drop(state);
                    self.arrived.notify_one();
                    // The next ticket may be waiting for its turn.
                    self.room.notify_waiters();
                    return Ok(());
                }
            }
            notified.await;
        }
    }

    /// The driver's side: the next request, or `None` once every client handle is gone.
    /// Cancel-safe: a request is removed only by a completed call.
    pub(crate) async fn recv(&self) -> Option<Command> {
        loop {
            let notified = self.arrived.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = self.lock();
                if let Some(command) = state.queue.pop_front() {
                    drop(state);
                    self.room.notify_waiters();
                    return Some(command);
                }
                if state.orphaned {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// The connection was lost: hands back every queued request (the driver fails them with
    /// ConnectionLoss, as ZooKeeper's client fails its outgoing queue); later calls wait for
    /// the next connection.
    pub(crate) fn take_queued(&self) -> Vec<Command> {
        let mut state = self.lock();
        let queued = state.queue.drain(..).collect();
        drop(state);
        self.room.notify_waiters();
        queued
    }

    /// The driver has ended: refuse new requests and hand back those queued.
    pub(crate) fn close(&self) -> Vec<Command> {
        let mut state = self.lock();
        state.closed = true;
        let queued = state.queue.drain(..).collect();
        drop(state);
        self.room.notify_waiters();
        queued
    }

    /// Every client handle is gone.
    pub(crate) fn orphan(&self) {
        self.lock().orphaned = true;
        self.arrived.notify_one();
    }
}

/// Gives a ticket up if its call is dropped before its turn, so later calls are not stuck.
struct TicketGuard<'a> {
    queue: &'a SubmitQueue,
    ticket: u64,
    done: bool,
}

impl Drop for TicketGuard<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let mut state = self.queue.lock();
        if state.next_turn == self.ticket {
            state.advance();
        } else {
            state.abandoned.insert(self.ticket);
        }
        drop(state);
        self.queue.room.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::request::Request;
    use std::future::Future;
    use tokio::sync::oneshot;

    fn command(
        i: usize,
    ) -> (
        Command,
        oneshot::Receiver<crate::Result<proto::response::Response>>,
    ) {
        let (reply, rx) = oneshot::channel();
        (
            Command::Submit(crate::session::Submission {
                request: Request::Ping,
                path: i.to_string(),
                watch: None,
                effect: None,
                reply,
            }),
            rx,
        )
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn requests_enter_in_call_order_even_when_full() {
        let queue = std::sync::Arc::new(SubmitQueue::default());
        let n = 5 * SUBMIT_QUEUE_LEN_MAX;
        let consumer = {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while seen.len() < n {
                    match queue.recv().await {
                        Some(Command::Submit(s)) => {
                            seen.push(s.path.parse::<usize>().unwrap_or(usize::MAX))
                        }
                        _ => break,
                    }
                    tokio::task::yield_now().await;
                }
                seen
            })
        };
        let mut receivers = Vec::new();
        let submissions: Vec<_> = (0..n)
            .map(|i| {
                let (c, rx) = command(i);
                receivers.push(rx);
                let queue = queue.clone();
                async move { queue.submit(c).await.is_ok() }
            })
            .collect();
        // Poll all submissions from one task, as join_all does.
        let mut futures: Vec<_> = submissions.into_iter().map(Box::pin).map(Some).collect();
        std::future::poll_fn(|cx| {
            let mut pending = false;
            for slot in futures.iter_mut() {
                if let Some(f) = slot {
                    match f.as_mut().poll(cx) {
                        std::task::Poll::Ready(ok) => {
                            assert!(ok);
                            *slot = None;
                        }
                        std::task::Poll::Pending => pending = true,
                    }
                }
            }
            if pending {
                std::task::Poll::Pending
            } else {
                std::task::Poll::Ready(())
            }
        })
        .await;
        let seen = consumer.await.unwrap_or_default();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_dropped_call_gives_its_turn_up() {
        let queue = SubmitQueue::default();
        for i in 0..SUBMIT_QUEUE_LEN_MAX {
            assert!(queue.submit(command(i).0).await.is_ok());
        }
        let waker = futures_noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        // The queue is full: the next call takes its ticket and waits.
        let mut waiting = Box::pin(queue.submit(command(usize::MAX).0));
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        let mut after = Box::pin(queue.submit(command(7777).0));
        assert!(after.as_mut().poll(&mut cx).is_pending());
        drop(waiting);
        assert!(queue.recv().await.is_some(), "room for one");
        assert!(
            after.as_mut().poll(&mut cx).is_ready(),
            "the later call takes the turn"
        );
        for _ in 1..SUBMIT_QUEUE_LEN_MAX {
            assert!(queue.recv().await.is_some());
        }
        match queue.recv().await {
            Some(Command::Submit(s)) => assert_eq!(s.path, "7777"),
            _ => panic!("expected the later call"),
        }
    }

    fn futures_noop_waker() -> std::task::Waker {
        struct Noop;
        impl std::task::Wake for Noop {
            fn wake(self: std::sync::Arc<Self>) {}
        }
        std::task::Waker::from(std::sync::Arc::new(Noop))
    }
}
