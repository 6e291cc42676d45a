//! JAAS login configuration files, read as the JDK's `sun.security.provider.ConfigFile` reads
//! them, which is what ZooKeeper's server is given with
//! `-Djava.security.auth.login.config=PATH`:
//!
//! ```text
//! // comments like this, and /* like this */
//! Server {
//!     org.apache.zookeeper.server.auth.DigestLoginModule required
//!         user_super="adminsecret"
//!         user_bob="bobsecret";
//! };
//! Client { ... };
//! ```
//!
//! A file is sections (`Name { modules };`), each module a class name, a flag (`required`,
//! `requisite`, `sufficient`, `optional`, any case) and `key=value` options up to `;`. Names and
//! values are words (letters, digits, `$ _ - * .`, non-ASCII letters) or quoted strings (`"` or
//! `'`, with backslash escapes). A name given twice is an error, as in the JDK; an option given
//! twice keeps the last value. `${property}` expansion is not done (values are taken as
//! written).
//!
//! ZooKeeper's DIGEST-MD5 users are the options named `user_NAME` of every module of the
//! server's section ([`Section::digest_users`], `ServerCnxnFactory.getDigestMd5Credentials`).

use std::collections::BTreeMap;

/// The largest JAAS file read; real ones are a few hundred bytes.
pub const FILE_BYTES_MAX: usize = 1 << 20;

/// The login module ZooKeeper's DIGEST-MD5 users are given with.
pub const DIGEST_LOGIN_MODULE: &str = "org.apache.zookeeper.server.auth.DigestLoginModule";

/// Why a JAAS file was refused; `line` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    #[error("the file is larger than {FILE_BYTES_MAX} bytes")]
    TooLarge,
    #[error("line {line}: expected {expected}, found {found}")]
    Unexpected {
        line: usize,
        expected: &'static str,
        found: String,
    },
    #[error("line {line}: a quoted string is not closed")]
    UnterminatedQuote { line: usize },
    #[error("line {line}: a /* comment is not closed")]
    UnterminatedComment { line: usize },
    #[error("line {line}: invalid control flag {flag:?} (expected required, requisite, sufficient or optional)")]
    Flag { line: usize, flag: String },
    #[error("line {line}: the section {name:?} is given twice")]
    DuplicateSection { line: usize, name: String },
}

/// A login module's control flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

/// One `class flag options;` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    pub flag: Flag,
    pub options: BTreeMap<String, String>,
}

/// One `Name { ... };` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub modules: Vec<LoginModule>,
}

/// A whole file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JaasConfig {
    pub sections: Vec<Section>,
}

impl JaasConfig {
    /// The section named `name` (names are case-sensitive, as in the JDK).
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }
}

