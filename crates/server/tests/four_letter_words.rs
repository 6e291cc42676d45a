//! Four-letter words on the client port: the whitelist, `ruok`, and `mntr`.

mod support;

use server::config::FourLetterWhitelist;
use support::*;

/// Sends a four-letter word and returns everything the server writes before it closes.
async fn ask(addr: std::net::SocketAddr, word: &str) -> String {
    let mut conn = Conn::open(addr).await;
    conn.write_all(word.as_bytes()).await.expect("send word");
    String::from_utf8(conn.expect_closed().await).expect("text answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruok_and_words_outside_the_whitelist() {
    let mut config = test_config();
    config.four_letter_words = FourLetterWhitelist::parse("ruok, mntr");
    let server = start(config).await;
    let addr = server.client_address;

    assert_eq!(ask(addr, "ruok").await, "imok");
    for word in ["stat", "cons", "dump", "envi", "wchc"] {
        assert_eq!(
            ask(addr, word).await,
            format!("{word} is not executed because it is not in the whitelist.\n")
        );
    }
    // srvr is always on the list.
    assert!(ask(addr, "srvr").await.contains("Mode: standalone\n"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_whitelist_is_srvr_only() {
    let server = start(test_config()).await;
    let addr = server.client_address;
    assert_eq!(
        ask(addr, "ruok").await,
        "ruok is not executed because it is not in the whitelist.\n"
    );
    assert_eq!(
        ask(addr, "mntr").await,
        "mntr is not executed because it is not in the whitelist.\n"
    );
    let srvr = ask(addr, "srvr").await;
    assert!(srvr.starts_with("Zookeeper version: "), "{srvr}");
    assert!(srvr.contains("\nMode: standalone\n"), "{srvr}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mntr_with_every_word_enabled() {
    let mut config = test_config();
    config.four_letter_words = FourLetterWhitelist::parse("*");
    let server = start(config).await;
    let addr = server.client_address;
    let mut client = Conn::session(addr).await;
    client.round_trip("/counted").await;

    assert_eq!(ask(addr, "ruok").await, "imok");
    let mntr = ask(addr, "mntr").await;
    let lines: Vec<(&str, &str)> = mntr
        .lines()
        .map(|l| {
            l.split_once('\t')
                .unwrap_or_else(|| panic!("not key\\tvalue: {l:?}"))
        })
        .collect();
    let value = |key: &str| {
        lines
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {key} in mntr:\n{mntr}"))
    };
    assert!(mntr.contains("zk_server_state\tstandalone\n"), "{mntr}");
    // /, /zookeeper, /zookeeper/quota, /zookeeper/config, /counted, and the root counted twice
    // as ZooKeeper does.
    assert_eq!(value("zk_znode_count"), "6", "{mntr}");
    let connections: u64 = value("zk_num_alive_connections").parse().expect("number");
    assert!(connections >= 1, "{mntr}");
    assert!(value("zk_version").starts_with("3.9"), "{mntr}");
    // Storage under ZooKeeper's metric names: the session and the create were fsynced.
    assert_eq!(value("zk_durability_mode"), "durable", "{mntr}");
    let fsyncs: u64 = value("zk_cnt_fsynctime").parse().expect("number");
    assert!(fsyncs >= 1, "{mntr}");
    let records: u64 = value("zk_meerkat_log_records").parse().expect("number");
    assert!(records >= 2, "createSession and create were logged: {mntr}");
    assert_eq!(value("zk_startup_txns_loaded"), "0", "{mntr}");

    // A four-letter word is only recognised as the first bytes of a connection: after a
    // handshake, the same bytes are a (bad) frame length and the connection is closed.
    let mut after = Conn::session(addr).await;
    after.write_all(b"ruok").await.expect("send");
    assert!(after.expect_closed().await.is_empty());
    client.round_trip("/still").await;
    server.shutdown().await;
}
