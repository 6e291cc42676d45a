//! `4lw.commands.whitelist`: which four-letter words the server answers.
//!
//! ZooKeeper 3.9 (`FourLetterCommands.isEnabled`) splits the list on commas, trims each item,
//! skips empty ones, treats `*` as "every command" and always adds `srvr` because `zkServer.sh`
//! needs it. Matching is exact and case-sensitive, so `RUOK` does not enable `ruok`. meerkat does
//! the same and, as a convenience, also splits on whitespace (ZooKeeper would read `ruok srvr`
//! as one unknown command).

use std::collections::BTreeSet;
use std::fmt;

/// The command every whitelist contains.
const ALWAYS_ALLOWED: &str = "srvr";

/// The set of enabled four-letter words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FourLetterWhitelist {
    all: bool,
    commands: BTreeSet<String>,
}

impl FourLetterWhitelist {
    /// Parses a whitelist value the way ZooKeeper does (see the module documentation).
    pub fn parse(list: &str) -> Self {
        let items = list
            .split(|c: char| c == ',' || c.is_whitespace())
            .map(|item| item.trim())
            .filter(|item| !item.is_empty());
        let mut whitelist = Self::default();
        for item in items {
            if item == "*" {
                // Like ZooKeeper, `*` anywhere in the list means every command.
                return Self::all();
            } else {
                whitelist.commands.insert(item.to_string());
            }
        }
        whitelist
    }

    /// Every command enabled, as with `4lw.commands.whitelist=*`.
    pub fn all() -> Self {
        Self {
            all: true,
            ..Self::default()
        }
    }

    /// Whether `cmd` may run. With `*` every name is allowed; whether it is a real command is
    /// for the caller to decide.
    pub fn allows(&self, cmd: &str) -> bool {
        self.all || self.commands.contains(cmd)
    }

    /// Enables `cmd` too (`isro` in read-only mode, as ZooKeeper adds it).
    pub fn allow(&mut self, cmd: &str) {
        if !self.all {
            self.commands.insert(cmd.to_string());
        }
    }

    /// True when the list was `*`.
    pub fn allows_all(&self) -> bool {
        self.all
    }

    /// The commands listed by name (always including `srvr`), sorted.
    pub fn commands(&self) -> impl Iterator<Item = &str> {
        self.commands.iter().map(String::as_str)
    }
}

impl Default for FourLetterWhitelist {
    /// ZooKeeper's default: `srvr` only.
    fn default() -> Self {
        Self {
            all: false,
            commands: BTreeSet::from([ALWAYS_ALLOWED.to_string()]),
        }
    }
}

impl fmt::Display for FourLetterWhitelist {
    /// `*`, or the commands comma-separated, in the syntax the key accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.all {
            return f.write_str("*");
        }
        let names: Vec<&str> = self.commands().collect();
        f.write_str(&names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_allows_only_srvr() {
        let whitelist = FourLetterWhitelist::default();
        assert!(whitelist.allows("srvr"));
        assert!(!whitelist.allows("ruok"));
        assert!(!whitelist.allows("isro"));
        assert!(!whitelist.allows_all());
        assert_eq!(whitelist.to_string(), "srvr");
    }

    #[test]
    fn star_allows_everything() {
        let whitelist = FourLetterWhitelist::parse("*");
        assert!(whitelist.allows("mntr"));
        assert!(whitelist.allows("wchp"));
        assert!(whitelist.allows_all());
        assert_eq!(whitelist.to_string(), "*");
        assert_eq!(
            FourLetterWhitelist::parse(" ruok , * "),
            FourLetterWhitelist::all()
        );
    }

    #[test]
    fn list_is_trimmed_and_srvr_always_added() {
        let whitelist = FourLetterWhitelist::parse("ruok, srvr ,mntr");
        for cmd in ["ruok", "srvr", "mntr"] {
            assert!(whitelist.allows(cmd), "{cmd}");
        }
        assert!(!whitelist.allows("stat"));
        assert_eq!(whitelist.to_string(), "mntr,ruok,srvr");
        let without_srvr = FourLetterWhitelist::parse("stat,ruok,conf,isro");
        assert!(without_srvr.allows("srvr"));
        assert!(without_srvr.allows("isro"));
    }

    #[test]
    fn empty_list_and_empty_items_mean_srvr_only() {
        assert_eq!(
            FourLetterWhitelist::parse(""),
            FourLetterWhitelist::default()
        );
        assert_eq!(
            FourLetterWhitelist::parse(" , ,, "),
            FourLetterWhitelist::default()
        );
    }

    #[test]
    fn whitespace_also_separates() {
        let whitelist = FourLetterWhitelist::parse("ruok mntr\tstat");
        assert!(whitelist.allows("ruok"));
        assert!(whitelist.allows("mntr"));
        assert!(whitelist.allows("stat"));
    }

    #[test]
    fn matching_is_case_sensitive_as_in_zookeeper() {
        let whitelist = FourLetterWhitelist::parse("RUOK");
        assert!(!whitelist.allows("ruok"));
        assert!(whitelist.allows("RUOK"));
    }

    #[test]
    fn allow_adds_a_command_once_and_keeps_star() {
        let mut whitelist = FourLetterWhitelist::default();
        assert!(!whitelist.allows("isro"));
        whitelist.allow("isro");
        whitelist.allow("isro");
        assert!(whitelist.allows("isro") && whitelist.allows("srvr"));
        assert_eq!(whitelist.commands().count(), 2);
        let mut all = FourLetterWhitelist::all();
        all.allow("isro");
        assert!(all.allows_all() && all.allows("isro"));
    }
}
