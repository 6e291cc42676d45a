//! zkCli's `reconfig` command line (`ReconfigCommand.parse`): `-add`, `-remove` (incremental),
//! or `-members` / `-file` (a whole new membership), `-v` (the configuration version to start
//! from, in hex) and `-s` (print the Stat). Its options are words, not letters, so they are
//! read here rather than by [`super::words`].

/// A reconfiguration as the client library sends it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReconfigArgs {
    pub joining: Option<String>,
    pub leaving: Option<String>,
    pub members: Option<String>,
    pub from_config: i64,
    pub print_stat: bool,
}

/// Reads the words after `reconfig`; the error is zkCli's message.
pub fn parse(words: &[String], usage: &str) -> Result<ReconfigArgs, String> {
    let mut args = ReconfigArgs {
        from_config: -1,
        ..ReconfigArgs::default()
    };
    let mut file = None;
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        let mut value = || rest.next().cloned().ok_or_else(|| usage.to_string());
        match word.as_str() {
            "-s" => args.print_stat = true,
            "-add" => args.joining = Some(value()?.to_lowercase()),
            "-remove" => args.leaving = Some(value()?.to_lowercase()),
            "-members" => args.members = Some(value()?.to_lowercase()),
            "-file" => file = Some(value()?),
            "-v" => {
                let v = value()?;
                args.from_config = i64::from_str_radix(&v, 16).map_err(|_| {
                    "-v must be followed by a long (configuration version)".to_string()
                })?;
            }
            _ => return Err(usage.to_string()),
        }
    }
    let whole = file.is_some() || args.members.is_some();
    let incremental = args.joining.is_some() || args.leaving.is_some();
    if !whole && !incremental {
        return Err(usage.to_string());
    }
    if whole && incremental {
        return Err("Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)".to_string());
    }
    if let Some(path) = file {
        if args.members.is_some() {
            return Err(
                "Can't use -file and -members together (conflicting non-incremental modes)"
                    .to_string(),
            );
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("Error processing {path}{e}"))?;
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| l.starts_with("server."))
            .collect();
        args.members = Some(lines.join("\n"));
    }
    Ok(args)
}

/// zkCli's `config -c`: the version and the client addresses (`ConfigUtils.getClientConfigStr`).
pub fn client_config(config: &str) -> String {
    let mut version = String::new();
    let mut clients = Vec::new();
    for line in config.lines() {
        if let Some(v) = line.strip_prefix("version=") {
            version = v.trim().to_string();
        } else if let Some((_, client)) = line.split_once(';') {
            clients.push(client.trim().to_string());
        }
    }
    format!("{version} {}", clients.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn reads_zkclis_forms() {
        let a = parse(&words("-remove 3 -v 100000002 -s"), "u").expect("parses");
        assert_eq!(a.leaving.as_deref(), Some("3"));
        assert_eq!(a.from_config, 0x1_0000_0002);
        assert!(a.print_stat);
        let a = parse(&words("-add server.4=h:1:2;3"), "u").expect("parses");
        assert_eq!(a.joining.as_deref(), Some("server.4=h:1:2;3"));
        assert_eq!(a.from_config, -1);
        assert_eq!(parse(&words(""), "usage"), Err("usage".into()));
        assert!(parse(&words("-members server.1=h:1:2;3 -remove 2"), "u")
            .expect_err("mixed")
            .contains("mixing"));
        assert!(parse(&words("-remove 2 -v zz"), "u")
            .expect_err("bad version")
            .contains("-v must be followed"));
    }

    #[test]
    fn the_client_string_lists_client_addresses() {
        let config = "server.1=h:1:2:participant;0.0.0.0:2181\nserver.2=h:3:4:participant\nversion=100000001";
        assert_eq!(client_config(config), "100000001 0.0.0.0:2181");
    }
}
