//! The operators' HTTP side: ZooKeeper's Prometheus endpoint (`metricsProvider.*`, `/metrics`
//! on port 7000) over [`http`].
//!
//! The figures come from the core the way the four-letter words get them: a
//! [`CoreMsg::FourLetter`] message answered with `mntr`'s text, which [`prometheus`] turns into
//! ZooKeeper's metric names and types. Nothing here reads the core's state directly.

pub mod connections;
pub mod http;
pub mod prometheus;

use crate::connection::Shared;
use crate::core::CoreMsg;
use hyper::StatusCode;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Runs a four-letter word as the client port would: the core's text, and for `mntr` the
/// connection layer's own lines after it. `None` when the core is gone.
pub async fn ask(shared: &Shared, command: &str) -> Option<String> {
    let mut text = ask_core(&shared.core_tx, command).await?;
    if command == "mntr" && text.starts_with("zk_") {
        text.push_str(&shared.connection_metrics.mntr_lines());
    }
    Some(text)
}

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
pub async fn serve_prometheus(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    http::serve(
        listener,
        "prometheus",
        http::Https::Off,
        move |request: http::HttpRequest| {
            let shared = shared.clone();
            async move {
                if request.path != "/metrics" {
                    return http::Reply::not_found();
                }
                if request.post {
                    return http::Reply::method_not_allowed();
                }
                match ask(&shared, "mntr").await {
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
        },
    )
    .await;
}
