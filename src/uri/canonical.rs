//! The canonical form of a URI a client names: what the policy decides on, what routes the
//! request and what the plugin is handed. Without it a rule on `notes://alpha` could be passed
//! by asking for `notes://%61lpha`, which a plugin's SDK decodes to the same note.
//!
//! The form is RFC 3986 §6.2.2's syntax-based normalization (RFC 3987's for IRIs), done by
//! `fluent-uri`: percent-encoded unreserved characters decoded and the hex of the other escapes
//! in upper case, scheme and host in lower case, `.` and `..` segments removed, a default port
//! dropped. A reserved character that is escaped stays escaped (`%2F` is not `/`).

use fluent_uri::Iri;

/// `uri` in its canonical form, or why it is not an absolute URI (or IRI) at all.
pub fn canonical(uri: &str) -> Result<String, String> {
    let parsed = Iri::parse(uri).map_err(|e| format!("{uri:?} is not an absolute URI: {e}"))?;
    Ok(parsed.normalize().into_string())
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn spellings_of_one_uri_have_one_form() {
        for spelling in ["notes://alpha", "notes://%61lpha", "NOTES://alpha", "notes://%61%6C%70%68%61", "Notes://ALPHA"] {
            assert_eq!(canonical(spelling).unwrap(), "notes://alpha", "{spelling}");
        }
        assert_eq!(canonical("HTTP://Example.COM:80/A%2fb").unwrap(), "http://example.com/A%2Fb", "path case kept, escapes upper, default port dropped");
        assert_eq!(canonical("notes://a%2Fb").unwrap(), "notes://a%2Fb", "an escaped reserved character stays escaped");
        assert_eq!(canonical("notes://h/a/./b/../c").unwrap(), "notes://h/a/c", "dot segments removed");
    }

    #[test]
    fn what_is_not_a_uri_is_refused() {
        assert!(canonical("alpha").unwrap_err().contains("not an absolute URI"));
        assert!(canonical("notes://a b").is_err());
        assert!(canonical("notes://%zz").is_err());
    }
}
