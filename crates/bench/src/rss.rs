//! Resident memory of another process (Linux `/proc`): now, at its peak, and resetting the peak
//! so that it covers one phase only.

use std::path::PathBuf;

/// A `VmRSS` / `VmHWM` reading, in KiB as the kernel reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Resident {
    pub rss_kib: u64,
    /// The peak RSS since the process started or since [`reset_peak`].
    pub peak_kib: u64,
}

/// The resident set of `pid` now and at its peak, if `/proc` says.
pub fn resident(pid: u32) -> Option<Resident> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Resident {
        rss_kib: status_kib(&status, "VmRSS:")?,
        peak_kib: status_kib(&status, "VmHWM:")?,
    })
}

/// Resets `VmHWM` of `pid` to its current RSS (`clear_refs` value 5, Linux 4.0 and later), so
/// that the next reading's peak covers only what happens from now on.
pub fn reset_peak(pid: u32) -> std::io::Result<()> {
    std::fs::write(PathBuf::from(format!("/proc/{pid}/clear_refs")), b"5")
}

/// One `Key:   1234 kB` line of `/proc/PID/status`.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let own = resident(std::process::id()).expect("/proc is readable");
        assert!(own.rss_kib > 0);
        assert!(own.peak_kib >= own.rss_kib);
    }

    #[test]
    fn parses_status_lines() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(status_kib(status, "VmRSS:"), Some(1024));
        assert_eq!(status_kib(status, "VmHWM:"), Some(2048));
        assert_eq!(status_kib(status, "VmSwap:"), None);
    }
}
