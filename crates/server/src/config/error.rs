//! Errors that stop a configuration from loading, and warnings that do not.
//!
//! Every message names the file (the `origin`) and, where there is one, the line, so an operator
//! can go straight to the offending text: `zoo.cfg:7: invalid value "abc" for tickTime: ...`.

use std::fmt;

/// Longest value quoted back in a message; garbage input must not produce a huge error.
const VALUE_SHOWN_CHARS_MAX: usize = 120;

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read at all.
    #[error("{origin}: cannot read configuration file: {source}")]
    Io {
        origin: String,
        #[source]
        source: std::io::Error,
    },
    /// The properties syntax itself is broken (for example a malformed `\uXXXX` escape).
    #[error("{origin}:{line}: {message}")]
    Syntax {
        origin: String,
        line: usize,
        message: String,
    },
    /// A key meerkat reads has a value it cannot use.
    #[error("{origin}:{line}: invalid value {value:?} for {key}: {reason}")]
    InvalidValue {
        origin: String,
        line: usize,
        key: String,
        value: String,
        reason: String,
    },
    /// A value is well-formed on its own but not acceptable here (min above max, observers
    /// without a quorum, a ZooKeeper feature meerkat refuses to ignore silently). The message
    /// starts with the key or names it.
    #[error("{origin}:{line}: {message}")]
    Rejected {
        origin: String,
        line: usize,
        key: String,
        message: String,
    },
    /// A required key is absent; there is no line to point at.
    #[error("{origin}: {key} is not set: {why}")]
    Missing {
        origin: String,
        key: &'static str,
        why: &'static str,
    },
}

impl ConfigError {
    /// Builds [`ConfigError::InvalidValue`], shortening very long values for display.
    pub(super) fn invalid_value(
        origin: &str,
        line: usize,
        key: &str,
        value: &str,
        reason: String,
    ) -> Self {
        ConfigError::InvalidValue {
            origin: origin.to_string(),
            line,
            key: key.to_string(),
            value: shorten(value),
            reason,
        }
    }

    /// The line the error points at, when it has one.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Syntax { line, .. }
            | ConfigError::InvalidValue { line, .. }
            | ConfigError::Rejected { line, .. } => Some(*line),
            ConfigError::Io { .. } | ConfigError::Missing { .. } => None,
        }
    }
}

/// Something worth telling the operator that does not stop the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    pub origin: String,
    pub line: usize,
    pub key: String,
    pub kind: WarningKind,
}

/// What a [`ConfigWarning`] is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningKind {
    /// Neither meerkat nor ZooKeeper 3.9 knows this key (ZooKeeper would turn it into an unused
    /// `zookeeper.<key>` system property). `suggestion` is a known key differing only in case.
    UnknownKey { suggestion: Option<&'static str> },
    /// A ZooKeeper key meerkat does not implement yet; its value is ignored.
    Unsupported,
    /// The key was already set; as in ZooKeeper (java.util.Properties) the last value wins.
    Duplicate { previous_line: usize },
    /// Anything else: a value adjusted the way ZooKeeper adjusts it, a questionable setup.
    Notice { message: String },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.origin, self.line)?;
        match &self.kind {
            WarningKind::UnknownKey { suggestion: None } => {
                write!(f, "unknown key {:?} ignored", self.key)
            }
            WarningKind::UnknownKey {
                suggestion: Some(known),
            } => write!(
                f,
                "unknown key {:?} ignored (keys are case-sensitive: did you mean {known:?}?)",
                self.key
            ),
            WarningKind::Unsupported => write!(
                f,
                "{} is a ZooKeeper setting meerkat does not support yet; ignored",
                self.key
            ),
            WarningKind::Duplicate { previous_line } => write!(
                f,
                "{} is set again (first on line {previous_line}); the last value wins",
                self.key
            ),
            WarningKind::Notice { message } => write!(f, "{}: {message}", self.key),
        }
    }
}

/// `value`, cut to [`VALUE_SHOWN_CHARS_MAX`] characters with a marker when it was longer.
fn shorten(value: &str) -> String {
    match value.char_indices().nth(VALUE_SHOWN_CHARS_MAX) {
        None => value.to_string(),
        Some((cut, _)) => format!("{}...", &value[..cut]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_value_message_names_file_line_key_and_value() {
        let error = ConfigError::invalid_value(
            "zoo.cfg",
            7,
            "tickTime",
            "abc",
            "expected a positive integer".to_string(),
        );
        assert_eq!(
            error.to_string(),
            r#"zoo.cfg:7: invalid value "abc" for tickTime: expected a positive integer"#
        );
        assert_eq!(error.line(), Some(7));
    }

    #[test]
    fn long_values_are_shortened_on_a_char_boundary() {
        let value = "é".repeat(500);
        let error = ConfigError::invalid_value("f", 1, "k", &value, "r".to_string());
        let ConfigError::InvalidValue { value: shown, .. } = error else {
            panic!("wrong variant");
        };
        assert_eq!(shown.chars().count(), VALUE_SHOWN_CHARS_MAX + 3);
        assert!(shown.ends_with("..."));
    }

    #[test]
    fn control_characters_in_values_are_escaped_in_messages() {
        let error = ConfigError::invalid_value("f", 1, "k", "a\u{1b}[31m", "r".to_string());
        assert!(error.to_string().contains(r#""a\u{1b}[31m""#));
    }

    #[test]
    fn warnings_display_their_location() {
        let warning = ConfigWarning {
            origin: "zoo.cfg".to_string(),
            line: 4,
            key: "ticktime".to_string(),
            kind: WarningKind::UnknownKey {
                suggestion: Some("tickTime"),
            },
        };
        assert_eq!(
            warning.to_string(),
            r#"zoo.cfg:4: unknown key "ticktime" ignored (keys are case-sensitive: did you mean "tickTime"?)"#
        );
        let duplicate = ConfigWarning {
            kind: WarningKind::Duplicate { previous_line: 2 },
            key: "tickTime".to_string(),
            ..warning
        };
        assert_eq!(
            duplicate.to_string(),
            "zoo.cfg:4: tickTime is set again (first on line 2); the last value wins"
        );
    }
}
