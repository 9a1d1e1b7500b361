//! Reads the tools' figures back from the host's own Prometheus exposition text: what the
//! operator's console shows per tool is exactly what `/metrics` says, with no second set of
//! counters on the call path. (`prometheus-client` keeps its families' contents private; its
//! text is the one reading it offers.)

use std::collections::BTreeMap;

use super::operator::ToolView;

/// Adds the calls, errors by kind and latency percentiles `text` holds to `tools` (a tool
/// that is no longer served but was called gets an entry of its own).
pub(super) fn fill(text: &str, tools: &mut BTreeMap<String, ToolView>) {
    let mut buckets: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((name, labels, value)) = sample(line) else { continue };
        let Some(tool) = label(labels, "tool") else { continue };
        let entry = || ToolView { name: tool.clone(), ..ToolView::default() };
        match name {
            "corral_tool_calls_total" => {
                let view = tools.entry(tool.clone()).or_insert_with(entry);
                view.calls += value as u64;
                match label(labels, "outcome").as_deref() {
                    Some("ok") | None => {}
                    Some(kind) => *view.errors.entry(kind.to_owned()).or_default() += value as u64,
                }
            }
            "corral_tool_call_seconds_bucket" => {
                let Some(le) = label(labels, "le") else { continue };
                let bound = if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap_or(f64::INFINITY) };
                buckets.entry(tool).or_default().push((bound, value));
            }
            _ => {}
        }
    }
    for (tool, mut b) in buckets {
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        if let Some(view) = tools.get_mut(&tool) {
            view.p50_ms = quantile(&b, 0.5).map(|s| s * 1000.0);
            view.p99_ms = quantile(&b, 0.99).map(|s| s * 1000.0);
        }
    }
}

/// The upper bound of the bucket holding quantile `q` of cumulative `buckets` (sorted by
/// bound); `None` with no observation, and the largest finite bound for the `+Inf` bucket.
fn quantile(buckets: &[(f64, f64)], q: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total <= 0.0 {
        return None;
    }
    let rank = q * total;
    let largest_finite = buckets.iter().rev().map(|b| b.0).find(|b| b.is_finite());
    let (bound, _) = buckets.iter().find(|(_, count)| *count >= rank)?;
    if bound.is_finite() {
        Some(*bound)
    } else {
        largest_finite
    }
}

/// A sample line: its name, its labels' text (inside the braces) and its value.
fn sample(line: &str) -> Option<(&str, &str, f64)> {
    let open = line.find('{')?;
    let close = line.rfind('}')?;
    let value = line[close + 1..].split_whitespace().next()?.parse().ok()?;
    Some((&line[..open], &line[open + 1..close], value))
}

/// The value of label `key` in `labels` (`a="x",b="y"`), unescaped.
fn label(labels: &str, key: &str) -> Option<String> {
    let mut rest = labels;
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => return None,
                },
                '"' => {
                    end = Some(i);
                    break;
                }
                c => value.push(c),
            }
        }
        let end = end?;
        if name.trim_start_matches(',').trim() == key {
            return Some(value);
        }
        rest = after[end + 1..].trim_start_matches(',');
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_errors_and_percentiles_come_from_the_exposition_text() {
        let metrics = super::super::Metrics::default();
        for ms in [1, 1, 1, 1, 1, 1, 1, 1, 1, 300] {
            metrics.call("echo", "ok", std::time::Duration::from_millis(ms));
        }
        metrics.call("echo", "timeout", std::time::Duration::from_millis(2));
        metrics.call("gone", "tool-error", std::time::Duration::from_millis(2));
        let mut tools = BTreeMap::from([("echo".to_owned(), ToolView { name: "echo".into(), plugin: Some("text".into()), ..ToolView::default() })]);
        fill(&metrics.encode(), &mut tools);
        let echo = &tools["echo"];
        assert_eq!((echo.calls, echo.errors.get("timeout")), (11, Some(&1)));
        assert!(echo.p50_ms.unwrap() >= 1.0 && echo.p50_ms.unwrap() < 5.0, "{echo:?}");
        assert!(echo.p99_ms.unwrap() >= 300.0, "{echo:?}");
        assert_eq!(tools["gone"].errors.get("tool-error"), Some(&1));
        assert_eq!(tools["gone"].plugin, None);
    }

    #[test]
    fn labels_are_read_with_escapes() {
        assert_eq!(label(r#"tool="a\"b",outcome="ok""#, "outcome").as_deref(), Some("ok"));
        assert_eq!(label(r#"tool="a\"b",outcome="ok""#, "tool").as_deref(), Some("a\"b"));
        assert_eq!(label(r#"le="+Inf""#, "tool"), None);
    }
}
