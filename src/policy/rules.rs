//! A parsed policy and its decisions. Everything is compiled when the file is read: a decision
//! walks a few rules comparing strings and touches no store; only a rule on a URI template
//! matches a URI against it (`crate::uri::UriTemplate`, linear in the URI).

use crate::principal::Principal;
use crate::uri::{canonical, UriTemplate};

use super::bucket::Rate;

/// What kind of thing a target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tool, by its served name.
    Tool,
    /// A resource, by its URI, or a resource template, by its URI template.
    Resource,
    /// A prompt, by its name.
    Prompt,
}

impl Kind {
    /// The word for it in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Resource => "resource",
            Kind::Prompt => "prompt",
        }
    }
}

/// What a request lists or uses: a tool, resource or prompt of a plugin.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// Which kind of thing.
    pub kind: Kind,
    /// The plugin serving it.
    pub plugin: &'a str,
    /// Its served name (a tool or prompt), URI or URI template (a resource).
    pub name: &'a str,
}

/// The policy's answer for one principal and one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// An `allow` covers it and no `deny` does.
    Allow,
    /// Refused, and why.
    Deny(Denial),
}

/// Why a target was refused, as the client is told it (never the rule's line or text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    /// A `deny` rule covers the target (`Some`, with the rule's name when it has one), or no
    /// `allow` rule does (`None`).
    pub deny_rule: Option<Option<String>>,
    /// Whether to answer as if the target did not exist (the rule's or the file's `hide`).
    pub hide: bool,
}

impl Denial {
    /// The rule kind, as `data.rule` of the refusal names it: `deny` or `no-allow`.
    pub fn rule_kind(&self) -> &'static str {
        match self.deny_rule {
            Some(_) => "deny",
            None => "no-allow",
        }
    }
}

/// Which principals a rule is for. Every field given must match (a list: any of its values);
/// fields that no principal could hold at once (a token's name and an OAuth claim) are refused
/// when the file is read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Who {
    /// Every principal, authenticated or not.
    pub anyone: bool,
    /// The local user of a stdio connection.
    pub local: bool,
    /// Holders of these `--auth-tokens-file` tokens, by name.
    pub tokens: Vec<String>,
    /// OAuth users whose token one of these issuers issued (`iss`, exact).
    pub issuers: Vec<String>,
    /// OAuth users with one of these subjects (`sub`, exact).
    pub subjects: Vec<String>,
    /// OAuth users whose token grants one of these scopes.
    pub scopes: Vec<String>,
    /// OAuth users in one of these groups or roles.
    pub groups: Vec<String>,
    /// OAuth users whose token went to one of these clients (`client_id`/`azp`).
    pub clients: Vec<String>,
}

fn any_of(wanted: &[String], have: &str) -> bool {
    wanted.is_empty() || wanted.iter().any(|w| w == have)
}

fn any_in(wanted: &[String], have: &[String]) -> bool {
    wanted.is_empty() || wanted.iter().any(|w| have.contains(w))
}

impl Who {
    /// Whether the rule is for `principal`.
    pub fn matches(&self, principal: &Principal) -> bool {
        if self.anyone {
            return true;
        }
        match principal {
            Principal::Local => self.local,
            Principal::Token(name) => !self.tokens.is_empty() && any_of(&self.tokens, name),
            Principal::User(user) => {
                self.names_users()
                    && any_of(&self.issuers, &user.issuer)
                    && any_of(&self.subjects, &user.subject)
                    && any_in(&self.scopes, &user.scopes)
                    && any_in(&self.groups, &user.groups)
                    && user.client_id.as_deref().map_or(self.clients.is_empty(), |client| any_of(&self.clients, client))
            }
            // Unauthenticated HTTP clients have nothing to match but `anyone`.
            Principal::Session(_) | Principal::Anonymous => false,
        }
    }

    /// Whether any OAuth claim is named.
    pub(super) fn names_users(&self) -> bool {
        !(self.issuers.is_empty() && self.subjects.is_empty() && self.scopes.is_empty() && self.groups.is_empty() && self.clients.is_empty())
    }
}

/// A name pattern: `*` stands for any run of characters (`/` included), the rest is literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// The pattern `text`.
    pub fn new(text: &str) -> Pattern {
        Pattern(text.to_owned())
    }

    /// Whether `name` matches the whole pattern. Allocates nothing: it runs for every rule a
    /// call is checked against, and for every entry of a list.
    pub fn matches(&self, name: &str) -> bool {
        let pattern = self.0.as_str();
        let Some(star) = pattern.find('*') else { return pattern == name };
        let Some(mut rest) = name.strip_prefix(&pattern[..star]) else { return false };
        let after = &pattern[star + 1..];
        let (middle, last) = match after.rfind('*') {
            Some(at) => (&after[..at], &after[at + 1..]),
            None => ("", after),
        };
        for part in middle.split('*').filter(|part| !part.is_empty()) {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
        rest.len() >= last.len() && rest.ends_with(last)
    }
}

