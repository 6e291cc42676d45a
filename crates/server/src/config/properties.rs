//! The `java.util.Properties.load` syntax that ZooKeeper reads `zoo.cfg` with.
//!
//! * Lines end at `\n`, `\r\n` or `\r`. Leading blanks (space, tab, form feed) are skipped.
//! * A line whose first non-blank character is `#` or `!` is a comment. There are no
//!   end-of-line comments: in `clientPort=2181 # main` the value is `2181 # main`.
//! * A line ending in an odd number of backslashes continues on the next line, whose leading
//!   blanks are dropped; a blank line ends the continuation.
//! * The key ends at the first unescaped `=`, `:` or blank; then blanks and at most one `=` or
//!   `:` are skipped and the rest of the line is the value.
//! * Escapes: `\t \n \r \f`, `\uXXXX` (UTF-16, surrogate pairs combine), `\c` for any other
//!   `c` (so `\=`, `\:`, `\\`, `\#`).
//!
//! ZooKeeper then trims key and value with Java's `String.trim()` (every char <= U+0020), and so
//! do we. Entries are returned in file order with the line each one starts on; unlike a
//! `Properties` table, duplicates are kept, because the caller warns about them.

/// One `key=value` as written, after unescaping and trimming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RawEntry {
    pub(super) key: String,
    pub(super) value: String,
    /// 1-based line on which the (possibly continued) entry starts.
    pub(super) line: usize,
}

/// The text is not valid properties syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SyntaxError {
    pub(super) line: usize,
    pub(super) message: String,
}

/// Reads every entry of `text`, in order.
pub(super) fn read_entries(text: &str) -> Result<Vec<RawEntry>, SyntaxError> {
    let mut entries = Vec::new();
    // A logical line being continued: the line it started on and its text so far.
    let mut pending: Option<(usize, String)> = None;
    for (index, natural) in natural_lines(text).enumerate() {
        let line = index + 1;
        let content = natural.trim_start_matches(is_blank);
        let Some((start, mut logical)) = pending.take() else {
            if content.is_empty() || content.starts_with(['#', '!']) {
                continue;
            }
            match strip_continuation(content) {
                Some(head) => pending = Some((line, head.to_string())),
                None => entries.push(split_entry(line, content)?),
            }
            continue;
        };
        // Inside a continuation: a blank line ends it and a `#` is ordinary text.
        if content.is_empty() {
            entries.push(split_entry(start, &logical)?);
            continue;
        }
        match strip_continuation(content) {
            Some(head) => {
                logical.push_str(head);
                pending = Some((start, logical));
            }
            None => {
                logical.push_str(content);
                entries.push(split_entry(start, &logical)?);
            }
        }
    }
    // A backslash on the very last line continues into nothing; Java drops it.
    if let Some((start, logical)) = pending {
        entries.push(split_entry(start, &logical)?);
    }
    Ok(entries)
}

/// Java's `String.trim()`: strips every char up to and including U+0020 at both ends.
pub(super) fn java_trim(text: &str) -> &str {
    text.trim_matches(|c: char| c <= ' ')
}

/// Blanks as `Properties` sees them; other control characters are ordinary text.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// Splits on `\n`, `\r\n` and a lone `\r`, keeping line numbers exact.
fn natural_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
        .flat_map(|piece| piece.strip_suffix('\r').unwrap_or(piece).split('\r'))
}

/// `Some(line without its final backslash)` when the line ends in an odd number of them.
fn strip_continuation(content: &str) -> Option<&str> {
    let backslashes = content.bytes().rev().take_while(|&b| b == b'\\').count();
    if backslashes % 2 == 1 {
        Some(&content[..content.len() - 1])
    } else {
        None
    }
}

/// Splits a logical line into key and value as `Properties.load` does, then unescapes and trims.
fn split_entry(line: usize, logical: &str) -> Result<RawEntry, SyntaxError> {
    let bytes = logical.as_bytes();
    let mut key_end = bytes.len();
    let mut value_start = bytes.len();
    let mut has_separator = false;
    let mut escaped = false;
    // Every byte compared here is ASCII, so the indices are char boundaries.
    for (index, &byte) in bytes.iter().enumerate() {
        if !escaped && (byte == b'=' || byte == b':') {
            (key_end, value_start, has_separator) = (index, index + 1, true);
            break;
        }
        if !escaped && is_blank(char::from(byte)) {
            (key_end, value_start) = (index, index + 1);
            break;
        }
        escaped = byte == b'\\' && !escaped;
    }
    let mut value = &logical[value_start..];
    loop {
        match value.as_bytes().first() {
            Some(&byte) if is_blank(char::from(byte)) => value = &value[1..],
            Some(b'=' | b':') if !has_separator => {
                has_separator = true;
                value = &value[1..];
            }
            _ => break,
        }
    }
    let unescape_at = |text: &str| unescape(text).map_err(|message| SyntaxError { line, message });
    Ok(RawEntry {
        key: java_trim(&unescape_at(&logical[..key_end])?).to_string(),
        value: java_trim(&unescape_at(value)?).to_string(),
        line,
    })
}

