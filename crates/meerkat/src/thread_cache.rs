//! glibc's per-thread cache of freed memory, sized for the server's turns.
//!
//! The core task handles many inputs a turn (`server::limits::CORE_TURN_INPUTS_MAX`), and each
//! allocates and frees a few chunks of the same sizes: records, frames, transactions. glibc
//! keeps 7 freed chunks per size for each thread (its tcache); a turn's burst overflows that
//! into the arena's bins, which cost several times more per call (`_int_free`, `_int_malloc`,
//! consolidation). Holding 64 per size cut a diskless leader's CPU per create by 7–12 % in four
//! runs on a busy machine, where preemption makes the bursts larger, and was neutral on a quiet
//! one (docs/perf.md, Issue 19, tenth pass); it holds at most a few MB per thread.
//!
//! glibc reads the size only from the `GLIBC_TUNABLES` environment variable, at start-up (no
//! `mallopt` sets it), so a server re-executes itself once with it added: same pid, same
//! arguments. A `glibc.malloc.tcache_count` the operator set is kept as it is, and so are any
//! other tunables.

/// The tunable glibc sizes its per-thread cache by.
pub const TCACHE_TUNABLE: &str = "glibc.malloc.tcache_count";
/// Chunks kept per size and thread (glibc's default is 7, its maximum 65,535).
pub const TCACHE_COUNT: u32 = 64;

/// The `GLIBC_TUNABLES` to run with, given the current one; `None` when the current one
/// already sizes the cache (ours, after the re-exec, or the operator's).
pub fn tunables_with_cache(current: Option<&str>) -> Option<String> {
    let ours = format!("{TCACHE_TUNABLE}={TCACHE_COUNT}");
    match current.map(str::trim) {
        None | Some("") => Some(ours),
        Some(current) if sizes_cache(current) => None,
        Some(current) => Some(format!("{current}:{ours}")),
    }
}

/// Whether a `GLIBC_TUNABLES` value (`name=value` pairs joined by `:`) sets the cache size.
fn sizes_cache(tunables: &str) -> bool {
    tunables
        .split(':')
        .any(|pair| pair.split('=').next().map(str::trim) == Some(TCACHE_TUNABLE))
}

/// Why the server runs with glibc's default cache, if it does.
#[derive(Debug, thiserror::Error)]
pub enum NotResized {
    #[error("GLIBC_TUNABLES is not UTF-8")]
    NotUtf8,
    #[error("cannot find this program to re-execute it: {0}")]
    NoProgram(std::io::Error),
    #[error("cannot re-execute this program: {0}")]
    Exec(std::io::Error),
}

/// Re-executes this process with the cache sized, unless it already is. Returns only when it
/// does not re-execute: `Ok` when the cache is sized already, or why it could not be (the
/// server then runs on glibc's default, a little slower). Call it first thing, before any
/// thread starts: `exec` replaces the whole process.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn resize_by_reexec() -> Result<(), NotResized> {
    use std::os::unix::process::CommandExt;
    let current = match std::env::var_os("GLIBC_TUNABLES") {
        None => None,
        Some(value) => Some(value.into_string().map_err(|_| NotResized::NotUtf8)?),
    };
    let Some(tunables) = tunables_with_cache(current.as_deref()) else {
        return Ok(());
    };
    let program = std::env::current_exe().map_err(NotResized::NoProgram)?;
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(program);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    let error = command.args(args).env("GLIBC_TUNABLES", tunables).exec();
    Err(NotResized::Exec(error))
}

/// Other C libraries have no such cache (or no such variable): nothing to do.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn resize_by_reexec() -> Result<(), NotResized> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_size_is_added_once_and_an_operators_is_kept() {
        let ours = format!("{TCACHE_TUNABLE}={TCACHE_COUNT}");
        assert_eq!(tunables_with_cache(None), Some(ours.clone()));
        assert_eq!(tunables_with_cache(Some("")), Some(ours.clone()));
        // After the re-exec: nothing more to do (no exec loop).
        assert_eq!(tunables_with_cache(Some(&ours)), None);
        // Other tunables stay, ours joins them.
        assert_eq!(
            tunables_with_cache(Some("glibc.malloc.trim_threshold=131072")),
            Some(format!("glibc.malloc.trim_threshold=131072:{ours}"))
        );
        // The operator's own size wins, wherever it stands.
        for set in [
            "glibc.malloc.tcache_count=7",
            "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0",
        ] {
            assert_eq!(tunables_with_cache(Some(set)), None, "{set}");
        }
        // A tunable whose name only starts like ours is another one.
        assert_eq!(
            tunables_with_cache(Some("glibc.malloc.tcache_count_max=3")),
            Some(format!("glibc.malloc.tcache_count_max=3:{ours}"))
        );
    }
}
