//! CPU time of this process and of another one (Linux `/proc`).

/// User + system CPU seconds this process has used.
pub fn process_cpu_seconds() -> f64 {
    pid_cpu_seconds(std::process::id()).unwrap_or(0.0)
}

/// User + system CPU seconds of `pid` (and its finished children), if readable.
pub fn pid_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime, stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux ABI.
    let ticks = 100.0;
    Some((utime + stime) / ticks)
}
