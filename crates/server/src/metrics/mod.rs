//! The operators' HTTP side: ZooKeeper's Prometheus endpoint (`metricsProvider.*`, `/metrics`
//! on port 7000) over [`http`].
//!
//! The figures come from the core the way the four-letter words get them: a
//! [`CoreMsg::FourLetter`] message answered with `mntr`'s text, which [`prometheus`] turns into
//! ZooKeeper's metric names and types. Nothing here reads the core's state directly.

pub mod http;
pub mod prometheus;

use crate::core::CoreMsg;
use hyper::StatusCode;
use std::net::SocketAddr;
use tokio::sync::mpsc;

/// Asks the core to run a four-letter word and returns its text; `None` when the core is gone.
pub async fn ask_core(core_tx: &mpsc::Sender<CoreMsg>, command: &str) -> Option<String> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let msg = CoreMsg::FourLetter {
        command: command.to_string(),
        peer: SocketAddr::from(([0, 0, 0, 0], 0)),
        reply,
    };
    core_tx.send(msg).await.ok()?;
    answer.await.ok()
}

/// Serves `/metrics` until the task is aborted.
pub async fn serve_prometheus(listener: tokio::net::TcpListener, core_tx: mpsc::Sender<CoreMsg>) {
    http::serve(listener, "prometheus", move |path, _query| {
        let core_tx = core_tx.clone();
        async move {
            if path != "/metrics" {
                return http::Reply::not_found();
            }
            match ask_core(&core_tx, "mntr").await {
                Some(mntr) => http::Reply::new(
                    StatusCode::OK,
                    "text/plain; version=0.0.4; charset=utf-8",
                    prometheus::render(&mntr),
                ),
                None => http::Reply::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain; charset=utf-8",
                    "the server is shutting down\n".into(),
                ),
            }
        }
    })
    .await;
}
