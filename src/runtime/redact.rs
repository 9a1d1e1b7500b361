//! The secrets one call's environment holds, and their redaction from what the call emits.
//!
//! The runtime puts each into the call's WASI environment and nowhere else, and replaces any
//! value the guest writes to its stdout or stderr by `[secret NAME]` before the line reaches the
//! host log. The server redacts results, logs and progress the same way ([`redacted`]).

use std::sync::Arc;

use zeroize::Zeroizing;

/// `(NAME, value)` pairs of one call, the values wiped when the last holder drops them.
pub type SecretVars = Arc<[(String, Zeroizing<String>)]>;

/// The shortest value redacted: replacing every `a` of a text would destroy it and hide
/// nothing worth hiding.
pub const MIN_REDACTED: usize = 4;

/// `text` with each value of `vars` replaced by `[secret NAME]`; `None` when none occurs.
pub fn redacted(vars: &[(String, Zeroizing<String>)], text: &str) -> Option<String> {
    let mut out: Option<String> = None;
    for (name, value) in vars {
        if value.len() < MIN_REDACTED {
            continue;
        }
        let current = out.as_deref().unwrap_or(text);
        if current.contains(value.as_str()) {
            out = Some(current.replace(value.as_str(), &format!("[secret {name}]")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_replaced_by_their_names_and_short_ones_left_alone() {
        let vars: SecretVars = vec![("TOKEN".into(), Zeroizing::new("s3cr3t".into())), ("PIN".into(), Zeroizing::new("42".into()))].into();
        assert_eq!(redacted(&vars, "a s3cr3t b s3cr3t 42").as_deref(), Some("a [secret TOKEN] b [secret TOKEN] 42"));
        assert_eq!(redacted(&vars, "clean 42"), None);
    }
}