/// Resolves backslash escapes. Works in UTF-16 so `\uD83D\uDE00` pairs combine; a lone
/// surrogate becomes U+FFFD instead of failing.
fn unescape(raw: &str) -> Result<String, String> {
    if !raw.contains('\\') {
        return Ok(raw.to_string());
    }
    let mut units: Vec<u16> = Vec::with_capacity(raw.len());
    let mut buffer = [0u16; 2];
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        let resolved = if c == '\\' {
            match chars.next() {
                // A lone trailing backslash cannot escape anything; Java drops it.
                None => break,
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    units.push(parse_hex_unit(&hex)?);
                    continue;
                }
                Some('t') => '\t',
                Some('n') => '\n',
                Some('r') => '\r',
                Some('f') => '\u{c}',
                Some(other) => other,
            }
        } else {
            c
        };
        units.extend_from_slice(resolved.encode_utf16(&mut buffer));
    }
    Ok(String::from_utf16_lossy(&units))
}

/// The four hex digits of a `\uXXXX` escape.
fn parse_hex_unit(hex: &str) -> Result<u16, String> {
    let well_formed = hex.len() == 4 && hex.bytes().all(|b| b.is_ascii_hexdigit());
    let unit = if well_formed {
        u16::from_str_radix(hex, 16).ok()
    } else {
        None
    };
    unit.ok_or_else(|| format!("malformed \\uXXXX escape \"\\u{hex}\": expected 4 hex digits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, String, usize)> {
        read_entries(text)
            .expect("valid properties")
            .into_iter()
            .map(|e| (e.key, e.value, e.line))
            .collect()
    }

    fn pair(key: &str, value: &str, line: usize) -> (String, String, usize) {
        (key.to_string(), value.to_string(), line)
    }

    #[test]
    fn separators_equals_colon_and_blank() {
        let text = "a=1\nb: 2\nc 3\nd\t=\t4\ne = = 5\nf:=6\n";
        assert_eq!(
            pairs(text),
            vec![
                pair("a", "1", 1),
                pair("b", "2", 2),
                pair("c", "3", 3),
                pair("d", "4", 4),
                pair("e", "= 5", 5),
                pair("f", "=6", 6),
            ]
        );
    }

    #[test]
    fn comments_blank_lines_and_whitespace() {
        let text = "# comment\n  ! also comment\n\n   \t\n  tickTime = 2000   \nclientPort=2181 # not a comment\n";
        assert_eq!(
            pairs(text),
            vec![
                pair("tickTime", "2000", 5),
                pair("clientPort", "2181 # not a comment", 6),
            ]
        );
    }

    #[test]
    fn key_without_value_and_empty_key() {
        assert_eq!(
            pairs("lonely\n=value\nempty=\n"),
            vec![
                pair("lonely", "", 1),
                pair("", "value", 2),
                pair("empty", "", 3)
            ]
        );
    }

    #[test]
    fn line_endings_crlf_and_cr_keep_line_numbers() {
        assert_eq!(
            pairs("a=1\r\nb=2\rc=3\n\r\nd=4"),
            vec![
                pair("a", "1", 1),
                pair("b", "2", 2),
                pair("c", "3", 3),
                pair("d", "4", 5)
            ]
        );
    }

    #[test]
    fn continuation_lines_join_and_report_the_first_line() {
        let text = "4lw.commands.whitelist=ruok, \\\n    srvr, \\\n    # mntr\nnext=1\n";
        assert_eq!(
            pairs(text),
            vec![
                pair("4lw.commands.whitelist", "ruok, srvr, # mntr", 1),
                pair("next", "1", 4),
            ]
        );
    }

    #[test]
    fn continuation_ended_by_blank_line_or_eof() {
        assert_eq!(
            pairs("a=1\\\n\nb=2\\"),
            vec![pair("a", "1", 1), pair("b", "2", 3)]
        );
    }

    #[test]
    fn even_backslashes_do_not_continue() {
        assert_eq!(
            pairs("a=x\\\\\nb=y"),
            vec![pair("a", "x\\", 1), pair("b", "y", 2)]
        );
    }

    #[test]
    fn comment_lines_do_not_continue() {
        assert_eq!(pairs("# c \\\na=1"), vec![pair("a", "1", 2)]);
    }

    #[test]
    fn escapes_in_keys_and_values() {
        let text = r"we\=ird\:key\ x=tab\there\u0041\q\\";
        assert_eq!(
            pairs(text),
            vec![pair("we=ird:key x", "tab\there\u{41}q\\", 1)]
        );
    }

    #[test]
    fn unicode_escapes_combine_surrogates_and_tolerate_lone_ones() {
        assert_eq!(pairs(r"k=\uD83D\uDE00"), vec![pair("k", "\u{1F600}", 1)]);
        assert_eq!(pairs(r"k=\uD800x"), vec![pair("k", "\u{FFFD}x", 1)]);
    }

    #[test]
    fn malformed_unicode_escape_is_a_syntax_error_with_line() {
        let error = read_entries("a=1\nb=\\u12G4\n").expect_err("malformed");
        assert_eq!(error.line, 2);
        assert!(error.message.contains("malformed"), "{}", error.message);
        assert!(read_entries("b=\\u12").is_err());
        assert!(read_entries("b=\\u12é4").is_err());
    }

    #[test]
    fn java_trim_removes_control_characters() {
        assert_eq!(
            pairs("k=\u{1}value\u{7f}\u{0}"),
            vec![pair("k", "value\u{7f}", 1)]
        );
    }
}
