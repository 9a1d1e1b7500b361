//! URI templates (RFC 6570) as far as routing a read and a policy rule need them: which
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

/// Whether `uri` matches `parts`, in one pass per part over the positions reachable so far
/// (O(parts × length)): backtracking was exponential in the number of expressions, so a
/// client's URI that fails to match a template such as `x://{+a}{+b}{+c}…` could hold a worker
/// for minutes (found by the `uri_template` fuzz target).
fn matches_from(parts: &[Part], uri: &str) -> bool {
    let n = uri.len();
    // `separator_from[q]`: the first `/`, `?` or `#` at or after `q` (`n` when none).
    let mut separator_from = vec![n; n + 1];
    for q in (0..n).rev() {
        separator_from[q] = if matches!(uri.as_bytes()[q], b'/' | b'?' | b'#') { q } else { separator_from[q + 1] };
    }
    // `reach[q]`: the parts so far can match exactly `uri[..q]`. Every such `q` is a char boundary.
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for part in parts {
        let mut next = vec![false; n + 1];
        match part {
            Part::Literal(l) => {
                for p in (0..=n).filter(|&p| reach[p] && uri[p..].starts_with(l.as_str())) {
                    next[p + l.len()] = true;
                }
            }
            // From each reachable `p`: one or more characters up to the next separator.
            Part::Segment => {
                let mut covered_to: Option<usize> = None;
                for q in 0..=n {
                    next[q] = covered_to.is_some_and(|c| q <= c) && uri.is_char_boundary(q);
                    if reach[q] {
                        covered_to = Some(covered_to.map_or(separator_from[q], |c| c.max(separator_from[q])));
                    }
                }
            }
            // From the first reachable position: anything, possibly nothing.
            Part::Any => {
                if let Some(first) = reach.iter().position(|&r| r) {
                    for q in (first..=n).filter(|&q| uri.is_char_boundary(q)) {
                        next[q] = true;
                    }
                }
            }
        }
        reach = next;
    }
    reach[n]
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

    #[test]
    fn many_expressions_match_in_linear_passes_not_by_backtracking() {
        let t = UriTemplate::parse("x://{+a}{+b}{+c}{+d}{+e}{+f}{+g}{+h}/end").unwrap();
        assert!(!t.matches(&format!("x://{}", "a".repeat(20_000))), "no `/end`: no match, found without backtracking");
        assert!(t.matches(&format!("x://{}/end", "a".repeat(20_000))));
        let t = UriTemplate::parse("x://{a}{b}/{c}").unwrap();
        assert!(t.matches("x://ab/c") && !t.matches("x://a/c"), "each simple variable takes at least one character");
        let t = UriTemplate::parse("x://{a}é{b}").unwrap();
        assert!(t.matches("x://ééé") && !t.matches("x://é"));
    }
}
