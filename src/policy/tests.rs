use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::principal::{Principal, User};

fn policy(text: &str) -> Policy {
    parse(text, Path::new("policy.toml")).unwrap_or_else(|e| panic!("{e}"))
}

fn refused(text: &str) -> String {
    parse(text, Path::new("policy.toml")).expect_err("refused").to_string()
}

fn tool<'a>(plugin: &'a str, name: &'a str) -> Target<'a> {
    Target { kind: Kind::Tool, plugin, name }
}

fn user(issuer: &str, subject: &str, scopes: &[&str], groups: &[&str], client: Option<&str>) -> Principal {
    Principal::User(Arc::new(User {
        issuer: issuer.into(),
        subject: subject.into(),
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
        groups: groups.iter().map(|s| s.to_string()).collect(),
        client_id: client.map(str::to_owned),
    }))
}

const DENIED: Decision = Decision::Deny(Denial { deny_rule: None, hide: false });

#[test]
fn what_no_rule_allows_is_denied_a_deny_wins_and_plugins_cover_all_they_serve() {
    let p = policy(
        r#"
        [[allow]]
        who = { token = ["ci", "bot"] }
        plugins = "calc"
        tools = ["echo*"]
        [[deny]]
        name = "no deleting"
        who = { token = "bot" }
        tools = "*_delete"
        "#,
    );
    let (ci, bot, other) = (Principal::Token("ci".into()), Principal::Token("bot".into()), Principal::Token("x".into()));
    assert_eq!(p.decide(&ci, &tool("calc", "add")), Decision::Allow);
    assert_eq!(p.decide(&ci, &tool("calc", "calc_delete")), Decision::Allow);
    assert_eq!(p.decide(&bot, &tool("calc", "calc_delete")), Decision::Deny(Denial { deny_rule: Some(Some("no deleting".into())), hide: false }));
    assert_eq!(p.decide(&ci, &tool("util", "echo_loud")), Decision::Allow);
    assert_eq!(p.decide(&ci, &tool("util", "shout")), DENIED);
    assert_eq!(p.decide(&other, &tool("calc", "add")), DENIED);
    assert_eq!(p.decide(&Principal::Local, &tool("calc", "add")), DENIED);
    assert_eq!(p.decide(&Principal::Anonymous, &tool("calc", "add")), DENIED);
    let resource = Target { kind: Kind::Resource, plugin: "util", name: "echo://x" };
    assert_eq!(p.decide(&ci, &resource), DENIED, "tool patterns do not cover resources");
    assert_eq!(p.decide(&ci, &Target { kind: Kind::Resource, plugin: "calc", name: "calc://pi" }), Decision::Allow);
}

#[test]
fn oauth_users_match_on_issuer_subject_scope_group_and_client_and_every_given_key_must_match() {
    let p = policy(
        r#"
        [[allow]]
        who = { issuer = "https://id.example", group = ["ops", "admins"] }
        plugins = "*"
        tasks = "any"
        [[allow]]
        who = { scope = "tools:calc", client = "vscode" }
        plugins = "calc"
        [[allow]]
        who = { subject = "ada" }
        prompts = "greet"
        "#,
    );
    let ops = user("https://id.example", "bob", &[], &["ops"], None);
    let foreign_ops = user("https://other.example", "bob", &[], &["ops"], None);
    assert_eq!(p.decide(&ops, &tool("any", "thing")), Decision::Allow);
    assert!(p.steers_any_task(&ops));
    assert_eq!(p.decide(&foreign_ops, &tool("any", "thing")), DENIED, "the issuer must match too");
    assert!(!p.steers_any_task(&foreign_ops));
    let scoped = user("https://other.example", "carol", &["openid", "tools:calc"], &[], Some("vscode"));
    assert_eq!(p.decide(&scoped, &tool("calc", "add")), Decision::Allow);
    let wrong_client = user("https://other.example", "carol", &["tools:calc"], &[], Some("cli"));
    assert_eq!(p.decide(&wrong_client, &tool("calc", "add")), DENIED);
    let no_client = user("https://other.example", "carol", &["tools:calc"], &[], None);
    assert_eq!(p.decide(&no_client, &tool("calc", "add")), DENIED, "a rule naming a client needs one");
    let ada = user("https://any.example", "ada", &[], &[], None);
    assert_eq!(p.decide(&ada, &Target { kind: Kind::Prompt, plugin: "p", name: "greet" }), Decision::Allow);
    assert!(!p.steers_any_task(&Principal::Token("ops".into())), "a token is not an OAuth user");
}

