//! `GET /api/tasks`'s query string, read into a typed filter. Anything the filter does not
//! know, a value it cannot read, a key given twice or a query too long is refused with a 400
//! that names the key, before any store is asked.

use std::time::Duration;

use super::refusal::ApiRefusal;
use crate::tasks::{TaskCursor, TaskStatus};

/// Bytes of a whole query string at most.
pub const MAX_QUERY: usize = 4096;
/// Bytes of one value at most (a tool name, an owner key).
const MAX_VALUE: usize = 512;
/// Tasks per page at most, and by default.
pub const MAX_LIMIT: usize = 500;
const DEFAULT_LIMIT: usize = 100;

/// The keys `GET /api/tasks` takes.
const KEYS: [&str; 8] = ["status", "owner", "tool", "plugin", "older_than", "newer_than", "limit", "before"];

/// Which tasks to list, newest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskQuery {
    /// Any of these statuses (empty: all).
    pub statuses: Vec<TaskStatus>,
    /// The owner key, exactly.
    pub owner: Option<String>,
    /// The tool's served name, exactly.
    pub tool: Option<String>,
    /// The plugin serving the tool now.
    pub plugin: Option<String>,
    /// Created at least this long ago.
    pub older_than: Option<Duration>,
    /// Created at most this long ago.
    pub newer_than: Option<Duration>,
    /// Tasks per page.
    pub limit: usize,
    /// The page after the one whose `next` this is.
    pub before: Option<TaskCursor>,
}

impl TaskQuery {
    /// The task store's filter, with ages counted back from `now` (ms since the Unix epoch).
    pub fn store_filter(&self, now: i64) -> crate::tasks::TaskFilter {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        crate::tasks::TaskFilter {
            statuses: self.statuses.clone(),
            owner: self.owner.clone(),
            tool: self.tool.clone(),
            plugin: self.plugin.clone(),
            created_from: self.newer_than.map(|d| now.saturating_sub(ms(d))),
            created_before: self.older_than.map(|d| now.saturating_sub(ms(d))),
        }
    }

    /// Reads `query` (the part after `?`, possibly absent).
    pub fn parse(query: Option<&str>) -> Result<TaskQuery, ApiRefusal> {
        let mut filter = TaskQuery { limit: DEFAULT_LIMIT, ..TaskQuery::default() };
        let Some(query) = query.filter(|q| !q.is_empty()) else { return Ok(filter) };
        if query.len() > MAX_QUERY {
            return Err(ApiRefusal::bad_request(format!("the query is {} bytes, over the {MAX_QUERY} a task filter may have", query.len())));
        }
        let mut seen: Vec<&'static str> = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (raw_key, raw_value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = decode(raw_key).map_err(|why| ApiRefusal::bad_request(format!("a filter name {why}")))?;
            let Some(&key) = KEYS.iter().find(|k| **k == name) else {
                let shown: String = name.chars().take(64).collect();
                return Err(ApiRefusal::bad_request(format!("unknown filter `{shown}`; the filters are {}", KEYS.join(", "))));
            };
            if seen.contains(&key) {
                return Err(ApiRefusal::bad_request(format!("filter `{key}` is given twice; give it once (`status` takes a comma-separated list)")));
            }
            seen.push(key);
            let value = decode(raw_value).map_err(|why| ApiRefusal::bad_request(format!("filter `{key}`: the value {why}")))?;
            if value.len() > MAX_VALUE {
                return Err(ApiRefusal::bad_request(format!("filter `{key}` is {} bytes long, over {MAX_VALUE}", value.len())));
            }
            if value.is_empty() {
                return Err(ApiRefusal::bad_request(format!("filter `{key}` is empty; leave it out to match everything")));
            }
            filter.set(key, value)?;
        }
        Ok(filter)
    }

    fn set(&mut self, key: &str, value: String) -> Result<(), ApiRefusal> {
        let bad = |why: String| ApiRefusal::bad_request(format!("filter `{key}`: {why}"));
        match key {
            "status" => {
                for part in value.split(',') {
                    let status = TaskStatus::parse(part.trim()).ok_or_else(|| {
                        let all: Vec<&str> = TaskStatus::ALL.iter().map(|s| s.as_str()).collect();
                        bad(format!("unknown status `{}`; one of {}", part.trim(), all.join(", ")))
                    })?;
                    if !self.statuses.contains(&status) {
                        self.statuses.push(status);
                    }
                }
            }
            "owner" => self.owner = Some(value),
            "tool" => self.tool = Some(value),
            "plugin" => self.plugin = Some(value),
            "older_than" | "newer_than" => {
                let age = humantime::parse_duration(&value).map_err(|e| bad(format!("`{value}` is not a duration ({e}); write e.g. 90s, 5m or 2h")))?;
                if key == "older_than" {
                    self.older_than = Some(age);
                } else {
                    self.newer_than = Some(age);
                }
            }
            "limit" => {
                let n: usize = value.parse().map_err(|_| bad(format!("`{value}` is not a number from 1 to {MAX_LIMIT}")))?;
                if !(1..=MAX_LIMIT).contains(&n) {
                    return Err(bad(format!("{n} is not from 1 to {MAX_LIMIT}")));
                }
                self.limit = n;
            }
            "before" => self.before = Some(TaskCursor::parse(&value).ok_or_else(|| bad(format!("`{value}` is not a cursor (the `next` of a previous page)")))?),
            _ => unreachable!("KEYS holds the keys set() knows"),
        }
        Ok(())
    }
}

