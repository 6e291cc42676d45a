//! zkCli's quota commands (`SetQuotaCommand`, `ListQuotaCommand`, `DelQuotaCommand`): they
//! only read and write the nodes under `/zookeeper/quota`; the server keeps the stats current
//! (and, with `enforceQuota`, refuses writes past a hard limit).

use super::{CommandResult, Failure, Shell};
use crate::cli::words::Parsed;
use client::{acl, Client, CreateMode, Error, ErrorCode};
use tree::quota::{self, StatsTrack};

/// The options of `setquota` and `delquota`, in zkCli's order, with its descriptions.
const OPTIONS: &[(char, &str)] = &[
    ('n', "num soft quota"),
    ('b', "bytes soft quota"),
    ('N', "num hard quota"),
    ('B', "bytes hard quota"),
];

/// The one option of the group given, as Commons CLI's `OptionGroup` allows; its messages.
fn selected_option(parsed: &Parsed, required: bool) -> Result<Option<char>, Failure> {
    let given: Vec<char> = parsed.given().filter(|f| "nbNB".contains(*f)).collect();
    match given.as_slice() {
        [] if required => {
            let group: Vec<String> = OPTIONS
                .iter()
                .map(|(f, description)| format!("-{f} {description}"))
                .collect();
            Err(Failure::Usage(format!(
                "org.apache.commons.cli.MissingOptionException: Missing required option: [{}]",
                group.join(", ")
            )))
        }
        [] => Ok(None),
        [one] => Ok(Some(*one)),
        [first, second, ..] => Err(Failure::Usage(format!(
            "org.apache.commons.cli.AlreadySelectedException: The option '{second}' was \
             specified but an option from this group has already been selected: '{first}'"
        ))),
    }
}

/// The data of a node, `None` when it does not exist.
async fn data_of(zk: &Client, path: &str) -> Result<Option<Vec<u8>>, Error> {
    match zk.get_data_raw(path).await {
        Ok((data, _)) => Ok(Some(data.unwrap_or_default())),
        Err(e) if e.code() == ErrorCode::NoNode => Ok(None),
        Err(e) => Err(e),
    }
}

/// A quota node's text as `StatsTrack` reads it (text it cannot read makes zkCli throw).
fn stats_of(path: &str, data: &[u8]) -> Result<StatsTrack, Failure> {
    StatsTrack::parse(data).ok_or_else(|| {
        Failure::Failed(format!(
            "java.lang.NumberFormatException: the quota node {path} does not hold a quota"
        ))
    })
}

/// The children of a node; none when it does not exist.
async fn children_of(zk: &Client, path: &str) -> Result<Option<Vec<String>>, Error> {
    match zk.get_children(path).await {
        Ok((mut children, _)) => {
            children.sort();
            Ok(Some(children))
        }
        Err(e) if e.code() == ErrorCode::NoNode => Ok(None),
        Err(e) => Err(e),
    }
}

/// `checkIfChildQuota`: a quota below `path` forbids one on it.
async fn child_with_quota(zk: &Client, path: &str) -> Result<Option<String>, Error> {
    let own = quota::quota_path(path);
    let mut stack = vec![own.clone()];
    while let Some(dir) = stack.pop() {
        let Some(children) = children_of(zk, &dir).await? else {
            continue;
        };
        if dir != own && children.iter().any(|c| c == quota::LIMIT_NODE) {
            return Ok(Some(quota::trim_quota_path(&dir).to_string()));
        }
        stack.extend(children.iter().rev().map(|c| format!("{dir}/{c}")));
    }
    Ok(None)
}

/// `checkIfParentQuota`: a quota above `path` forbids one on it. Like zkCli, it stops at the
/// first ancestor with no quota directory or an empty one.
async fn parent_with_quota(zk: &Client, path: &str) -> Result<Option<String>, Error> {
    let parts: Vec<&str> = path.split('/').collect();
    let mut dir = quota::QUOTA_ROOT.to_string();
    for part in parts.iter().take(parts.len().saturating_sub(1)).skip(1) {
        dir.push('/');
        dir.push_str(part);
        let children = match children_of(zk, &dir).await? {
            Some(c) if !c.is_empty() => c,
            _ => return Ok(None),
        };
        if children.iter().any(|c| c == quota::LIMIT_NODE) {
            return Ok(Some(quota::trim_quota_path(&dir).to_string()));
        }
    }
    Ok(None)
}

/// zkCli's warnings when the limits set are below the usage already there (on stdout).
fn limit_warnings(limits: &StatsTrack, usage: &StatsTrack) -> Vec<String> {
    let mut out = Vec::new();
    let below =
        |soft: i64, hard: i64, used: i64| (soft > -1 && soft < used) || (hard > -1 && hard < used);
    if below(limits.count(), limits.count_hard_limit(), usage.count()) {
        out.push(format!(
            "[Warning]: the count quota you create is less than the existing count:{}",
            usage.count()
        ));
    }
    if below(limits.bytes(), limits.byte_hard_limit(), usage.bytes()) {
        out.push(format!(
            "[Warning]: the bytes quota you create is less than the existing bytes:{}",
            usage.bytes()
        ));
    }
    out
}

