//! The interactive shell: a line editor with history and completion of command names and
//! znode paths (the children of the path typed so far, asked of the server).

use super::shell::{Outcome, Shell, COMMANDS, EXIT_OK};
use client::Client;
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Context, Editor, Helper};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The most lines kept in the history file.
const HISTORY_LEN_MAX: usize = 1000;

struct Completion {
    client: Arc<Mutex<Option<Client>>>,
    runtime: tokio::runtime::Handle,
}

impl Helper for Completion {}
impl Hinter for Completion {
    type Hint = String;
}
impl Highlighter for Completion {}
impl Validator for Completion {}

impl Completer for Completion {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let before = &line[..pos];
        let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
        let word = &before[start..];
        if start == 0 {
            let names = COMMANDS
                .iter()
                .map(|(name, _)| name.to_string())
                .filter(|name| name.starts_with(word))
                .collect();
            return Ok((start, names));
        }
        if !word.starts_with('/') {
            return Ok((start, Vec::new()));
        }
        let (parent, prefix) = match word.rfind('/') {
            Some(0) => ("/", &word[1..]),
            Some(i) => (&word[..i], &word[i + 1..]),
            None => return Ok((start, Vec::new())),
        };
        let client = self.client.lock().ok().and_then(|c| c.clone());
        let Some(client) = client else {
            return Ok((start, Vec::new()));
        };
        let children = self
            .runtime
            .block_on(client.get_children(parent))
            .map(|(c, _)| c)
            .unwrap_or_default();
        let mut candidates: Vec<String> = children
            .into_iter()
            .filter(|c| c.starts_with(prefix))
            .map(|c| client::path::join(parent, &c))
            .collect();
        candidates.sort();
        Ok((start, candidates))
    }
}

fn history_file() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".meerkat_cli_history"))
}

/// Reads and runs lines until `quit` or end of input; returns the exit code.
pub fn run(shell: &mut Shell) -> i32 {
    let config = rustyline::Config::builder()
        .max_history_size(HISTORY_LEN_MAX)
        .map(|b| b.auto_add_history(true).build())
        .unwrap_or_default();
    let mut editor: Editor<Completion, DefaultHistory> = match Editor::with_config(config) {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("cannot start the line editor: {e}");
            return super::shell::EXIT_FAILED;
        }
    };
    let client_slot = Arc::new(Mutex::new(shell.client().cloned()));
    editor.set_helper(Some(Completion {
        client: client_slot.clone(),
        runtime: shell.runtime().handle().clone(),
    }));
    let history = history_file();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    loop {
        match editor.readline(&shell.prompt()) {
            Ok(line) => {
                let outcome = shell.execute_line(&line);
                if let Ok(mut slot) = client_slot.lock() {
                    *slot = shell.client().cloned();
                }
                if outcome == Outcome::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("{e}");
                break;
            }
        }
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    shell.shutdown();
    EXIT_OK
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn complete(helper: &Completion, line: &str) -> (usize, Vec<String>) {
        let history = DefaultHistory::new();
        let ctx = Context::new(&history);
        helper.complete(line, line.len(), &ctx).unwrap()
    }

    #[test]
    fn completes_commands_and_znode_paths() {
        let mut f = crate::cli::tests::Fixture::new();
        f.run("create /app");
        f.run("create /app/alpha");
        f.run("create /app/beta");
        f.run("create /apple");
        let helper = Completion {
            client: Arc::new(Mutex::new(f.shell.client().cloned())),
            runtime: f.shell.runtime().handle().clone(),
        };
        let (start, names) = complete(&helper, "getA");
        assert_eq!(start, 0);
        assert_eq!(names, vec!["getAcl", "getAllChildrenNumber"]);
        assert_eq!(
            complete(&helper, "ls /ap"),
            (3, vec!["/app".into(), "/apple".into()])
        );
        assert_eq!(
            complete(&helper, "get -s /app/a"),
            (7, vec!["/app/alpha".into()])
        );
        assert_eq!(complete(&helper, "ls /nothing/x").1, Vec::<String>::new());
        assert_eq!(complete(&helper, "ls relative").1, Vec::<String>::new());
    }
}