#[test]
fn hide_comes_from_the_deny_rule_or_the_file_and_limits_from_the_first_limit_for_the_principal() {
    let p = policy(
        r#"
        hide = true
        [[allow]]
        who = { local = true }
        tools = "*"
        [[deny]]
        who = { local = true }
        tools = "secret"
        hide = false
        [[limit]]
        name = "local calls"
        who = { local = true }
        rate = "3/min"
        max-active-tasks = 2
        [[limit]]
        who = { anyone = true }
        rate = "100/s"
        burst = 5
        "#,
    );
    assert_eq!(p.decide(&Principal::Local, &tool("x", "secret")), Decision::Deny(Denial { deny_rule: Some(None), hide: false }));
    assert_eq!(p.decide(&Principal::Token("t".into()), &tool("x", "y")), Decision::Deny(Denial { deny_rule: None, hide: true }));
    let local = p.limit(&Principal::Local).unwrap();
    assert_eq!((local.rate, local.max_active_tasks), (Some(Rate { per_second: 0.05, burst: 3 }), Some(2)));
    let anyone = p.limit(&Principal::Anonymous).unwrap();
    assert_eq!((anyone.rate, anyone.max_active_tasks), (Some(Rate { per_second: 100.0, burst: 5 }), None));
}

#[test]
fn mistakes_are_refused_with_the_file_line_and_key() {
    let cases: &[(&str, &str)] = &[
        ("[[allow]]\nwho = { token = \"ci\" }\ntools = [\"a\"]\ntoolz = 1\n", "policy.toml:4: unknown field `toolz`"),
        ("[[allow]]\nwho = { token = \"ci\" }\n", "policy.toml:1: allow[1]: the rule covers nothing"),
        ("[[allow]]\ntools = \"*\"\n", "policy.toml:1: allow[1].who: missing `who`"),
        ("[[allow]]\nwho = {}\ntools = \"*\"\n", "policy.toml:2: allow[1].who: names no one"),
        ("[[allow]]\nwho = { anyone = true, token = \"ci\" }\ntools = \"*\"\n", "policy.toml:2: allow[1].who: `anyone = true` already matches"),
        ("[[allow]]\nwho = { token = \"ci\", group = \"ops\" }\ntools = \"*\"\n", "policy.toml:2: allow[1].who: no principal is at once"),
        ("[[allow]]\nwho = { local = true }\ntools = \"*\"\nhide = true\n", "policy.toml:4: allow[1].hide: `hide` belongs on [[deny]]"),
        ("[[deny]]\nwho = { local = true }\ntools = \"*\"\ntasks = \"any\"\n", "policy.toml:4: deny[1].tasks: only an [[allow]] rule"),
        ("[[allow]]\nwho = { local = true }\ntasks = \"all\"\n", "policy.toml:3: allow[1].tasks: `all` is not a task grant"),
        (
            "[[limit]]\nwho = { local = true }\nmax-active-tasks = 1\n[[limit]]\nwho = { local = true }\nrate = \"5/fortnight\"\n",
            "policy.toml:6: limit[2].rate: `5/fortnight` is not a rate",
        ),
        ("[[limit]]\nwho = { local = true }\nburst = 3\n", "policy.toml:3: limit[1].burst: `burst` needs a `rate`"),
        ("[[limit]]\nwho = { local = true }\nrate = \"1/s\"\nburst = 0\n", "policy.toml:4: limit[1].burst: 0 is not a burst"),
        ("[[limit]]\nwho = { local = true }\nmax-active-tasks = 0\n", "policy.toml:3: limit[1].max-active-tasks: 0 is not a task cap"),
        ("[[limit]]\nwho = { local = true }\n", "policy.toml:1: limit[1]: the limit limits nothing"),
        ("hide = \"yes\"\n", "policy.toml:1: invalid type: string \"yes\", expected a boolean"),
        ("[[allow]\n", "policy.toml:1: "),
    ];
    for (text, expected) in cases {
        let error = refused(text);
        assert!(error.starts_with(expected), "{text:?}\n  gave {error}\n  wanted {expected}…");
    }
    let missing = load(Path::new("/nonexistent/policy.toml")).unwrap_err().to_string();
    assert!(missing.starts_with("/nonexistent/policy.toml: cannot read the policy file:"), "{missing}");
}