/// `SetQuotaCommand.checkOptionValue`: the limit given, or the message zkCli prints.
fn limit_value(option: char, value: &str) -> Result<i64, &'static str> {
    let number: Option<i64> = if option == 'n' || option == 'N' {
        value.parse::<i32>().ok().map(i64::from)
    } else {
        value.parse::<i64>().ok()
    };
    match (option, number) {
        (_, None) => Err("NumberFormatException happens when parsing the option value"),
        ('n' | 'N', Some(v)) if v <= 0 => Err("the num quota must be greater than zero"),
        ('b' | 'B', Some(v)) if v < 0 => {
            Err("the bytes quota must be greater than or equal to zero")
        }
        (_, Some(v)) => Ok(v),
    }
}

impl Shell {
    /// `setquota -n|-b|-N|-B val path`.
    pub(super) fn setquota(&mut self, zk: &Client, parsed: &Parsed, usage: &str) -> CommandResult {
        let option = selected_option(parsed, true)?;
        let path = parsed
            .args
            .get(1)
            .cloned()
            .ok_or_else(|| Failure::Usage(usage.to_string()))?;
        if path.starts_with(quota::QUOTA_ROOT) {
            self.println_err(&format!(
                "cannot set a quota under the path: {}",
                quota::QUOTA_ROOT
            ));
            return Ok(());
        }
        let Some(option) = option else {
            return Err(Failure::Usage(usage.to_string()));
        };
        let value = match limit_value(option, parsed.value(option).unwrap_or_default()) {
            Ok(v) => v,
            Err(message) => {
                self.println_err(message);
                return Ok(());
            }
        };
        let mut wanted = StatsTrack::default();
        wanted.set_count(-1);
        wanted.set_bytes(-1);
        wanted.set_count_hard_limit(-1);
        wanted.set_byte_hard_limit(-1);
        match option {
            'n' => wanted.set_count(value),
            'b' => wanted.set_bytes(value),
            'N' => wanted.set_count_hard_limit(value),
            _ => wanted.set_byte_hard_limit(value),
        }
        let rt = self.runtime();
        let warnings = rt.block_on(create_quota(zk, &path, &wanted))?;
        for line in warnings {
            self.println(&line);
        }
        Ok(())
    }

    /// `listquota path`.
    pub(super) fn listquota(&mut self, zk: &Client, parsed: &Parsed, usage: &str) -> CommandResult {
        let path = parsed
            .args
            .get(1)
            .cloned()
            .ok_or_else(|| Failure::Usage(usage.to_string()))?;
        self.println_err(&format!("absolute path is {}", quota::limit_path(&path)));
        let rt = self.runtime();
        let found = rt.block_on(async {
            let Some(limits) = data_of(zk, &quota::limit_path(&path)).await? else {
                return Ok::<_, Error>(None);
            };
            let Some(stats) = data_of(zk, &quota::stat_path(&path)).await? else {
                return Ok(None);
            };
            Ok(Some((limits, stats)))
        })?;
        let Some((limits, stats)) = found else {
            self.println_err(&format!("quota for {path} does not exist."));
            return Ok(());
        };
        let limits = stats_of(&quota::limit_path(&path), &limits)?;
        let stats = stats_of(&quota::stat_path(&path), &stats)?;
        self.println(&format!("Output quota for {path} {}", limits.to_text()));
        self.println(&format!("Output stat for {path} {}", stats.to_text()));
        Ok(())
    }

    /// `delquota [-n|-b|-N|-B] path`: one limit back to −1, or the whole quota removed.
    pub(super) fn delquota(&mut self, zk: &Client, parsed: &Parsed, usage: &str) -> CommandResult {
        let option = selected_option(parsed, false)?;
        let path = parsed
            .args
            .get(1)
            .cloned()
            .ok_or_else(|| Failure::Usage(usage.to_string()))?;
        let rt = self.runtime();
        let limit_path = quota::limit_path(&path);
        if rt.block_on(zk.exists(&limit_path))?.is_none() {
            self.println(&format!("Quota does not exist for {path}"));
            return Ok(());
        }
        let Some(data) = rt.block_on(data_of(zk, &limit_path))? else {
            self.println_err(&format!("quota for {path} does not exist."));
            return Ok(());
        };
        let mut limits = stats_of(&limit_path, &data)?;
        let result = match option {
            None => rt.block_on(remove_quota(zk, &path)),
            Some(option) => {
                match option {
                    'n' => limits.set_count(-1),
                    'b' => limits.set_bytes(-1),
                    'N' => limits.set_count_hard_limit(-1),
                    _ => limits.set_byte_hard_limit(-1),
                }
                rt.block_on(zk.set_data(&limit_path, &limits.to_bytes(), -1))
                    .map(drop)
            }
        };
        match result {
            Err(e) if e.code() == ErrorCode::NoNode => {
                self.println_err(&format!("quota for {path} does not exist."));
                Ok(())
            }
            other => Ok(other?),
        }
    }
}