/// Percent-decoding (`+` is a space), to UTF-8.
fn decode(raw: &str) -> Result<String, &'static str> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.ok_or("has a `%` not followed by two hex digits")?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "is not UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(query: &str) -> String {
        TaskQuery::parse(Some(query)).unwrap_err().message
    }

    #[test]
    fn a_filter_reads_every_key() {
        let f = TaskQuery::parse(Some("status=working,input_required&tool=tick&owner=token%3Aops&older_than=5m&limit=20&before=s17")).unwrap();
        assert_eq!(f.statuses, vec![TaskStatus::Working, TaskStatus::InputRequired]);
        assert_eq!((f.tool.as_deref(), f.owner.as_deref()), (Some("tick"), Some("token:ops")));
        assert_eq!((f.older_than, f.limit, f.before), (Some(Duration::from_secs(300)), 20, TaskCursor::parse("s17")));
        assert!(refused("before=17").starts_with("filter `before`: `17` is not a cursor"));
        assert_eq!(TaskQuery::parse(None).unwrap().limit, DEFAULT_LIMIT);
    }

    #[test]
    fn a_bad_filter_is_refused_naming_it() {
        assert_eq!(refused("colour=red"), "unknown filter `colour`; the filters are status, owner, tool, plugin, older_than, newer_than, limit, before");
        assert!(refused("status=done").starts_with("filter `status`: unknown status `done`; one of working"));
        assert!(refused("limit=0").starts_with("filter `limit`: 0 is not from 1 to 500"));
        assert!(refused("limit=lots").starts_with("filter `limit`: `lots` is not a number"));
        assert!(refused("older_than=yesterday").starts_with("filter `older_than`: `yesterday` is not a duration"));
        assert!(refused("tool=a&tool=b").starts_with("filter `tool` is given twice"));
        assert!(refused("tool=%zz").starts_with("filter `tool`: the value has a `%`"));
        assert!(refused("tool=%ff").starts_with("filter `tool`: the value is not UTF-8"));
        assert!(refused(&format!("tool={}", "a".repeat(600))).starts_with("filter `tool` is 600 bytes long"));
        assert!(refused(&format!("tool={}", "a".repeat(5000))).starts_with("the query is 5005 bytes, over the 4096"));
        assert!(refused("tool=").starts_with("filter `tool` is empty"));
    }
}
