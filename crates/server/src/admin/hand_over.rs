//! `POST /commands/leadership_handover`: meerkat's own command (ZooKeeper has none) for a
//! planned leader change without stopping a server: the leader hands over to its most
//! up-to-date follower (docs/ensemble.md, "Leadership hand-over"). SIGTERM on the leader does
//! the same before it stops.
//!
//! Answers `{"successor": N, "command": ..., "error": null}` once the successor is taking
//! over, or an `error` saying why not (not the leader, no synced follower, not completed in
//! time).

use super::commands::Context;
use crate::core::CoreMsg;
use serde_json::{json, Value};

/// The command's name under `admin.commandURL`.
pub const COMMAND: &str = "leadership_handover";

pub async fn run(ctx: &Context) -> Value {
    let within_ms = crate::limits::hand_over_within_ms(ctx.config.tick_time_ms);
    let (reply, answer) = tokio::sync::oneshot::channel();
    let outcome = match ctx
        .shared
        .core_tx
        .send(CoreMsg::HandOver { within_ms, reply })
        .await
    {
        Ok(()) => answer
            .await
            .unwrap_or_else(|_| Err("the server is shutting down".into())),
        Err(_) => Err("the server is shutting down".into()),
    };
    match outcome {
        Ok(successor) => json!({ "successor": successor, "command": COMMAND, "error": null }),
        Err(why) => json!({ "command": COMMAND, "error": why }),
    }
}
