use super::*;

const ZOOKEEPER_DOCS_EXAMPLE: &str = r#"
/* The server's users (ZooKeeper's SASL guide). */
Server {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       user_super="adminsecret"
       user_bob="bobsecret"; // the application's user
};
// What the Java client in the same JVM logs in with.
Client {
       org.apache.zookeeper.server.auth.DigestLoginModule required
       username="bob"
       password='bob\'s "secret"';
};
"#;

#[test]
fn reads_sections_modules_and_users() {
    let config = parse(ZOOKEEPER_DOCS_EXAMPLE).expect("parses");
    assert_eq!(config.sections.len(), 2);
    let server = config.section("Server").expect("Server");
    assert_eq!(server.modules.len(), 1);
    assert_eq!(server.modules[0].class, DIGEST_LOGIN_MODULE);
    assert_eq!(server.modules[0].flag, Flag::Required);
    let users: Vec<(String, String)> = server.digest_users().into_iter().collect();
    assert_eq!(
        users,
        vec![
            ("bob".to_string(), "bobsecret".to_string()),
            ("super".to_string(), "adminsecret".to_string())
        ]
    );
    let client = config.section("Client").expect("Client");
    assert_eq!(
        client.modules[0]
            .options
            .get("password")
            .map(String::as_str),
        Some("bob's \"secret\"")
    );
    assert!(
        config.section("server").is_none(),
        "names are case-sensitive"
    );
}

#[test]
fn several_modules_flags_and_unquoted_values() {
    let text = "KafkaServer{a.B optional;c.D SUFFICIENT user_x=plain debug=true;};\
                Server { x.Y Requisite user_a=\"1\"; z.W required user_b=\"2\" user_a=\"3\"; };";
    let config = parse(text).expect("parses");
    let kafka = config.section("KafkaServer").expect("section");
    assert_eq!(kafka.modules[0].flag, Flag::Optional);
    assert_eq!(kafka.modules[1].flag, Flag::Sufficient);
    assert_eq!(
        kafka.digest_users().get("x").map(String::as_str),
        Some("plain")
    );
    let users = config.section("Server").expect("Server").digest_users();
    assert_eq!(users.get("a").map(String::as_str), Some("3"));
    assert_eq!(users.get("b").map(String::as_str), Some("2"));
    assert_eq!(parse("").expect("empty file"), JaasConfig::default());
    assert_eq!(
        parse("S { };").expect("empty section").sections[0].modules,
        vec![]
    );
}

#[test]
fn malformed_files_are_typed_errors_with_lines() {
    let cases: &[(&str, JaasError)] = &[
        (
            "Server {\n m required user_a=\"x\"\n};",
            JaasError::Unexpected {
                line: 3,
                expected: "an option name or ';'",
                found: "'}'".into(),
            },
        ),
        (
            "Server {\n m mandatory;\n};",
            JaasError::Flag {
                line: 2,
                flag: "mandatory".into(),
            },
        ),
        (
            "Server {\n m required user_a=\"x;\n};",
            JaasError::UnterminatedQuote { line: 2 },
        ),
        (
            "/* never closed\nServer { };",
            JaasError::UnterminatedComment { line: 1 },
        ),
        (
            "Server { };\nServer { };",
            JaasError::DuplicateSection {
                line: 2,
                name: "Server".into(),
            },
        ),
        (
            "Server { m required; }",
            JaasError::Unexpected {
                line: 1,
                expected: "';' after '}'",
                found: "the end of the file".into(),
            },
        ),
        (
            "# not a JAAS comment\nServer { };",
            JaasError::Unexpected {
                line: 1,
                expected: "a name, a quoted string, '{', '}', ';' or '='",
                found: "'#'".into(),
            },
        ),
        (
            "Server { m required user_a \"secret\"; };",
            JaasError::Unexpected {
                line: 1,
                expected: "'=' after an option name",
                found: "a name or a quoted string".into(),
            },
        ),
        (
            "Server { m required user_a; };",
            JaasError::Unexpected {
                line: 1,
                expected: "'=' after an option name",
                found: "';'".into(),
            },
        ),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text).as_ref(), Err(want), "{text:?}");
    }
    assert_eq!(
        parse(&" ".repeat(FILE_BYTES_MAX + 1)),
        Err(JaasError::TooLarge)
    );
}

/// Random and truncated files never panic.
#[test]
fn arbitrary_text_never_panics() {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet: Vec<char> = "Server{};=\"'\\/*\n user_a=x required é#".chars().collect();
    for len in 0..ZOOKEEPER_DOCS_EXAMPLE.len() {
        let _ = parse(&ZOOKEEPER_DOCS_EXAMPLE[..ZOOKEEPER_DOCS_EXAMPLE.floor_char_boundary(len)]);
    }
    for _ in 0..2000 {
        let text: String = (0..(next() % 80))
            .map(|_| alphabet[(next() as usize) % alphabet.len()])
            .collect();
        let _ = parse(&text);
    }
}