/// `SetQuotaCommand.createQuota`: checks, then the quota directories (null data), then a new
/// limits node and its stats node, or the existing limits merged with the new one. Returns
/// zkCli's warnings.
async fn create_quota(
    zk: &Client,
    path: &str,
    wanted: &StatsTrack,
) -> Result<Vec<String>, Failure> {
    if zk.exists(path).await?.is_none() {
        return Err(Failure::Failed(format!("{path} does not exist.")));
    }
    // zkCli validates `/zookeeper/quota` + path here, so `/` fails on its trailing slash.
    if path == "/" {
        return Err(Failure::Failed("Path must not end with / character".into()));
    }
    if let Some(child) = child_with_quota(zk, path).await? {
        return Err(Failure::Failed(format!(
            "{path} has a child {child} which has a quota"
        )));
    }
    if let Some(parent) = parent_with_quota(zk, path).await? {
        return Err(Failure::Failed(format!(
            "{path} has a parent {parent} which has a quota"
        )));
    }
    let open = acl::open_unsafe();
    let mut dir = quota::QUOTA_ROOT.to_string();
    for part in path.split('/').skip(1) {
        dir.push('/');
        dir.push_str(part);
        if zk.exists(&dir).await?.is_none() {
            match zk
                .create_nullable(&dir, None, &open, CreateMode::Persistent)
                .await
            {
                Err(e) if e.code() != ErrorCode::NodeExists => return Err(e.into()),
                _ => {}
            }
        }
    }
    let (limit_path, stat_path) = (quota::limit_path(path), quota::stat_path(path));
    if zk.exists(&limit_path).await?.is_none() {
        zk.create(
            &limit_path,
            &wanted.to_bytes(),
            &open,
            CreateMode::Persistent,
        )
        .await?;
        let fresh = StatsTrack::counted(0, 0);
        zk.create(&stat_path, &fresh.to_bytes(), &open, CreateMode::Persistent)
            .await?;
        let limits = stats_of(&limit_path, &zk.get_data(&limit_path).await?.0)?;
        let usage = stats_of(&stat_path, &zk.get_data(&stat_path).await?.0)?;
        return Ok(limit_warnings(&limits, &usage));
    }
    let mut limits = stats_of(&limit_path, &zk.get_data(&limit_path).await?.0)?;
    if wanted.count() > -1 {
        limits.set_count(wanted.count());
    }
    if wanted.bytes() > -1 {
        limits.set_bytes(wanted.bytes());
    }
    if wanted.count_hard_limit() > -1 {
        limits.set_count_hard_limit(wanted.count_hard_limit());
    }
    if wanted.byte_hard_limit() > -1 {
        limits.set_byte_hard_limit(wanted.byte_hard_limit());
    }
    let usage = stats_of(&stat_path, &zk.get_data(&stat_path).await?.0)?;
    let warnings = limit_warnings(&limits, &usage);
    zk.set_data(&limit_path, &limits.to_bytes(), -1).await?;
    Ok(warnings)
}

/// `DelQuotaCommand.delQuota` without a flag: the quota directory's children, then every
/// directory left empty up to `/zookeeper/quota`.
async fn remove_quota(zk: &Client, path: &str) -> Result<(), Error> {
    let dir = quota::quota_path(path);
    let (children, _) = zk.get_children(&dir).await?;
    for child in children {
        zk.delete(&format!("{dir}/{child}"), -1).await?;
    }
    let mut dir = dir;
    while dir != quota::QUOTA_ROOT {
        let (children, _) = zk.get_children(&dir).await?;
        if !children.is_empty() {
            break;
        }
        zk.delete(&dir, -1).await?;
        match dir.rfind('/') {
            Some(at) => dir.truncate(at),
            None => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_are_checked_as_zkcli_checks_them() {
        assert_eq!(limit_value('n', "5"), Ok(5));
        assert_eq!(
            limit_value('N', "0"),
            Err("the num quota must be greater than zero")
        );
        assert_eq!(limit_value('B', "0"), Ok(0));
        assert_eq!(
            limit_value('b', "-1"),
            Err("the bytes quota must be greater than or equal to zero")
        );
        // -n takes a Java int, -b a long.
        assert!(limit_value('n', "3000000000").is_err());
        assert_eq!(limit_value('b', "3000000000"), Ok(3_000_000_000));
    }

    #[test]
    fn warnings_when_limits_are_below_usage() {
        let mut limits = StatsTrack::default();
        limits.set_count_hard_limit(2);
        limits.set_bytes(1);
        let usage = StatsTrack::counted(3, 5);
        assert_eq!(
            limit_warnings(&limits, &usage),
            vec![
                "[Warning]: the count quota you create is less than the existing count:3",
                "[Warning]: the bytes quota you create is less than the existing bytes:5"
            ]
        );
        assert!(limit_warnings(&limits, &StatsTrack::counted(1, 0)).is_empty());
    }
}
