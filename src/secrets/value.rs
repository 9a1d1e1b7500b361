//! A secret's value: never printed, wiped from memory when dropped.

use std::fmt;

use zeroize::Zeroizing;

/// The longest value accepted: credentials are short, and every call that resolves one copies it.
pub const MAX_VALUE: usize = 16 * 1024;

/// A secret's value. `Debug` prints `Secret([redacted])`; there is no `Display` and no
/// `Serialize`, so a value reaches a log, an error or a reply only through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

/// Why a value was refused (the value itself is never in the message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// Nothing was given.
    #[error("the value is empty")]
    Empty,
    /// More than [`MAX_VALUE`] bytes.
    #[error("the value is {0} bytes; at most 16384 are accepted")]
    TooLong(usize),
    /// An environment variable cannot hold it.
    #[error("the value is not UTF-8 text without NUL characters (it becomes an environment variable)")]
    NotText,
}

impl Secret {
    /// A value as given (by standard input, or a page's form): one trailing line ending, which a
    /// shell's `echo` or a file's last line adds, is not part of it.
    pub fn from_input(bytes: Vec<u8>) -> Result<Secret, ValueError> {
        let bytes = Zeroizing::new(bytes);
        let mut end = bytes.len();
        if bytes[..end].ends_with(b"\n") {
            end -= 1;
            if bytes[..end].ends_with(b"\r") {
                end -= 1;
            }
        }
        Secret::new(&bytes[..end])
    }

    /// A value from its exact bytes.
    pub fn new(bytes: &[u8]) -> Result<Secret, ValueError> {
        if bytes.is_empty() {
            return Err(ValueError::Empty);
        }
        if bytes.len() > MAX_VALUE {
            return Err(ValueError::TooLong(bytes.len()));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| ValueError::NotText)?;
        if text.contains('\0') {
            return Err(ValueError::NotText);
        }
        Ok(Secret(Zeroizing::new(text.to_owned())))
    }

    /// The value, for the one place that must hand it on (a call's environment, the sealing).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_never_prints_and_loses_one_trailing_line_ending() {
        let s = Secret::from_input(b"hunter2\r\n".to_vec()).unwrap();
        assert_eq!(s.expose(), "hunter2");
        assert_eq!(format!("{s:?}"), "Secret([redacted])");
        assert_eq!(format!("{:?}", Some(&s)), "Some(Secret([redacted]))");
        assert_eq!(Secret::from_input(b"a\n\n".to_vec()).unwrap().expose(), "a\n", "only one line ending");
        assert_eq!(Secret::from_input(b"\n".to_vec()), Err(ValueError::Empty));
        assert_eq!(Secret::from_input(vec![b'x'; MAX_VALUE + 1]), Err(ValueError::TooLong(MAX_VALUE + 1)));
        assert_eq!(Secret::new(b"a\0b"), Err(ValueError::NotText));
        assert_eq!(Secret::new(&[0xff, 0xfe]), Err(ValueError::NotText));
        assert_eq!(MAX_VALUE, 16384, "the message of TooLong says so");
    }
}
