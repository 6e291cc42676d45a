//! An in-memory [`FileSystem`] that loses what was not made durable, for crash tests.
//!
//! It keeps, per file, the bytes a reader sees now and the bytes that would survive a crash
//! (those as of the last `sync_data`), and, per directory, the names as of the last
//! `sync_dir`. [`FaultyFs::crash_after`] makes every operation after the n-th mutating one fail
//! (the process "died" there); [`FaultyFs::crash_image`] is the disk a rebooted machine finds:
//! durable bytes, plus, if asked, a torn write (a prefix of the unsynced bytes reached the
//! disk, as with sequential sector write-back). Directories themselves are durable at once.

use crate::fs::{FileSystem, WritableFile};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Debug, Default, Clone)]
struct Inode {
    current: Vec<u8>,
    durable: Vec<u8>,
}

#[derive(Debug, Default, Clone)]
struct State {
    inodes: Vec<Inode>,
    names: BTreeMap<PathBuf, usize>,
    durable_names: BTreeMap<PathBuf, usize>,
    dirs: BTreeSet<PathBuf>,
    /// Mutating operations so far.
    ops: u64,
    crash_after: Option<u64>,
    crashed: bool,
}

impl State {
    /// Counts a mutating operation; fails it if the simulated crash has happened.
    fn mutate(&mut self) -> io::Result<()> {
        if self.crashed {
            return Err(crashed());
        }
        self.ops += 1;
        if self.crash_after.is_some_and(|n| self.ops > n) {
            self.crashed = true;
            return Err(crashed());
        }
        Ok(())
    }

    fn check(&self) -> io::Result<()> {
        if self.crashed {
            Err(crashed())
        } else {
            Ok(())
        }
    }
}

fn crashed() -> io::Error {
    io::Error::other("simulated crash")
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

/// How a crash treats bytes written but not synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tear {
    /// All lost.
    None,
    /// A prefix of them survives; the seed picks how long, per file.
    Prefix(u64),
}

#[derive(Debug, Default, Clone)]
pub struct FaultyFs {
    state: Arc<Mutex<State>>,
}

impl FaultyFs {
    pub fn new() -> FaultyFs {
        FaultyFs::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in another test thread must not hide this one's result.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every mutating operation after the first `n` fails, as if the process died there.
    pub fn crash_after(&self, n: u64) {
        self.lock().crash_after = Some(n);
    }

    /// Mutating operations performed so far.
    pub fn ops(&self) -> u64 {
        self.lock().ops
    }

    pub fn has_crashed(&self) -> bool {
        self.lock().crashed
    }

    /// The disk as a machine finds it after the crash (or after a power loss now).
    pub fn crash_image(&self, tear: Tear) -> FaultyFs {
        let state = self.lock();
        let mut image = State {
            dirs: state.dirs.clone(),
            ..State::default()
        };
        let mut seed = match tear {
            Tear::None => 0,
            Tear::Prefix(seed) => seed | 1,
        };
        for (path, &ino) in &state.durable_names {
            let inode = &state.inodes[ino];
            let mut bytes = inode.durable.clone();
            if seed != 0 && inode.current != inode.durable {
                let first_diff = inode
                    .current
                    .iter()
                    .zip(&inode.durable)
                    .position(|(a, b)| a != b)
                    .unwrap_or(inode.current.len().min(inode.durable.len()));
                // The cut falls among the bytes that changed: past them a preallocated file
                // holds zeros either way, so a cut there would leave every write whole.
                let changed_end = (first_diff..inode.current.len())
                    .rev()
                    .find(|&i| inode.current[i] != inode.durable.get(i).copied().unwrap_or(0))
                    .map_or(first_diff, |i| i + 1);
                seed = xorshift(seed);
                let span = (changed_end - first_diff) as u64;
                let cut = first_diff + (seed % (span + 1)) as usize;
                if bytes.len() < cut {
                    bytes.resize(cut, 0);
                }
                bytes[first_diff..cut].copy_from_slice(&inode.current[first_diff..cut]);
            }
            image.inodes.push(Inode {
                current: bytes.clone(),
                durable: bytes,
            });
            let new_ino = image.inodes.len() - 1;
            image.names.insert(path.clone(), new_ino);
            image.durable_names.insert(path.clone(), new_ino);
        }
        FaultyFs {
            state: Arc::new(Mutex::new(image)),
        }
    }

    /// Flips one bit of a file, in what is durable and what is read (media damage).
    pub fn flip_bit(&self, path: &Path, offset: usize, bit: u8) -> io::Result<()> {
        let mut state = self.lock();
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        let inode = &mut state.inodes[ino];
        for bytes in [&mut inode.current, &mut inode.durable] {
            if let Some(b) = bytes.get_mut(offset) {
                *b ^= 1 << (bit % 8);
            }
        }
        Ok(())
    }

    /// Cuts a file short, durably (e.g. a disk that lost the end of a file).
    pub fn truncate(&self, path: &Path, len: usize) -> io::Result<()> {
        let mut state = self.lock();
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        let inode = &mut state.inodes[ino];
        inode.current.truncate(len);
        inode.durable.truncate(len);
        Ok(())
    }

    /// The bytes a reader sees now.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        let state = self.lock();
        state
            .names
            .get(path)
            .map(|&ino| state.inodes[ino].current.clone())
    }
}

