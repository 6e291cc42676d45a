//! ZooKeeper's AdminServer: `http://admin.serverAddress:admin.serverPort/commands/<name>`
//! answers JSON with ZooKeeper 3.9's command names, aliases and field names ([`commands`]);
//! `/commands` lists them as links, as ZooKeeper's Jetty server does.
//!
//! Off unless `admin.enableServer=true` (ZooKeeper 3.5-3.9 turn it on by default, 3.10 off;
//! meerkat follows 3.10 so that a server never takes port 8080 unasked). HTTPS
//! (`admin.portUnification`, `admin.forceHttps`) is not offered yet.

pub mod commands;
pub mod text;

use crate::config::ServerConfig;
use crate::connection::Shared;
use crate::metrics::http::{self, Reply};
use hyper::StatusCode;
use std::sync::Arc;

/// Serves the AdminServer until the task is aborted.
pub async fn serve(
    listener: tokio::net::TcpListener,
    shared: Arc<Shared>,
    config: Arc<ServerConfig>,
) {
    let base = config.admin.command_url.trim_end_matches('/').to_string();
    let ctx = Arc::new(commands::Context { shared, config });
    http::serve(listener, "admin", move |path, _query| {
        let (ctx, base) = (ctx.clone(), base.clone());
        async move {
            let Some(rest) = path.strip_prefix(base.as_str()) else {
                return Reply::not_found();
            };
            match rest.trim_start_matches('/') {
                "" => Reply::new(StatusCode::OK, "text/html; charset=utf-8", index(&base)),
                name => {
                    let value = commands::run(name, &ctx).await;
                    let body = serde_json::to_string_pretty(&value).unwrap_or_default();
                    Reply::new(StatusCode::OK, "application/json", body)
                }
            }
        }
    })
    .await;
}

/// The `/commands` page: one link per primary command name, sorted, as ZooKeeper lists them.
fn index(base: &str) -> String {
    let mut names: Vec<&str> = commands::COMMANDS.iter().map(|c| c.names[0]).collect();
    names.sort_unstable();
    names
        .iter()
        .map(|n| format!("<a href=\"{base}/{n}\">{n}</a>\n<br/>\n"))
        .collect()
}
