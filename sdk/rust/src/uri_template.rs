//! Taking a URI apart by an RFC 6570 template, as the host matches it: `{var}` is one or more
//! characters other than `/`, `?` and `#`; `{+var}`, `{#var}` and the other operators are any
//! characters, possibly none. Values are percent-decoded. Enough for templates a plugin lists;
//! not an RFC 6570 expander.

use std::collections::BTreeMap;

enum Part<'t> {
    Literal(&'t str),
    /// A variable name and whether it may hold any character (an operator was given).
    Var(&'t str, bool),
}

fn parts(template: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(Part::Literal(&rest[..open]));
        }
        let Some(close) = rest[open..].find('}') else {
            parts.push(Part::Literal(&rest[open..]));
            return parts;
        };
        let expr = &rest[open + 1..open + close];
        let wide = expr.starts_with(['+', '#', '.', '/', ';', '?', '&']);
        let name = expr.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']).trim_end_matches('*');
        parts.push(Part::Var(name, wide));
        rest = &rest[open + close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest));
    }
    parts
}

/// The variables of `uri` by `template`, or `None` when it does not match.
pub(crate) fn matches(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let parts = parts(template);
    let mut vars = BTreeMap::new();
    walk(&parts, uri, &mut vars).then_some(vars)
}

fn walk(parts: &[Part<'_>], uri: &str, vars: &mut BTreeMap<String, String>) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(lit), rest)) => uri.strip_prefix(lit).is_some_and(|tail| walk(rest, tail, vars)),
        Some((Part::Var(name, wide), rest)) => {
            // The shortest value that lets the rest match: templates rarely need more.
            let ends = uri.char_indices().map(|(i, _)| i).chain([uri.len()]);
            for end in ends {
                let value = &uri[..end];
                if !wide && (value.contains(['/', '?', '#'])) {
                    return false;
                }
                if !wide && value.is_empty() {
                    continue;
                }
                if walk(rest, &uri[end..], vars) {
                    vars.insert((*name).to_owned(), decode(value));
                    return true;
                }
            }
            false
        }
    }
}

fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn simple_variables_stop_at_slashes_and_wide_ones_do_not() {
        let vars = matches("notes://{id}", "notes://a%20b").unwrap();
        assert_eq!(vars["id"], "a b");
        assert!(matches("notes://{id}", "notes://a/b").is_none());
        assert!(matches("notes://{id}", "notes://").is_none());
        assert_eq!(matches("files://{+path}", "files://a/b/c").unwrap()["path"], "a/b/c");
        let vars = matches("db://{table}/{row}.json", "db://users/7.json").unwrap();
        assert_eq!((vars["table"].as_str(), vars["row"].as_str()), ("users", "7"));
        assert!(matches("db://{table}/{row}.json", "other://users/7.json").is_none());
    }
}