#[test]
fn patterns_match_whole_names_with_stars_anywhere() {
    use super::rules::Pattern;
    for (pattern, name, matches) in [
        ("calc", "calc", true),
        ("calc", "calc2", false),
        ("calc*", "calc_add", true),
        ("*_delete", "files_delete", true),
        ("*_delete", "files_delete_all", false),
        ("a*b*c", "a-b-c", true),
        ("a*b*c", "a-c", false),
        ("*", "", true),
        ("ab*ba", "aba", false),
        ("ab*ba", "abba", true),
        ("a**b", "ab", true),
        ("*a*", "bab", true),
        ("*a*", "bbb", false),
        ("x*", "y", false),
        ("file:///docs/*", "file:///docs/a/b.md", true),
    ] {
        assert_eq!(Pattern::new(pattern).matches(name), matches, "{pattern} ~ {name}");
    }
}

#[tokio::test]
async fn a_broken_edit_keeps_the_last_good_policy_and_a_fixed_one_applies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, "[[allow]]\nwho = { local = true }\ntools = \"a\"\n").unwrap();
    let policies = Arc::new(Policies::new(Some(load(&path).unwrap())));
    let mut reloads = policies.reloads();
    let _watcher = watch(&path, policies.clone()).unwrap();
    let allowed = |name: &str| policies.current().unwrap().decide(&Principal::Local, &tool("p", name)) == Decision::Allow;
    assert!(allowed("a") && !allowed("b"));

    // The next reload that `wanted` accepts (a write may be seen as more than one change).
    let until = async |reloads: &mut tokio::sync::watch::Receiver<Reload>, wanted: fn(&Reload) -> bool| loop {
        tokio::time::timeout(std::time::Duration::from_secs(60), reloads.changed()).await.expect("the watcher reloads").unwrap();
        let reload = reloads.borrow_and_update().clone();
        if wanted(&reload) {
            return reload;
        }
    };
    std::fs::write(&path, "[[allow]]\nwho = { local = true }\ntools = \"a\"\nbogus = 1\n").unwrap();
    let Reload::Refused(_, error) = until(&mut reloads, |r| matches!(r, Reload::Refused(..))).await else { unreachable!() };
    assert_eq!((error.line, error.file.file_name().unwrap().to_str()), (Some(4), Some("policy.toml")), "{error}");
    assert!(error.message.contains("unknown field `bogus`"), "{error}");
    assert!(allowed("a") && !allowed("b"), "the last good policy stays");

    // Replaced the way editors do: written beside, then renamed over it.
    let beside = dir.path().join(".policy.toml.swp");
    std::fs::write(&beside, "[[allow]]\nwho = { local = true }\ntools = [\"a\", \"b\"]\n").unwrap();
    std::fs::rename(&beside, &path).unwrap();
    until(&mut reloads, |r| matches!(r, Reload::Applied(_))).await;
    assert!(allowed("a") && allowed("b"));
}

#[test]
fn a_rule_on_a_uri_template_covers_the_uris_it_expands_to() {
    let p = policy(
        r#"
        [[allow]]
        who = { anyone = true }
        plugins = "*"
        [[deny]]
        who = { anyone = true }
        resources = ["notes://{id}", "notes://alpha"]
        "#,
    );
    let resource = |name| Target { kind: Kind::Resource, plugin: "notes", name };
    let anyone = Principal::Anonymous;
    for refused in ["notes://{id}", "notes://beta", "notes://alpha", "notes://a%2Fb"] {
        assert!(matches!(p.decide(&anyone, &resource(refused)), Decision::Deny(_)), "{refused}");
    }
    for allowed in ["notes://archive/2024", "mail://beta", "notes://"] {
        assert_eq!(p.decide(&anyone, &resource(allowed)), Decision::Allow, "{allowed}: not an expansion of notes://{{id}}");
    }
}

#[test]
fn a_resource_rule_must_be_a_template_or_a_uri_in_canonical_form() {
    let rule = |resources: &str| format!("[[deny]]\nwho = {{ anyone = true }}\nresources = [{resources:?}]\n");
    let message = refused(&rule("notes://%61lpha"));
    assert!(message.contains("deny[1].resources") && message.contains("\"notes://alpha\""), "{message}");
    assert!(refused(&rule("NOTES://alpha")).contains("\"notes://alpha\""));
    assert!(refused(&rule("notes://{id")).contains("without its"));
    assert!(refused(&rule("alpha")).contains("not an absolute URI"));
    policy(&rule("notes://*"));
    policy(&rule("notes://{+path}"));
}
