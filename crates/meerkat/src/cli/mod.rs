//! `meerkat cli`: a zkCli-class shell on the meerkat client library.
//!
//! `meerkat cli [-server HOSTS] [-client-configuration FILE] [COMMAND ARGS...]`: with a command, runs it and exits with
//! zkCli's codes (0 done, 1 failed or misused, 127 unknown command, 2 bad invocation of
//! `meerkat cli` itself); without one, an interactive
//! shell with history (kept in `~/.meerkat_cli_history`) and tab completion of commands and
//! znode paths. Output, errors and watch events are printed as zkCli prints them.
//!
//! # Layout
//! * [`shell`]: the session and every command.
//! * [`format`]: zkCli's output formats.
//! * [`words`]: splitting lines and options.
//! * [`interactive`]: the line editor, history and completion.
//! * [`client_configuration`]: zkCli's `-client-configuration` file (TLS).
//! * [`reconfig_args`]: zkCli's `reconfig` options.

mod client_configuration;
mod format;
mod interactive;
mod reconfig_args;
mod shell;
mod words;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod zkcli_tests;
/// The reference ZooKeeper process harness of the client crate's tests.
#[cfg(test)]
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
#[path = "../../../client/tests/support/zookeeper.rs"]
mod zookeeper_support;

use shell::{Outcome, Shell, Sink, EXIT_INVALID};
use std::sync::{Arc, Mutex};

/// The TLS client a `-client-configuration` file asks for (its stores loaded now).
fn read_client_configuration(path: &str) -> Result<Option<client::tls::TlsClient>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let properties = server::config::read_properties(&text)
        .map_err(|(line, message)| format!("line {line}: {message}"))?;
    match client_configuration::tls(&properties)? {
        None => Ok(None),
        Some(config) => config.client().map(Some).map_err(|e| e.to_string()),
    }
}

/// Runs the cli with its arguments (after `cli`); returns the process exit code.
pub fn main(args: Vec<String>) -> i32 {
    let mut server = "127.0.0.1:2181".to_string();
    let mut tls = None;
    let mut read_only = false;
    let mut rest = args.as_slice();
    while let Some(first) = rest.first() {
        match first.as_str() {
            "-server" | "--server" => {
                let Some(hosts) = rest.get(1) else {
                    eprintln!("Error: no argument found for option -server");
                    return EXIT_INVALID;
                };
                server = hosts.clone();
                rest = &rest[2..];
            }
            "-client-configuration" => {
                let Some(path) = rest.get(1) else {
                    eprintln!("Error: no argument found for option -client-configuration");
                    return EXIT_INVALID;
                };
                match read_client_configuration(path) {
                    Ok(config) => tls = config,
                    Err(e) => {
                        eprintln!("Error: {path}: {e}");
                        return EXIT_INVALID;
                    }
                }
                rest = &rest[2..];
            }
            // zkCli's `-r`: a read-only server will do (readonlymode.enabled).
            "-r" => {
                read_only = true;
                rest = &rest[1..];
            }
            "-h" | "--help" | "-help" => {
                eprintln!(
                    "usage: meerkat cli [-server host:port[,host:port...][/chroot]] \
                     [-client-configuration FILE] [-r] [cmd args]"
                );
                return shell::EXIT_OK;
            }
            _ => break,
        }
    }
    let out: Sink = Arc::new(Mutex::new(std::io::stdout()));
    let err: Sink = Arc::new(Mutex::new(std::io::stderr()));
    let interactive_mode = rest.is_empty();
    let mut shell = match Shell::new(&server, out, err, interactive_mode) {
        Ok(shell) => shell,
        Err(e) => {
            eprintln!("cannot start: {e}");
            return shell::EXIT_FAILED;
        }
    };
    shell.tls = tls;
    shell.read_only = read_only;
    if interactive_mode {
        println!("Connecting to {server}");
        shell.connect(&server);
        return interactive::run(&mut shell);
    }
    if !shell.connect(&server) {
        return shell::EXIT_FAILED;
    }
    let code = match shell.execute(rest) {
        Outcome::Done(code) => code,
        Outcome::Quit => shell::EXIT_OK,
    };
    shell.shutdown();
    code
}
