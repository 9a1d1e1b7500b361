//! Files that hold credentials (`--auth-tokens-file`, `--admin-tokens-file`,
//! `--oauth-introspection-secret-file`): a file other users may read leaks every credential in
//! it, so corral says so when it reads one, naming the file and its mode, never its content. A
//! warning, not a refusal: the operator may have reasons (a group of admins), and a host that
//! would not start is worse than one that warns.

use std::path::Path;

/// Logs a warning when users other than the file's owner may read `path` (given as `flag`).
pub fn warn_if_others_may_read(path: &Path, flag: &str) {
    if let Some(warning) = readable_by_others(path, flag) {
        tracing::warn!(file = %path.display(), "{warning}");
    }
}

/// The warning for `path`, when its group or other users may read it.
fn readable_by_others(path: &Path, flag: &str) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
    (mode & 0o044 != 0).then(|| format!("{flag} {} (mode {mode:04o}) may be read by other users, and it holds credentials: chmod 600 it", path.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::readable_by_others;

    #[test]
    fn a_credentials_file_others_may_read_is_named_without_its_content() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), "ci s3cret-token\n").unwrap();
        for (mode, warned) in [(0o644, true), (0o640, true), (0o604, true), (0o600, false), (0o400, false)] {
            std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            let warning = readable_by_others(file.path(), "--auth-tokens-file");
            assert_eq!(warning.is_some(), warned, "{mode:o}: {warning:?}");
            if let Some(warning) = warning {
                assert!(warning.contains(&format!("{mode:04o}")) && warning.contains("--auth-tokens-file"), "{warning}");
                assert!(!warning.contains("s3cret"), "{warning}");
            }
        }
    }
}