impl Section {
    /// DIGEST-MD5 users and their passwords: every `user_NAME="password"` option.
    pub fn digest_users(&self) -> BTreeMap<String, String> {
        let mut users = BTreeMap::new();
        for module in &self.modules {
            for (key, value) in &module.options {
                if let Some(user) = key.strip_prefix("user_") {
                    users.insert(user.to_string(), value.clone());
                }
            }
        }
        users
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A word or a quoted string.
    Text(String),
    Symbol(char),
}

impl Token {
    /// The token for an error message. A name or value is not quoted back: it may be a
    /// password, and error messages end up in logs.
    fn describe(&self) -> String {
        match self {
            Token::Text(_) => "a name or a quoted string".to_string(),
            Token::Symbol(c) => format!("'{c}'"),
        }
    }
}

/// Parses a JAAS file.
pub fn parse(text: &str) -> Result<JaasConfig, JaasError> {
    if text.len() > FILE_BYTES_MAX {
        return Err(JaasError::TooLarge);
    }
    let tokens = tokenize(text)?;
    let mut p = Parser { tokens, at: 0 };
    let mut config = JaasConfig::default();
    while p.peek().is_some() {
        let line = p.line();
        let name = p.text("a section name")?;
        if config.section(&name).is_some() {
            return Err(JaasError::DuplicateSection { line, name });
        }
        p.symbol('{', "'{'")?;
        let mut modules = Vec::new();
        while p.peek() != Some(&Token::Symbol('}')) {
            modules.push(p.module()?);
        }
        p.symbol('}', "'}'")?;
        p.symbol(';', "';' after '}'")?;
        config.sections.push(Section { name, modules });
    }
    Ok(config)
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(t, _)| t)
    }

    /// The line of the next token (or of the last one at the end).
    fn line(&self) -> usize {
        let i = self.at.min(self.tokens.len().saturating_sub(1));
        self.tokens.get(i).map_or(1, |(_, line)| *line)
    }

    fn unexpected(&self, expected: &'static str) -> JaasError {
        JaasError::Unexpected {
            line: self.line(),
            expected,
            found: self
                .peek()
                .map_or_else(|| "the end of the file".to_string(), Token::describe),
        }
    }

    fn text(&mut self, expected: &'static str) -> Result<String, JaasError> {
        match self.peek() {
            Some(Token::Text(t)) => {
                let t = t.clone();
                self.at += 1;
                Ok(t)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    fn symbol(&mut self, c: char, expected: &'static str) -> Result<(), JaasError> {
        if self.peek() == Some(&Token::Symbol(c)) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn module(&mut self) -> Result<LoginModule, JaasError> {
        let class = self.text("a login module class name or '}'")?;
        let line = self.line();
        let flag_word = self.text("a control flag")?;
        let flag = match flag_word.to_ascii_lowercase().as_str() {
            "required" => Flag::Required,
            "requisite" => Flag::Requisite,
            "sufficient" => Flag::Sufficient,
            "optional" => Flag::Optional,
            _ => {
                return Err(JaasError::Flag {
                    line,
                    flag: flag_word,
                })
            }
        };
        let mut options = BTreeMap::new();
        while self.peek() != Some(&Token::Symbol(';')) {
            let key = self.text("an option name or ';'")?;
            self.symbol('=', "'=' after an option name")?;
            let value = self.text("an option value")?;
            options.insert(key, value);
        }
        self.symbol(';', "';'")?;
        Ok(LoginModule {
            class,
            flag,
            options,
        })
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "$_-*.".contains(c) || (c as u32) >= 0xa0
}

/// Splits a file into tokens with their line numbers, dropping comments and white space.
fn tokenize(text: &str) -> Result<Vec<(Token, usize)>, JaasError> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1;
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        line += 1;
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let start = line;
                chars.next();
                let mut previous = ' ';
                loop {
                    let Some(c) = chars.next() else {
                        return Err(JaasError::UnterminatedComment { line: start });
                    };
                    if c == '\n' {
                        line += 1;
                    }
                    if previous == '*' && c == '/' {
                        break;
                    }
                    previous = c;
                }
            }
            '"' | '\'' => {
                let start = line;
                let value = quoted(&mut chars, c, &mut line)
                    .ok_or(JaasError::UnterminatedQuote { line: start })?;
                tokens.push((Token::Text(value), start));
            }
            '{' | '}' | ';' | '=' => tokens.push((Token::Symbol(c), line)),
            c if is_word_char(c) => {
                let mut word = String::from(c);
                while let Some(&next) = chars.peek() {
                    if !is_word_char(next) {
                        break;
                    }
                    word.push(next);
                    chars.next();
                }
                tokens.push((Token::Text(word), line));
            }
            other => {
                return Err(JaasError::Unexpected {
                    line,
                    expected: "a name, a quoted string, '{', '}', ';' or '='",
                    found: format!("'{other}'"),
                })
            }
        }
    }
    Ok(tokens)
}

/// The rest of a quoted string opened by `quote`; None when the file ends first.
fn quoted(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    quote: char,
    line: &mut usize,
) -> Option<String> {
    let mut value = String::new();
    loop {
        let c = chars.next()?;
        if c == quote {
            return Some(value);
        }
        if c == '\n' {
            *line += 1;
        }
        if c != '\\' {
            value.push(c);
            continue;
        }
        let escaped = chars.next()?;
        value.push(match escaped {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'b' => '\u{8}',
            'f' => '\u{c}',
            other => other,
        });
    }
}

#[cfg(test)]
mod tests;
