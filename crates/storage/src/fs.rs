//! The file operations persistence needs, behind a trait so that crash tests can run the same
//! code on a file system that loses what was not synced ([`crate::faulty_fs`]).
//!
//! Durability rules the callers follow: data is durable after [`WritableFile::sync_data`]; a
//! file's existence or new name is durable after [`FileSystem::sync_dir`] of its directory.

use std::fmt::Debug;
use std::io::{self, Read};
use std::path::Path;

pub trait FileSystem: Send + Sync + Debug {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Names of the regular files in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Opens for writing; `create` makes a new empty file (failing if it exists).
    fn open_write(&self, path: &Path, create: bool) -> io::Result<Box<dyn WritableFile>>;
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>>;
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        self.open_read(path)?.read_to_end(&mut buf)?;
        Ok(buf)
    }
    fn len(&self, path: &Path) -> io::Result<u64>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

pub trait WritableFile: Send {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Makes every write so far durable (fdatasync).
    fn sync_data(&mut self) -> io::Result<()>;
    /// Sets the length, cutting or zero-extending.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Reserves blocks up to `len` so later writes need no allocation (and an fdatasync no
    /// metadata update). Bytes in the reserved range read as zeros.
    fn preallocate(&mut self, len: u64) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

struct RealFile(std::fs::File);

impl WritableFile for RealFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.0.write_all_at(data, offset)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        use std::os::unix::io::AsRawFd;
        let len = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "length too large"))?;
        // SAFETY: plain syscall on a file descriptor this struct owns.
        let rc = unsafe { libc::posix_fallocate(self.0.as_raw_fd(), 0, len) };
        match rc {
            0 => Ok(()),
            // File systems without fallocate (tmpfs on old kernels, some FUSE): a sparse file
            // is still correct, only slower to sync.
            libc::EOPNOTSUPP | libc::EINVAL => {
                if self.0.metadata()?.len() < len as u64 {
                    self.0.set_len(len as u64)?;
                }
                Ok(())
            }
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

impl FileSystem for RealFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn open_write(&self, path: &Path, create: bool) -> io::Result<Box<dyn WritableFile>> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(create)
            .open(path)?;
        Ok(Box::new(RealFile(file)))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Read + Send>> {
        Ok(Box::new(std::fs::File::open(path)?))
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        Ok(std::fs::metadata(path)?.len())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
}
