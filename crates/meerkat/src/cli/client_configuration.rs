//! `-client-configuration FILE`, as zkCli takes it: a Java properties file of ZooKeeper client
//! properties. meerkat reads the TLS ones: `zookeeper.client.secure`,
//! `zookeeper.ssl.keyStore.location/password/passwordPath/type`,
//! `zookeeper.ssl.trustStore.location/password/passwordPath/type` and
//! `zookeeper.ssl.hostnameVerification`; other keys are ignored.

use client::{StoreLocation, TlsConfig};

/// The TLS settings a client configuration asks for; `None` when it is not secure.
pub fn tls(properties: &[(String, String)]) -> Result<Option<TlsConfig>, String> {
    let get = |key: &str| {
        properties
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if get("zookeeper.client.secure") != Some("true") {
        return Ok(None);
    }
    let store = |prefix: &str| {
        let location = get(&format!("{prefix}.location")).filter(|l| !l.is_empty())?;
        let mut store = StoreLocation::new(location);
        store.password = get(&format!("{prefix}.password"))
            .unwrap_or_default()
            .to_string();
        store.password_path = get(&format!("{prefix}.passwordPath")).map(Into::into);
        store.store_type = get(&format!("{prefix}.type")).map(str::to_string);
        Some(store)
    };
    let trust = store("zookeeper.ssl.trustStore").ok_or(
        "zookeeper.client.secure=true needs zookeeper.ssl.trustStore.location (the certificates \
         that sign the servers')",
    )?;
    let mut tls = TlsConfig::new(trust);
    if let Some(key) = store("zookeeper.ssl.keyStore") {
        tls = tls.with_key_store(key);
    }
    if get("zookeeper.ssl.hostnameVerification") == Some("false") {
        tls = tls.with_hostname_verification(false);
    }
    Ok(Some(tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Vec<(String, String)> {
        server::config::read_properties(text).expect("properties")
    }

    #[test]
    fn secure_client_properties_make_a_tls_config() {
        assert!(tls(&props("zookeeper.ssl.trustStore.location=/ca.pem\n"))
            .expect("ok")
            .is_none());
        let config = tls(&props(
            "zookeeper.client.secure=true\nzookeeper.ssl.trustStore.location=/ca.pem\n\
             zookeeper.ssl.keyStore.location=/me.p12\nzookeeper.ssl.keyStore.password=pw\n\
             zookeeper.ssl.hostnameVerification=false\n",
        ))
        .expect("ok")
        .expect("secure");
        assert_eq!(config.trust_store.path, std::path::PathBuf::from("/ca.pem"));
        let key = config.key_store.expect("key store");
        assert_eq!(
            (key.path.to_str(), key.password.as_str()),
            (Some("/me.p12"), "pw")
        );
        assert!(!config.hostname_verification);
        assert!(tls(&props("zookeeper.client.secure=true\n")).is_err());
    }
}