struct FaultyFile {
    state: Arc<Mutex<State>>,
    ino: usize,
}

impl FaultyFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl WritableFile for FaultyFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        let bytes = &mut state.inodes[self.ino].current;
        let end = offset as usize + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[offset as usize..end].copy_from_slice(data);
        Ok(())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        let inode = &mut state.inodes[self.ino];
        inode.durable = inode.current.clone();
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        state.inodes[self.ino].current.resize(len as usize, 0);
        Ok(())
    }

    fn preallocate(&mut self, len: u64) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        let bytes = &mut state.inodes[self.ino].current;
        if bytes.len() < len as usize {
            bytes.resize(len as usize, 0);
        }
        Ok(())
    }
}

impl FileSystem for FaultyFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.check()?;
        state.dirs.insert(dir.to_path_buf());
        Ok(())
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let state = self.lock();
        state.check()?;
        if !state.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        Ok(state
            .names
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name()?.to_str().map(String::from))
            .collect())
    }

    fn open_write(&self, path: &Path, create: bool) -> io::Result<Box<dyn WritableFile>> {
        let mut state = self.lock();
        let ino = if create {
            state.mutate()?;
            if state.names.contains_key(path) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", path.display()),
                ));
            }
            state.inodes.push(Inode::default());
            let ino = state.inodes.len() - 1;
            state.names.insert(path.to_path_buf(), ino);
            ino
        } else {
            state.check()?;
            *state.names.get(path).ok_or_else(|| not_found(path))?
        };
        Ok(Box::new(FaultyFile {
            state: self.state.clone(),
            ino,
        }))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn io::Read + Send>> {
        let state = self.lock();
        state.check()?;
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(Box::new(io::Cursor::new(state.inodes[ino].current.clone())))
    }

    fn len(&self, path: &Path) -> io::Result<u64> {
        let state = self.lock();
        state.check()?;
        let ino = *state.names.get(path).ok_or_else(|| not_found(path))?;
        Ok(state.inodes[ino].current.len() as u64)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        let ino = state.names.remove(from).ok_or_else(|| not_found(from))?;
        state.names.insert(to.to_path_buf(), ino);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        state
            .names
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut state = self.lock();
        state.mutate()?;
        let State {
            names,
            durable_names,
            ..
        } = &mut *state;
        durable_names.retain(|p, _| p.parent() != Some(dir));
        for (p, &ino) in names.iter().filter(|(p, _)| p.parent() == Some(dir)) {
            durable_names.insert(p.clone(), ino);
        }
        Ok(())
    }
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_synced_bytes_and_names_survive_a_crash() {
        let fs = FaultyFs::new();
        let dir = Path::new("/d");
        fs.create_dir_all(dir).expect("dir");
        let mut f = fs.open_write(&dir.join("a"), true).expect("create");
        f.write_at(0, b"hello").expect("write");
        f.sync_data().expect("sync");
        f.write_at(5, b" world").expect("write");
        // Name not yet durable: the file vanishes.
        assert!(fs
            .crash_image(Tear::None)
            .list(dir)
            .expect("list")
            .is_empty());
        fs.sync_dir(dir).expect("sync dir");
        let image = fs.crash_image(Tear::None);
        assert_eq!(image.read_all(&dir.join("a")).expect("read"), b"hello");
        let torn: Vec<Vec<u8>> = (1..40)
            .map(|s| {
                fs.crash_image(Tear::Prefix(s))
                    .read_all(&dir.join("a"))
                    .expect("read")
            })
            .collect();
        assert!(torn
            .iter()
            .all(|b| b"hello world".starts_with(b) && b.len() >= 5));
        assert!(
            torn.iter().any(|b| b.len() > 5 && b.len() < 11),
            "some tears are partial"
        );
    }

    #[test]
    fn operations_after_the_crash_point_fail() {
        let fs = FaultyFs::new();
        fs.create_dir_all(Path::new("/d")).expect("dir");
        fs.crash_after(2);
        let mut f = fs.open_write(Path::new("/d/a"), true).expect("op 1");
        f.write_at(0, b"x").expect("op 2");
        assert!(f.sync_data().is_err());
        assert!(fs.has_crashed());
        assert!(fs.list(Path::new("/d")).is_err());
    }
}