/// A rule's resource: a URI or URI template (or a `*` pattern of them); a URI template also
/// covers every URI it expands to (RFC 6570), so `notes://{id}` refuses reading `notes://beta`,
/// not only seeing the template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePattern {
    pattern: Pattern,
    template: Option<UriTemplate>,
}

impl ResourcePattern {
    /// The resource pattern `text`, or why it could never match: a URI template that does not
    /// parse, or a URI not written in the canonical form requests are compared in (which would
    /// never match, since every URI asked for is made canonical first).
    pub fn new(text: &str) -> Result<ResourcePattern, String> {
        let template = if text.contains('{') {
            Some(UriTemplate::parse(text)?)
        } else {
            if !text.contains('*') {
                let canonical = canonical(text)?;
                if canonical != text {
                    return Err(format!("{text:?} is not written as requests are compared: write {canonical:?} (the URI's canonical form)"));
                }
            }
            None
        };
        Ok(ResourcePattern { pattern: Pattern::new(text), template })
    }

    /// Whether `name` (a URI in its canonical form, or a template) is covered: it matches the
    /// pattern, or it is one of the URIs the template expands to.
    pub fn matches(&self, name: &str) -> bool {
        self.pattern.matches(name) || self.template.as_ref().is_some_and(|t| t.matches(name))
    }
}

/// What a rule covers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Covers {
    /// Everything these plugins serve.
    pub plugins: Vec<Pattern>,
    /// Tools, by served name.
    pub tools: Vec<Pattern>,
    /// Resources and templates, by URI or URI template; a template also covers what it expands to.
    pub resources: Vec<ResourcePattern>,
    /// Prompts, by name.
    pub prompts: Vec<Pattern>,
}

impl Covers {
    fn covers(&self, target: &Target<'_>) -> bool {
        self.plugins.iter().any(|p| p.matches(target.plugin))
            || match target.kind {
                Kind::Tool => self.tools.iter().any(|p| p.matches(target.name)),
                Kind::Resource => self.resources.iter().any(|p| p.matches(target.name)),
                Kind::Prompt => self.prompts.iter().any(|p| p.matches(target.name)),
            }
    }
}

/// One `[[limit]]`: whom it holds and to what.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// The rule's `name`, for logs.
    pub name: Option<String>,
    /// Where the rule starts in the file.
    pub line: usize,
    /// Whom it holds.
    pub who: Who,
    /// Calls (`tools/call`, `resources/read`, `prompts/get`, `completion/complete`) a principal
    /// may make, when limited.
    pub rate: Option<Rate>,
    /// Unfinished tasks a principal may have, when limited.
    pub max_active_tasks: Option<usize>,
}

/// One `[[allow]]` or `[[deny]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// The rule's `name`, shown in refusals and logs.
    pub name: Option<String>,
    /// Where the rule starts in the file (for the log).
    pub line: usize,
    /// Whom it is for.
    pub who: Who,
    /// What it covers.
    pub covers: Covers,
    /// An allow: whether its principals may steer every task (`tasks = "any"`). A deny: unused.
    pub any_task: bool,
    /// A deny: whether what it refuses answers as unknown (`None`: the file's `hide`).
    pub hide: Option<bool>,
}

/// A whole policy file, compiled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    /// Answer a refused target as if it did not exist, unless a deny rule says otherwise.
    pub hide: bool,
    /// `[[allow]]`, in file order.
    pub allows: Vec<Rule>,
    /// `[[deny]]`, in file order.
    pub denies: Vec<Rule>,
    /// `[[limit]]`, in file order: the first one for a principal applies.
    pub limits: Vec<Limit>,
}

impl Policy {
    /// Whether `principal` may list and use `target`.
    pub fn decide(&self, principal: &Principal, target: &Target<'_>) -> Decision {
        // Whom a rule is for is the cheaper question, and most rules are for someone else.
        if let Some(rule) = self.denies.iter().find(|r| r.who.matches(principal) && r.covers.covers(target)) {
            tracing::debug!(line = rule.line, rule = ?rule.name, kind = target.kind.as_str(), name = target.name, "denied by a deny rule");
            return Decision::Deny(Denial { deny_rule: Some(rule.name.clone()), hide: rule.hide.unwrap_or(self.hide) });
        }
        if self.allows.iter().any(|r| r.who.matches(principal) && r.covers.covers(target)) {
            return Decision::Allow;
        }
        Decision::Deny(Denial { deny_rule: None, hide: self.hide })
    }

    /// Whether `principal` may read and steer tasks it does not own (an operator).
    pub fn steers_any_task(&self, principal: &Principal) -> bool {
        self.allows.iter().any(|r| r.any_task && r.who.matches(principal))
    }

    /// The limits `principal` is held to: the first `[[limit]]` for it.
    pub fn limit(&self, principal: &Principal) -> Option<&Limit> {
        self.limits.iter().find(|l| l.who.matches(principal))
    }
}
