//! Splitting a command line into words and options, as zkCli does (quotes group words;
//! Commons CLI takes flags anywhere on the line).

/// Splits `line` at spaces; `"..."` and `'...'` group words and are removed.
pub fn split(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(current);
    }
    words
}

/// A command's words sorted into flags, flag values and positional arguments.
#[derive(Debug, Default)]
pub struct Parsed {
    flags: Vec<char>,
    values: Vec<(char, String)>,
    /// The command name first, then the other positional words.
    pub args: Vec<String>,
}

impl Parsed {
    pub fn has(&self, flag: char) -> bool {
        self.flags.contains(&flag)
    }

    /// Every option given, switches first, then those with values.
    pub fn given(&self) -> impl Iterator<Item = char> + '_ {
        self.flags
            .iter()
            .copied()
            .chain(self.values.iter().map(|(f, _)| *f))
    }

    pub fn value(&self, flag: char) -> Option<&str> {
        self.values
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses `words` (command name first): `flags` are single-letter switches, `valued` take the
/// next word as their value. Anything else starting with `-` is an unknown option.
pub fn parse(words: &[String], flags: &str, valued: &str) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        let is_option = word.len() == 2 && word.starts_with('-') && word != "--";
        if !is_option || parsed.args.is_empty() {
            parsed.args.push(word.clone());
            continue;
        }
        let flag = word.chars().nth(1).unwrap_or('-');
        if flags.contains(flag) {
            parsed.flags.push(flag);
        } else if valued.contains(flag) {
            let value = iter
                .next()
                .ok_or_else(|| {
                    // As zkCli prints a commons-cli ParseException.
                    format!(
                        "org.apache.commons.cli.MissingArgumentException: Missing argument for option: {flag}"
                    )
                })?;
            parsed.values.push((flag, value.clone()));
        } else if flag.is_ascii_digit() {
            // A negative number (e.g. data "-1") is a positional word.
            parsed.args.push(word.clone());
        } else {
            return Err(format!(
                "org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: {word}"
            ));
        }
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_group_words() {
        assert_eq!(
            split(r#"set /a "hello world" -v 1"#),
            vec!["set", "/a", "hello world", "-v", "1"]
        );
        assert_eq!(split("  ls   / "), vec!["ls", "/"]);
        assert_eq!(split("create /x ''"), vec!["create", "/x", ""]);
    }

    #[test]
    fn flags_anywhere() {
        let words = split("set /a data -s -v 3");
        let parsed = parse(&words, "s", "v").expect("valid");
        assert!(parsed.has('s'));
        assert_eq!(parsed.value('v'), Some("3"));
        assert_eq!(parsed.args, vec!["set", "/a", "data"]);
        assert!(parse(&split("ls -q /"), "swR", "").is_err());
    }
}
