//! The policy file: TOML, read into [`Policy`] with every mistake refused precisely (file, line,
//! key and what to write instead), so that a broken edit is found from the log line alone.
//!
//! ```toml
//! hide = false                      # refused targets answer "denied", not "unknown"
//!
//! [[allow]]
//! name = "ci runs the calculators"
//! who = { token = "ci" }            # or local, anyone, issuer, subject, scope, group, client
//! plugins = ["calc*"]               # everything these plugins serve
//! tools = ["echo"]                  # and these tools (resources, prompts likewise)
//!
//! [[allow]]
//! who = { group = "ops", issuer = "https://id.example" }
//! plugins = ["*"]
//! tasks = "any"                     # operators: may steer every principal's tasks
//!
//! [[deny]]
//! who = { anyone = true }
//! tools = ["*_delete"]
//! hide = true                       # answer as if these did not exist
//!
//! [[limit]]
//! who = { token = "ci" }
//! rate = "10/s"                     # calls; burst defaults to the count (10)
//! burst = 20
//! max-active-tasks = 4
//! ```

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::bucket::Rate;
use super::rules::{Covers, Limit, Pattern, Policy, ResourcePattern, Rule, Who};

/// Why a policy file was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyError {
    /// The file.
    pub file: PathBuf,
    /// The line the mistake is on, when known.
    pub line: Option<usize>,
    /// The key refused, as a path (`limit[2].rate`: the second `[[limit]]`), when known.
    pub key: Option<String>,
    /// What is wrong, and what to write instead.
    pub message: String,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        f.write_str(": ")?;
        if let Some(key) = &self.key {
            write!(f, "{key}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for PolicyError {}

/// Reads and compiles the policy file at `path`.
pub fn load(path: &Path) -> Result<Policy, PolicyError> {
    let text = std::fs::read_to_string(path).map_err(|e| PolicyError {
        file: path.to_owned(),
        line: None,
        key: None,
        message: format!("cannot read the policy file: {e}"),
    })?;
    parse(&text, path)
}

/// One string or a list of them.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

fn strings(value: Option<OneOrMany>) -> Vec<String> {
    value.map(OneOrMany::into_vec).unwrap_or_default()
}

fn patterns(value: Option<OneOrMany>) -> Vec<Pattern> {
    strings(value).iter().map(|p| Pattern::new(p)).collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    hide: Option<bool>,
    #[serde(default)]
    allow: Vec<Spanned<RuleFile>>,
    #[serde(default)]
    deny: Vec<Spanned<RuleFile>>,
    #[serde(default)]
    limit: Vec<Spanned<LimitFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WhoFile {
    anyone: Option<bool>,
    local: Option<bool>,
    token: Option<OneOrMany>,
    issuer: Option<OneOrMany>,
    subject: Option<OneOrMany>,
    scope: Option<OneOrMany>,
    group: Option<OneOrMany>,
    client: Option<OneOrMany>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    name: Option<String>,
    who: Option<Spanned<WhoFile>>,
    plugins: Option<OneOrMany>,
    tools: Option<OneOrMany>,
    resources: Option<OneOrMany>,
    prompts: Option<OneOrMany>,
    tasks: Option<Spanned<String>>,
    hide: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct LimitFile {
    name: Option<String>,
    who: Option<Spanned<WhoFile>>,
    rate: Option<Spanned<String>>,
    burst: Option<Spanned<i64>>,
    max_active_tasks: Option<Spanned<i64>>,
}

/// Compiles the policy `text` read from `file`.
pub fn parse(text: &str, file: &Path) -> Result<Policy, PolicyError> {
    let line_of = |span: Range<usize>| text[..span.start.min(text.len())].matches('\n').count() + 1;
    let error = |span: Range<usize>, key: String, message: String| PolicyError { file: file.to_owned(), line: Some(line_of(span)), key: Some(key), message };
    let parsed: PolicyFile = toml::from_str(text).map_err(|e| PolicyError {
        file: file.to_owned(),
        line: e.span().map(line_of),
        key: None,
        message: e.message().trim_end().to_owned(),
    })?;
    let mut policy = Policy { hide: parsed.hide.unwrap_or(false), ..Policy::default() };
    for (table, rules) in [("allow", parsed.allow), ("deny", parsed.deny)] {
        for (index, rule) in rules.into_iter().enumerate() {
            let span = rule.span();
            let at = format!("{table}[{}]", index + 1);
            let rule = rule.into_inner();
            let who = who(rule.who, span.clone(), &at).map_err(|(span, key, message)| error(span, key, message))?;
            let resources = strings(rule.resources).iter().map(|r| ResourcePattern::new(r)).collect::<Result<Vec<_>, _>>();
            let resources = resources.map_err(|message| error(span.clone(), format!("{at}.resources"), message))?;
            let covers = Covers { plugins: patterns(rule.plugins), tools: patterns(rule.tools), resources, prompts: patterns(rule.prompts) };
            let any_task = match rule.tasks {
                None => false,
                Some(tasks) if table == "deny" => return Err(error(tasks.span(), format!("{at}.tasks"), "only an [[allow]] rule takes `tasks`".into())),
                Some(tasks) if tasks.get_ref() == "any" => true,
                Some(tasks) => {
                    return Err(error(
                        tasks.span(),
                        format!("{at}.tasks"),
                        format!("`{}` is not a task grant: write tasks = \"any\" (steer every principal's tasks), or leave it out", tasks.get_ref()),
                    ))
                }
            };
            if covers == Covers::default() && !any_task {
                let message = "the rule covers nothing: give plugins, tools, resources or prompts (names or `*` patterns)";
                return Err(error(span, at, message.into()));
            }
            let hide = match rule.hide {
                Some(hide) if table == "allow" => {
                    return Err(error(hide.span(), format!("{at}.hide"), "`hide` belongs on [[deny]] rules or at the top of the file".into()))
                }
                hide => hide.map(Spanned::into_inner),
            };
            let compiled = Rule { name: rule.name, line: line_of(span), who, covers, any_task, hide };
            match table {
                "allow" => policy.allows.push(compiled),
                _ => policy.denies.push(compiled),
            }
        }
    }
    for (index, limit) in parsed.limit.into_iter().enumerate() {
        let span = limit.span();
        let at = format!("limit[{}]", index + 1);
        let limit = limit.into_inner();
        let who = who(limit.who, span.clone(), &at).map_err(|(span, key, message)| error(span, key, message))?;
        let rate = match (limit.rate, limit.burst) {
            (None, None) => None,
            (None, Some(burst)) => return Err(error(burst.span(), format!("{at}.burst"), "`burst` needs a `rate`, e.g. rate = \"10/s\"".into())),
            (Some(rate), burst) => {
                let per_second = Rate::per(rate.get_ref()).map_err(|message| error(rate.span(), format!("{at}.rate"), message))?;
                let count = rate.get_ref().split_once('/').and_then(|(n, _)| n.trim().parse::<f64>().ok()).unwrap_or(1.0);
                let burst = match burst {
                    None => count.ceil().clamp(1.0, u32::MAX as f64) as u32,
                    Some(burst) => u32::try_from(*burst.get_ref()).ok().filter(|b| *b >= 1).ok_or_else(|| {
                        error(burst.span(), format!("{at}.burst"), format!("{} is not a burst: the calls allowed at once, at least 1", burst.get_ref()))
                    })?,
                };
                Some(Rate { per_second, burst })
            }
        };
        let max_active_tasks = match limit.max_active_tasks {
            None => None,
            Some(max) => Some(usize::try_from(*max.get_ref()).ok().filter(|m| *m >= 1).ok_or_else(|| {
                let message = format!("{} is not a task cap: at least 1 (to forbid tasks, deny the tools)", max.get_ref());
                error(max.span(), format!("{at}.max-active-tasks"), message)
            })?),
        };
        if rate.is_none() && max_active_tasks.is_none() {
            return Err(error(span, at, "the limit limits nothing: give `rate` (and `burst`) or `max-active-tasks`".into()));
        }
        policy.limits.push(Limit { name: limit.name, line: line_of(span), who, rate, max_active_tasks });
    }
    Ok(policy)
}

type WhoError = (Range<usize>, String, String);

/// A rule's `who`, checked: it must name someone, and nothing no principal could be at once.
fn who(who: Option<Spanned<WhoFile>>, rule: Range<usize>, at: &str) -> Result<Who, WhoError> {
    let key = format!("{at}.who");
    let Some(who) = who else {
        return Err((rule, key, "missing `who`: e.g. who = { token = \"ci\" }, { group = \"ops\" }, { local = true } or { anyone = true }".into()));
    };
    let span = who.span();
    let w = who.into_inner();
    let compiled = Who {
        anyone: w.anyone.unwrap_or(false),
        local: w.local.unwrap_or(false),
        tokens: strings(w.token),
        issuers: strings(w.issuer),
        subjects: strings(w.subject),
        scopes: strings(w.scope),
        groups: strings(w.group),
        clients: strings(w.client),
    };
    let kinds = [compiled.local, !compiled.tokens.is_empty(), compiled.names_users()].iter().filter(|k| **k).count();
    if compiled.anyone && kinds > 0 {
        return Err((span, key, "`anyone = true` already matches every principal: drop the other keys".into()));
    }
    if !compiled.anyone && kinds == 0 {
        let message = "names no one: set anyone = true, local = true, token, or an OAuth claim (issuer, subject, scope, group, client)";
        return Err((span, key, message.into()));
    }
    if kinds > 1 {
        let message = "no principal is at once the local user, a token's holder and an OAuth user: write one rule for each";
        return Err((span, key, message.into()));
    }
    Ok(compiled)
}
