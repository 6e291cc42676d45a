//! ZooKeeper's AdminServer: `http://admin.serverAddress:admin.serverPort/commands/<name>`
//! answers JSON with ZooKeeper 3.9's command names, aliases and field names ([`commands`]);
//! `/commands` lists them as links, as ZooKeeper's Jetty server does. One command is
//! meerkat's own and takes POST: [`hand_over`].
//!
//! Off unless `admin.enableServer=true` (ZooKeeper 3.5-3.9 turn it on by default, 3.10 off;
//! meerkat follows 3.10 so that a server never takes port 8080 unasked). HTTPS with
//! `admin.forceHttps` (only HTTPS) or `admin.portUnification` (both on one port), using the
//! `ssl.quorum.*` stores as ZooKeeper's `JettyAdminServer` does; `admin.needClientAuth` asks
//! HTTPS clients for a certificate the quorum trust store accepts.

pub mod commands;
pub mod hand_over;
pub mod text;

use crate::config::{ClientAuth, ServerConfig, TlsSettings};
use crate::connection::Shared;
use crate::metrics::http::{self, Reply};
use hyper::StatusCode;
use std::sync::Arc;

/// The TLS settings of the AdminServer's HTTPS: the quorum's stores, protocols and suites.
pub fn tls_settings(config: &ServerConfig) -> TlsSettings {
    let quorum = &config.quorum_tls;
    TlsSettings {
        key_store: quorum.key_store.clone(),
        trust_store: quorum.trust_store.clone(),
        client_auth: if config.admin.need_client_auth {
            ClientAuth::Need
        } else {
            ClientAuth::None
        },
        protocol: quorum.protocol.clone(),
        enabled_protocols: quorum.enabled_protocols.clone(),
        cipher_suites: quorum.cipher_suites.clone(),
        ..TlsSettings::default()
    }
}

/// Serves the AdminServer until the task is aborted.
pub async fn serve(
    listener: tokio::net::TcpListener,
    https: http::Https,
    shared: Arc<Shared>,
    config: Arc<ServerConfig>,
) {
    let base = config.admin.command_url.trim_end_matches('/').to_string();
    let ctx = Arc::new(commands::Context { shared, config });
    http::serve(
        listener,
        "admin",
        https,
        move |request: http::HttpRequest| {
            let (ctx, base) = (ctx.clone(), base.clone());
            async move {
                let Some(rest) = request.path.strip_prefix(base.as_str()) else {
                    return Reply::not_found();
                };
                let name = rest.trim_start_matches('/');
                // State changes take POST only, so that a crawler or a probe never triggers one.
                let changes_state = name == hand_over::COMMAND;
                if request.post != changes_state {
                    return Reply::method_not_allowed();
                }
                let value = match name {
                    "" => {
                        return Reply::new(StatusCode::OK, "text/html; charset=utf-8", index(&base))
                    }
                    hand_over::COMMAND => hand_over::run(&ctx).await,
                    name => commands::run(name, &ctx).await,
                };
                let body = serde_json::to_string_pretty(&value).unwrap_or_default();
                Reply::new(StatusCode::OK, "application/json", body)
            }
        },
    )
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
