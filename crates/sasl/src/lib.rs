//! SASL for meerkat's client port, as Apache ZooKeeper 3.9 offers it: the DIGEST-MD5 server
//! mechanism and the JAAS files that name its users.
//!
//! # Layout
//! * [`directives`]: RFC 2831's `name=value` lists (challenges and responses).
//! * [`digest_md5`]: the server side of a DIGEST-MD5 exchange, as the JDK's `DigestMD5Server`
//!   runs it for ZooKeeper (`qop=auth`, realm and server name `zk-sasl-md5`, protocol
//!   `zookeeper`).
//! * [`digest_md5_client`]: the client side, for meerkat's own tests (and a later Rust client).
//! * [`jaas`]: JAAS login configuration files (`Server { ... DigestLoginModule required
//!   user_NAME="password"; };`), parsed as the JDK's `ConfigFile` reads them.
//! * [`jvm_flags`]: finding `-Djava.security.auth.login.config=PATH` in `SERVER_JVMFLAGS`.
//!
//! Nothing here does I/O or draws random numbers: the caller reads files and supplies each
//! exchange's nonce, so every function is a pure function of its inputs and is unit-tested
//! against RFC 2831's example.

pub mod digest_md5;
pub mod digest_md5_client;
pub mod directives;
pub mod jaas;
pub mod jvm_flags;

/// The SASL protocol name ZooKeeper's client and server use (`SaslServerPrincipal`,
/// `ZooKeeperSaslServer`): the service part of the DIGEST-MD5 `digest-uri`.
pub const ZOOKEEPER_PROTOCOL: &str = "zookeeper";

/// The server name (and so the realm) ZooKeeper uses for DIGEST-MD5 whatever host it runs on
/// (`SecurityUtils.createSaslServer`, `ZooKeeperSaslClient`; kazoo hard-codes it too).
pub const ZOOKEEPER_DIGEST_SERVER_NAME: &str = "zk-sasl-md5";

/// The JAAS section ZooKeeper's server reads its users from unless
/// `zookeeper.sasl.serverconfig` names another (`ZooKeeperSaslServer.DEFAULT_LOGIN_CONTEXT_NAME`).
pub const DEFAULT_SERVER_SECTION: &str = "Server";
