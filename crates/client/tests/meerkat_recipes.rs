//! The recipes under contention, one OS process per participant, against meerkat.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use support::*;

/// Runs a multi-process scenario against a fresh meerkat (the server runs on this test's
/// runtime; the scenario drives processes on a blocking thread).
fn against_meerkat(scenario: fn(&str)) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime.block_on(start_meerkat());
    let address = addr(server.client_address);
    scenario(&address);
    server.stop();
}

#[test]
fn lock_mutual_exclusion() {
    against_meerkat(recipe_suite::lock_mutual_exclusion);
}

#[test]
fn lock_release_wakes_exactly_one_waiter() {
    against_meerkat(recipe_suite::lock_release_wakes_exactly_one);
}

#[test]
fn lock_holder_whose_session_dies_releases() {
    against_meerkat(recipe_suite::dead_holder_releases);
}

#[test]
fn double_barrier_enters_and_leaves_together() {
    against_meerkat(recipe_suite::double_barrier_enters_and_leaves_together);
}

#[test]
fn election_fails_over_when_the_leader_dies() {
    against_meerkat(recipe_suite::election_fails_over);
}

#[test]
fn queue_delivers_each_message_once() {
    against_meerkat(recipe_suite::queue_delivers_each_message_once);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_group_configuration_and_rendezvous() {
    let server = start_meerkat().await;
    recipe_inprocess::run_all(&addr(server.client_address)).await;
}
