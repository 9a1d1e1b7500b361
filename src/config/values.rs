//! The grammar of the values flags and manifests share: durations, counts and sizes, each refusing
//! zero, so that a mistyped value is reported, never reinterpreted.

use std::time::Duration;

/// Parses a duration such as `30s`, `1500ms` or `2m`; zero is refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(text).map_err(|e| format!("`{text}` is not a duration like \"30s\" ({e})"))?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

/// Parses a whole number greater than zero: a count or a budget flag (`--max-running`, `--fuel`...).
/// Zero is refused rather than raised to one, so a mistyped flag is reported, not reinterpreted.
pub fn parse_positive<T>(text: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialEq + From<u8>,
    T::Err: std::fmt::Display,
{
    let n: T = text.trim().parse().map_err(|e| format!("`{text}` is not a whole number ({e})"))?;
    if n == T::from(0) {
        return Err("must be greater than zero".into());
    }
    Ok(n)
}

/// Parses a size such as `64MiB`; refuses zero and anything above `ceiling`.
pub fn parse_memory(text: &str, ceiling: u64) -> Result<u64, String> {
    let size: bytesize::ByteSize = text.parse().map_err(|e| format!("`{text}` is not a size like \"64MiB\" ({e})"))?;
    let bytes = check_positive(size.as_u64())?;
    if bytes > ceiling {
        return Err(format!("{text} is above the host's memory ceiling of {}", bytesize::ByteSize(ceiling).display().iec()));
    }
    Ok(bytes)
}

/// Parses a size with no ceiling (for host flags).
pub fn parse_size(text: &str) -> Result<u64, String> {
    parse_memory(text, u64::MAX)
}

pub(super) fn check_positive(n: u64) -> Result<u64, String> {
    if n == 0 {
        Err("must be greater than zero".into())
    } else {
        Ok(n)
    }
}

/// Formats a byte count the way the manifest spells it (`64 MiB`).
pub fn display_size(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}
