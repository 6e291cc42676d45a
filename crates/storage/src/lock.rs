//! One server per data dir. Two processes appending to the same log would interleave records
//! and destroy it, so the first one takes an exclusive lock (`flock` on a `LOCK` file, released
//! by the kernel when the process dies, even by SIGKILL) and a second one refuses to start.

use std::fs::{File, OpenOptions};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is locked by another running server (pid {holder}); one data dir serves one server"
    )]
    Held { path: PathBuf, holder: String },
}

/// Held locks; dropping releases them.
#[derive(Debug)]
pub struct DataDirLock {
    _files: Vec<File>,
}

impl DataDirLock {
    /// Locks each directory (created if missing); the same directory twice is locked once.
    pub fn acquire_all(dirs: &[&Path]) -> Result<DataDirLock, LockError> {
        let mut files = Vec::new();
        let mut seen: Vec<&Path> = Vec::new();
        for dir in dirs {
            if seen.contains(dir) {
                continue;
            }
            seen.push(dir);
            files.push(lock_one(dir)?);
        }
        Ok(DataDirLock { _files: files })
    }
}

fn lock_one(dir: &Path) -> Result<File, LockError> {
    let path = dir.join("LOCK");
    let io = |source| LockError::Io {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io)?;
    // SAFETY: plain syscall on a descriptor owned by `file`.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(LockError::Held {
                path,
                holder: holder.trim().to_string(),
            });
        }
        return Err(io(err));
    }
    use std::io::Write;
    file.set_len(0).map_err(io)?;
    write!(file, "{}", std::process::id()).map_err(io)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_dir_is_refused_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("meerkat-lock-test-{}", std::process::id()));
        let first = DataDirLock::acquire_all(&[&dir, &dir]).expect("first lock");
        match DataDirLock::acquire_all(&[&dir]) {
            Err(LockError::Held { holder, .. }) => {
                assert_eq!(holder, std::process::id().to_string())
            }
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        DataDirLock::acquire_all(&[&dir]).expect("free again");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
