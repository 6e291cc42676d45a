//! The three ways ZooKeeper stores a snapshot (`zookeeper.snapshot.compression.method`,
//! `SnapStream`), told apart by the file name as ZooKeeper does: `snapshot.<zxid>` plain,
//! `.gz` gzip, `.snappy` snappy in xerial's framing (snappy-java's `SnappyOutputStream`: an
//! 8-byte magic, two version ints, then blocks each prefixed by its compressed length).

use std::io::{BufReader, Read};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
}

impl Compression {
    /// As `SnapStream.getStreamMode`: the last dot-separated part of the name.
    pub fn of_name(name: &str) -> Compression {
        match name.rsplit('.').next() {
            Some(ext) if name.contains('.') && ext.eq_ignore_ascii_case("gz") => Compression::Gzip,
            Some(ext) if name.contains('.') && ext.eq_ignore_ascii_case("snappy") => {
                Compression::Snappy
            }
            _ => Compression::None,
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Compression::None => "",
            Compression::Gzip => " (gzip; offsets count decompressed bytes)",
            Compression::Snappy => " (snappy; offsets count decompressed bytes)",
        }
    }

    /// The decompressed bytes of `file`.
    pub fn reader<'a, R: Read + 'a>(self, file: R) -> Box<dyn Read + 'a> {
        let buffered = BufReader::with_capacity(1 << 20, file);
        match self {
            Compression::None => Box::new(buffered),
            Compression::Gzip => Box::new(BufReader::with_capacity(
                1 << 20,
                flate2::bufread::MultiGzDecoder::new(buffered),
            )),
            Compression::Snappy => Box::new(XerialSnappyReader::new(buffered)),
        }
    }
}

/// snappy-java's stream header.
pub const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// A block larger than this (compressed or not) is refused as damage; snappy-java writes
/// 32 KiB blocks by default.
const XERIAL_BLOCK_MAX: usize = 16 << 20;

/// Reads xerial-framed snappy: header, then `[len i32 BE][raw snappy block]...`. A header may
/// appear again between blocks (concatenated streams), as snappy-java allows.
pub struct XerialSnappyReader<R> {
    inner: R,
    started: bool,
    block: Vec<u8>,
    at: usize,
    compressed: Vec<u8>,
    decoder: snap::raw::Decoder,
}

impl<R: Read> XerialSnappyReader<R> {
    pub fn new(inner: R) -> Self {
        XerialSnappyReader {
            inner,
            started: false,
            block: Vec::new(),
            at: 0,
            compressed: Vec::new(),
            decoder: snap::raw::Decoder::new(),
        }
    }

    fn invalid(detail: String) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::InvalidData, detail)
    }

    /// Reads exactly `buf.len()` bytes, or returns false at a clean end before the first one.
    fn fill(&mut self, buf: &mut [u8]) -> std::io::Result<bool> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.inner.read(&mut buf[filled..]) {
                Ok(0) if filled == 0 => return Ok(false),
                Ok(0) => return Err(Self::invalid("snappy stream cut short".into())),
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Loads the next block; false at the end of the stream.
    fn next_block(&mut self) -> std::io::Result<bool> {
        loop {
            let mut len = [0u8; 4];
            if !self.fill(&mut len)? {
                if !self.started {
                    return Err(Self::invalid("empty snappy stream".into()));
                }
                return Ok(false);
            }
            if len == XERIAL_MAGIC[..4] {
                // A (repeated) stream header: the rest of the magic and two version ints.
                let mut rest = [0u8; 12];
                if !self.fill(&mut rest)? || rest[..4] != XERIAL_MAGIC[4..] {
                    return Err(Self::invalid("bad snappy stream header".into()));
                }
                self.started = true;
                continue;
            }
            if !self.started {
                return Err(Self::invalid("not a snappy-java stream (no header)".into()));
            }
            let n = i32::from_be_bytes(len);
            if n < 0 || n as usize > XERIAL_BLOCK_MAX {
                return Err(Self::invalid(format!(
                    "unreasonable snappy block length {n}"
                )));
            }
            self.compressed.resize(n as usize, 0);
            let mut compressed = std::mem::take(&mut self.compressed);
            let complete = self.fill(&mut compressed);
            self.compressed = compressed;
            if !complete? {
                return Err(Self::invalid("snappy stream cut short".into()));
            }
            let size = snap::raw::decompress_len(&self.compressed)
                .map_err(|e| Self::invalid(format!("bad snappy block: {e}")))?;
            if size > XERIAL_BLOCK_MAX {
                return Err(Self::invalid(format!(
                    "unreasonable snappy block size {size}"
                )));
            }
            self.block.resize(size, 0);
            self.decoder
                .decompress(&self.compressed, &mut self.block)
                .map_err(|e| Self::invalid(format!("bad snappy block: {e}")))?;
            self.at = 0;
            if size > 0 {
                return Ok(true);
            }
        }
    }
}

impl<R: Read> Read for XerialSnappyReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.block.len() && !self.next_block()? {
            return Ok(0);
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xerial(blocks: &[&[u8]]) -> Vec<u8> {
        let mut out = XERIAL_MAGIC.to_vec();
        out.extend_from_slice(&1i32.to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
        for block in blocks {
            let c = snap::raw::Encoder::new()
                .compress_vec(block)
                .unwrap_or_default();
            out.extend_from_slice(&(c.len() as i32).to_be_bytes());
            out.extend_from_slice(&c);
        }
        out
    }

    #[test]
    fn xerial_blocks_read_back_in_order() {
        let bytes = xerial(&[b"hello ", b"snappy ", b"world"]);
        let mut out = String::new();
        let read = XerialSnappyReader::new(&bytes[..]).read_to_string(&mut out);
        assert!(read.is_ok());
        assert_eq!(out, "hello snappy world");
    }

    #[test]
    fn a_cut_xerial_stream_is_an_error() {
        let bytes = xerial(&[b"hello hello hello hello"]);
        let mut out = Vec::new();
        let cut = &bytes[..bytes.len() - 3];
        assert!(XerialSnappyReader::new(cut).read_to_end(&mut out).is_err());
    }

    #[test]
    fn names_choose_the_codec() {
        assert_eq!(Compression::of_name("snapshot.1f"), Compression::None);
        assert_eq!(Compression::of_name("snapshot.1f.gz"), Compression::Gzip);
        assert_eq!(
            Compression::of_name("snapshot.1f.snappy"),
            Compression::Snappy
        );
    }
}
