//! The operation and watch suites against an in-process meerkat server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_against_meerkat() {
    let server = start_meerkat().await;
    ops_suite::run_all(&addr(server.client_address)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_watch_kind_against_meerkat() {
    let server = start_meerkat().await;
    watch_suite::run_all(&addr(server.client_address)).await;
}
