//! RFC 2831 §7.1 directive lists: `name=value` pairs separated by commas, where a value is a
//! token or a quoted string (`"..."` with `\` escaping the next character). Empty list elements
//! and linear white space around elements are allowed, as the `#rule` of RFC 2616 §2.1 says.
//!
//! Both sides of a DIGEST-MD5 exchange speak this; the server parses the client's
//! `digest-response` with [`parse`] and writes its challenge with [`quote`].

/// At most this many directives in one list. A `digest-response` has at most 13 kinds
/// (`DigestMD5Server.DIRECTIVE_KEY`); anything much longer is not a client speaking DIGEST-MD5.
pub const DIRECTIVES_MAX: usize = 32;

/// Why a directive list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirectiveError {
    #[error("the token is not UTF-8 text")]
    NotText,
    #[error("expected a directive name at byte {0}")]
    MissingName(usize),
    #[error("expected '=' after directive {0:?}")]
    MissingEquals(String),
    #[error("the quoted value of directive {0:?} is not closed")]
    UnterminatedQuote(String),
    #[error("expected ',' after the value of directive {0:?}")]
    MissingComma(String),
    #[error("more than {DIRECTIVES_MAX} directives")]
    TooMany,
}

/// One `name=value`; the name lower-cased (names are case-insensitive), the value unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub name: String,
    pub value: String,
    /// Whether the value was a quoted string.
    pub quoted: bool,
}

/// Parses a directive list.
pub fn parse(token: &[u8]) -> Result<Vec<Directive>, DirectiveError> {
    let text = std::str::from_utf8(token).map_err(|_| DirectiveError::NotText)?;
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        // Empty elements and white space before the next directive.
        while i < bytes.len() && (bytes[i] == b',' || is_lws(bytes[i])) {
            i += 1;
        }
        if i == bytes.len() {
            return Ok(out);
        }
        if out.len() == DIRECTIVES_MAX {
            return Err(DirectiveError::TooMany);
        }
        let start = i;
        while i < bytes.len() && is_token_byte(bytes[i]) {
            i += 1;
        }
        if i == start {
            return Err(DirectiveError::MissingName(start));
        }
        let name = text[start..i].to_ascii_lowercase();
        i = skip_lws(bytes, i);
        if bytes.get(i) != Some(&b'=') {
            return Err(DirectiveError::MissingEquals(name));
        }
        i = skip_lws(bytes, i + 1);
        let (value, quoted, next) = if bytes.get(i) == Some(&b'"') {
            let (value, next) = quoted_value(text, i + 1)
                .ok_or_else(|| DirectiveError::UnterminatedQuote(name.clone()))?;
            (value, true, next)
        } else {
            let begin = i;
            while i < bytes.len() && is_token_byte(bytes[i]) {
                i += 1;
            }
            (text[begin..i].to_string(), false, i)
        };
        i = skip_lws(bytes, next);
        if i < bytes.len() && bytes[i] != b',' {
            return Err(DirectiveError::MissingComma(name));
        }
        out.push(Directive {
            name,
            value,
            quoted,
        });
    }
}

/// The value of a quoted string whose opening quote is just before `from`, and the index after
/// its closing quote; None when it never closes.
fn quoted_value(text: &str, from: usize) -> Option<(String, usize)> {
    let mut value = String::new();
    let mut chars = text[from..].char_indices();
    while let Some((offset, c)) = chars.next() {
        match c {
            '"' => return Some((value, from + offset + 1)),
            '\\' => value.push(chars.next()?.1),
            _ => value.push(c),
        }
    }
    None
}

/// `value` as a quoted string: `"` and `\` escaped with a backslash.
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

fn skip_lws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && is_lws(bytes[i]) {
        i += 1;
    }
    i
}

fn is_lws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// RFC 2616 `token` characters: printable ASCII but separators.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(token: &str) -> Vec<(String, String)> {
        parse(token.as_bytes())
            .expect("parses")
            .into_iter()
            .map(|d| (d.name, d.value))
            .collect()
    }

    #[test]
    fn tokens_quoted_strings_and_escapes() {
        let got = pairs(
            r#"username="chris",realm="elwood.innosoft.com", nc=00000001 ,qop=auth,x="a\"b\\c,d""#,
        );
        let want = [
            ("username", "chris"),
            ("realm", "elwood.innosoft.com"),
            ("nc", "00000001"),
            ("qop", "auth"),
            ("x", "a\"b\\c,d"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn names_are_case_insensitive_and_empty_elements_skipped() {
        assert_eq!(
            pairs(",, Nonce=\"x\" ,,\r\n QOP = auth,"),
            vec![
                ("nonce".to_string(), "x".to_string()),
                ("qop".to_string(), "auth".to_string())
            ]
        );
        assert_eq!(pairs(""), vec![]);
    }

    #[test]
    fn malformed_lists_are_typed_errors() {
        let cases: &[(&[u8], DirectiveError)] = &[
            (b"\xff\xfe", DirectiveError::NotText),
            (b"=x", DirectiveError::MissingName(0)),
            (b"a", DirectiveError::MissingEquals("a".into())),
            (b"a=\"open", DirectiveError::UnterminatedQuote("a".into())),
            (b"a=\"x\\", DirectiveError::UnterminatedQuote("a".into())),
            (b"a=\"x\" b=y", DirectiveError::MissingComma("a".into())),
            (b"a=b c", DirectiveError::MissingComma("a".into())),
        ];
        for (token, want) in cases {
            assert_eq!(parse(token).as_ref(), Err(want), "{token:?}");
        }
        let many = "a=b,".repeat(DIRECTIVES_MAX + 1);
        assert_eq!(parse(many.as_bytes()), Err(DirectiveError::TooMany));
    }

    #[test]
    fn quote_round_trips() {
        let value = "we\"ird\\ realm, é";
        let list = format!("r={}", quote(value));
        assert_eq!(pairs(&list), vec![("r".to_string(), value.to_string())]);
    }
}
