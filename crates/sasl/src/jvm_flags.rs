//! Java system properties in a JVM flags string such as `SERVER_JVMFLAGS`.
//!
//! `zkServer.sh` passes `$SERVER_JVMFLAGS` to `java` unquoted, so the shell splits it at white
//! space and quotes inside it stay literal; the JVM takes the last `-Dname=value` for a name.
//! This reads the flags the same way.

/// The JAAS file property (`-Djava.security.auth.login.config=PATH`).
pub const JAAS_CONFIG_PROPERTY: &str = "java.security.auth.login.config";

/// The value of the system property `name` set by `-Dname=value` in `flags`, the last one
/// winning; `-Dname` alone sets the empty string, as in Java.
pub fn system_property<'a>(flags: &'a str, name: &str) -> Option<&'a str> {
    flags
        .split_ascii_whitespace()
        .filter_map(|word| word.strip_prefix("-D"))
        .filter_map(|definition| match definition.split_once('=') {
            Some((key, value)) if key == name => Some(value),
            None if definition == name => Some(""),
            _ => None,
        })
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_last_definition() {
        let flags = " -Xmx1g -Djava.security.auth.login.config=/etc/zk/a.conf\t-Dzookeeper.x=1 \
                     -Djava.security.auth.login.config=/etc/zk/jaas.conf ";
        assert_eq!(
            system_property(flags, JAAS_CONFIG_PROPERTY),
            Some("/etc/zk/jaas.conf")
        );
        assert_eq!(system_property(flags, "zookeeper.x"), Some("1"));
        assert_eq!(system_property("-Dflag", "flag"), Some(""));
        assert_eq!(system_property("-Dflagged=1", "flag"), None);
        assert_eq!(system_property("", JAAS_CONFIG_PROPERTY), None);
        assert_eq!(system_property("-D=x -D", JAAS_CONFIG_PROPERTY), None);
    }
}
