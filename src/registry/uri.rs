//! Resource URIs and URI templates (RFC 6570) as far as routing a read needs them: which
//! template a URI matches, and whether two plugins could claim the same URI.

/// One piece of a parsed template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `{var}`: one or more characters other than `/`, `?` and `#`.
    Segment,
    /// `{+var}`, `{#var}` and the other operators: any characters, possibly none.
    Any,
}

/// A URI template a plugin declared, parsed for matching.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

/// Checks that `uri` is an absolute URI: a scheme, `:`, then no whitespace or control characters.
pub fn check_uri(uri: &str) -> Result<(), String> {
    let Some((scheme, _)) = uri.split_once(':') else {
        return Err(format!("resource URI {uri:?} is not absolute: it needs a scheme such as `notes:` or `file:`"));
    };
    check_scheme(uri, scheme)?;
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("resource URI {uri:?} contains whitespace or control characters"));
    }
    Ok(())
}

fn check_scheme(what: &str, scheme: &str) -> Result<(), String> {
    let mut chars = scheme.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!("{what:?} does not start with a URI scheme (letters, digits, `+`, `-`, `.`, then `:`)"))
    }
}

impl UriTemplate {
    /// Parses `template`, which must start with a literal scheme (`notes://{id}`, not `{scheme}:...`).
    pub fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}').ok_or_else(|| format!("resource template {template:?} has a `{{` without its `}}`"))?;
                    let expression = &rest[1..end];
                    let (operator, names) = match expression.chars().next() {
                        Some(op @ ('+' | '#' | '.' | '/' | ';' | '?' | '&')) => (Some(op), &expression[1..]),
                        _ => (None, expression),
                    };
                    let valid_name = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%' | '*' | ':'));
                    if !names.split(',').all(valid_name) {
                        return Err(format!("resource template {template:?} has an invalid expression `{{{expression}}}`"));
                    }
                    parts.push(if operator.is_none() { Part::Segment } else { Part::Any });
                    rest = &rest[end + 1..];
                }
                found => {
                    let end = found.unwrap_or(rest.len());
                    let literal = &rest[..end];
                    if literal.contains('}') {
                        return Err(format!("resource template {template:?} has a `}}` without its `{{`"));
                    }
                    parts.push(Part::Literal(literal.to_owned()));
                    rest = &rest[end..];
                }
            }
        }
        let parsed = UriTemplate { parts };
        let prefix = parsed.prefix();
        let scheme = prefix
            .split_once(':')
            .map(|(s, _)| s)
            .ok_or_else(|| format!("resource template {template:?} must start with a literal URI scheme, such as `notes://{{id}}`"))?;
        check_scheme(template, scheme)?;
        if template.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("resource template {template:?} contains whitespace or control characters"));
        }
        Ok(parsed)
    }

    /// The literal text before the first expression.
    pub fn prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(l)) => l,
            _ => "",
        }
    }

    /// Whether `uri` is one of the URIs this template expands to.
    pub fn matches(&self, uri: &str) -> bool {
        matches_from(&self.parts, uri)
    }

    /// Whether a URI could match both templates, judged conservatively: their literal
    /// prefixes overlap (one starts with the other).
    pub fn overlaps(&self, other: &UriTemplate) -> bool {
        let (a, b) = (self.prefix(), other.prefix());
        a.starts_with(b) || b.starts_with(a)
    }
}

fn matches_from(parts: &[Part], uri: &str) -> bool {
    match parts.split_first() {
        None => uri.is_empty(),
        Some((Part::Literal(l), rest)) => uri.strip_prefix(l.as_str()).is_some_and(|tail| matches_from(rest, tail)),
        Some((Part::Segment, rest)) => {
            let limit = uri.find(['/', '?', '#']).unwrap_or(uri.len());
            (1..=limit).rev().filter(|n| uri.is_char_boundary(*n)).any(|n| matches_from(rest, &uri[n..]))
        }
        Some((Part::Any, rest)) => (0..=uri.len()).rev().filter(|n| uri.is_char_boundary(*n)).any(|n| matches_from(rest, &uri[n..])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_what_they_expand_to() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert!(t.matches("test://template/123/data"));
        assert!(!t.matches("test://template//data"), "a variable is never empty");
        assert!(!t.matches("test://template/1/2/data"), "a simple variable stops at `/`");
        assert!(!t.matches("test://template/123/data2"));
        let t = UriTemplate::parse("file:///{+path}").unwrap();
        assert!(t.matches("file:///a/b/c.txt") && t.matches("file:///"));
        assert_eq!(t.prefix(), "file:///");
    }

    #[test]
    fn templates_must_be_well_formed_and_start_with_a_scheme() {
        assert!(UriTemplate::parse("{scheme}://x").unwrap_err().contains("literal URI scheme"));
        assert!(UriTemplate::parse("notes://{id").unwrap_err().contains("without its"));
        assert!(UriTemplate::parse("notes://{}").unwrap_err().contains("invalid expression"));
        assert!(UriTemplate::parse("notes://a}").is_err());
        assert!(UriTemplate::parse("notes://{a,b}/{?q}").is_ok());
    }

    #[test]
    fn overlapping_prefixes_are_conflicts() {
        let a = UriTemplate::parse("notes://{id}").unwrap();
        let b = UriTemplate::parse("notes://archive/{id}").unwrap();
        let c = UriTemplate::parse("mail://{id}").unwrap();
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c));
    }

    #[test]
    fn uris_must_be_absolute() {
        assert!(check_uri("test://static-text").is_ok());
        assert!(check_uri("urn:isbn:0451450523").is_ok());
        assert!(check_uri("static-text").is_err());
        assert!(check_uri("1x://a").is_err());
        assert!(check_uri("a://b c").is_err());
    }
}
