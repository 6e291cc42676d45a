//! Free loopback ports for servers that a test or a benchmark starts itself.
//!
//! Why not ask for port 0: the kernel answers `bind(127.0.0.1:0)` from its ephemeral range
//! (`net.ipv4.ip_local_port_range`), the same range it draws the local port of every outgoing
//! connection from. Between the moment such a port is released and the moment the server that
//! was told to use it binds it, any connection made on the machine may be given that port, and
//! the members of a starting ensemble make many (they dial each other). The server then fails
//! with "Address already in use" (seen in CI). Ports outside the ephemeral range are never handed
//! out that way: only a program that picked the same number itself can take one.
//!
//! Ports are tried from a random point of the range chosen, so that two processes using this
//! crate at once rarely meet; within one process a shared cursor never hands a port out twice
//! until the range wraps.

use std::hash::{BuildHasher, Hasher};
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The lowest port handed out: below it live the well-known and registered services people run.
const PORT_MIN: u16 = 10_000;
/// The ephemeral range Linux uses when `/proc` cannot be read.
const EPHEMERAL_DEFAULT: RangeInclusive<u16> = 32_768..=60_999;
/// The fewest ports a usable range must hold.
const RANGE_LEN_MIN: usize = 1_000;

/// Listeners bound on the ports handed out, kept until dropped so that nothing else that uses
/// this crate or binds those ports is given them meanwhile. Drop it just before the servers
/// start.
#[derive(Debug)]
pub struct PortHold {
    _listeners: Vec<TcpListener>,
}

/// `count` distinct loopback ports that are free now and outside the ephemeral range, held until
/// the returned [`PortHold`] is dropped.
pub fn free_ports(count: usize) -> io::Result<(Vec<u16>, PortHold)> {
    let range = candidates();
    let len = range.len();
    let mut ports = Vec::with_capacity(count);
    let mut listeners = Vec::with_capacity(count);
    // Each port of the range is tried at most once per call: a bounded search.
    for _ in 0..len {
        if ports.len() == count {
            break;
        }
        let port = range[cursor().fetch_add(1, Ordering::Relaxed) % len];
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            ports.push(port);
            listeners.push(listener);
        }
    }
    if ports.len() < count {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "only {} of {count} free loopback ports between {} and {}",
                ports.len(),
                range[0],
                range[len - 1]
            ),
        ));
    }
    Ok((
        ports,
        PortHold {
            _listeners: listeners,
        },
    ))
}

/// One loopback port that is free now and outside the ephemeral range (not held).
pub fn free_port() -> io::Result<u16> {
    let (ports, _hold) = free_ports(1)?;
    Ok(ports[0])
}

/// The ports this machine's kernel may hand out on its own: its ephemeral range.
pub fn ephemeral_range() -> RangeInclusive<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| parse_range(&text))
        .unwrap_or(EPHEMERAL_DEFAULT)
}

/// The two numbers of `ip_local_port_range`, low then high.
fn parse_range(text: &str) -> Option<RangeInclusive<u16>> {
    let mut numbers = text.split_whitespace().map(str::parse::<u16>);
    let low = numbers.next()?.ok()?;
    let high = numbers.next()?.ok()?;
    (low <= high).then_some(low..=high)
}

/// The ports handed out: the larger of the stretches below and above the ephemeral range
/// (above [`PORT_MIN`]). If neither is large enough (an ephemeral range covering nearly every
/// port), the stretch from [`PORT_MIN`] up, with the ephemeral range's risk.
fn candidates() -> &'static [u16] {
    static CANDIDATES: OnceLock<Vec<u16>> = OnceLock::new();
    CANDIDATES.get_or_init(|| {
        let ephemeral = ephemeral_range();
        let below: Vec<u16> = (PORT_MIN..*ephemeral.start()).collect();
        let above: Vec<u16> = (ephemeral.end().saturating_add(1)..=u16::MAX)
            .filter(|p| *p >= PORT_MIN && !ephemeral.contains(p))
            .collect();
        let larger = if below.len() >= above.len() {
            below
        } else {
            above
        };
        if larger.len() >= RANGE_LEN_MIN {
            larger
        } else {
            (PORT_MIN..=u16::MAX).collect()
        }
    })
}

/// The next index into [`candidates`], shared by every caller in this process and starting at a
/// random point.
fn cursor() -> &'static AtomicUsize {
    static CURSOR: OnceLock<AtomicUsize> = OnceLock::new();
    CURSOR.get_or_init(|| {
        // RandomState is seeded by the OS per process: enough to spread processes apart.
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        AtomicUsize::new(hasher.finish() as usize)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The tests share the process's cursor and bind real ports: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn ports_are_distinct_free_and_outside_the_ephemeral_range() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let ephemeral = ephemeral_range();
        let (ports, hold) = free_ports(30).expect("free ports");
        assert_eq!(ports.len(), 30);
        let mut distinct = ports.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 30, "no port twice: {ports:?}");
        for port in &ports {
            assert!(*port >= PORT_MIN, "{port}");
            assert!(!ephemeral.contains(port), "{port} is ephemeral");
            // Held: nobody else can bind it until the hold is dropped.
            assert!(TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).is_err());
        }
        drop(hold);
        for port in &ports {
            TcpListener::bind((Ipv4Addr::LOCALHOST, *port)).expect("free once released");
        }
    }

    #[test]
    fn a_port_someone_listens_on_is_skipped() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let (taken, _hold) = free_ports(1).expect("a port");
        // Wind the shared cursor back so the next call meets the taken port first.
        let len = candidates().len();
        let index = candidates()
            .iter()
            .position(|p| *p == taken[0])
            .expect("candidate");
        cursor().store(index + len, Ordering::Relaxed);
        let (ports, _more) = free_ports(1).expect("another port");
        assert_ne!(ports[0], taken[0]);
    }

    #[test]
    fn the_kernel_range_is_parsed() {
        assert_eq!(parse_range("32768\t60999\n"), Some(32_768..=60_999));
        assert_eq!(parse_range("1024 65535"), Some(1_024..=65_535));
        assert_eq!(parse_range("60999 32768"), None);
        assert_eq!(parse_range("garbage"), None);
        assert_eq!(parse_range(""), None);
    }
}
