//! A standalone server's zoo.cfg as the process tests write it: its data under the test's
//! directory, a free client port on loopback, and the lines the test is about.

use anyhow::{Context, Result};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

/// A zoo.cfg written for one standalone server.
#[derive(Debug, Clone)]
pub struct StandaloneConfig {
    /// The file, to give `meerkat server` (or `meerkat data inspect`).
    pub path: PathBuf,
    /// Where its clients connect (127.0.0.1 and the port chosen).
    pub address: SocketAddr,
}

/// Writes `dir/zoo.cfg`: `dataDir` is `dir/data`, the client port a free one on 127.0.0.1,
/// followed by `extra` (whole lines, each ending in a newline).
pub fn write_config(dir: &Path, extra: &str) -> Result<StandaloneConfig> {
    assert!(
        extra.is_empty() || extra.ends_with('\n'),
        "extra zoo.cfg lines must end with a newline"
    );
    let port = ports::free_port()?;
    let path = dir.join("zoo.cfg");
    let text = format!(
        "dataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n{extra}",
        dir.join("data").display()
    );
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(StandaloneConfig {
        path,
        address: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_names_its_data_dir_port_and_extra_lines() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let config = write_config(dir.path(), "serverThreads=2\n")?;
        let text = std::fs::read_to_string(&config.path)?;
        let port = config.address.port();
        assert!(text.contains(&format!("clientPort={port}\n")), "{text}");
        assert!(text.contains("clientPortAddress=127.0.0.1\n"), "{text}");
        assert!(text.ends_with("serverThreads=2\n"), "{text}");
        let data = dir.path().join("data");
        assert!(text.starts_with(&format!("dataDir={}\n", data.display())));
        Ok(())
    }
}
