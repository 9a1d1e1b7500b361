//! `corral secrets` against the real binary on a SQLite file and on a throwaway PostgreSQL
//! database (`postgres::NAME`; skipped without a server unless `CORRAL_REQUIRE_POSTGRES` is
//! set, as in CI): set from standard input, list names and dates, delete, rotate the key, and
//! what is refused; what `set`, `delete` and `rotate-key` write in the audit trail. No value is
//! ever printed, audited or stored in the clear.

#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const VALUES: [&str; 3] = ["ghp_ada_0123456789abcdef", "ghp_bob_fedcba9876543210", "xoxb-ada-chat-777"];

/// A store (`--db`) and two key files.
struct Store {
    db: String,
    dir: tempfile::TempDir,
    /// Whether `db` is a SQLite file in `dir` (its bytes can be searched).
    file: bool,
}

impl Store {
    fn sqlite() -> Option<Store> {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("tasks.db").to_str().unwrap().to_owned();
        Some(Store::with(db, dir, true))
    }

    fn postgres() -> Option<Store> {
        pg_cluster::database_or_skip().map(|url| Store::with(url, tempfile::tempdir().unwrap(), false))
    }

    fn with(db: String, dir: tempfile::TempDir, file: bool) -> Store {
        std::fs::write(dir.path().join("old.key"), "6b1f3c2a9d8e7f60514233241506f7e8d9cabbac0d1e2f30415263748596a7b8\n").unwrap();
        std::fs::write(dir.path().join("new.key"), "0a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223242526272829").unwrap();
        Store { db, dir, file }
    }

    fn key(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `corral secrets ARGS --db DB [--secrets-key-file KEY]` with `stdin`.
    fn run(&self, args: &[&str], key: Option<&str>, stdin: &[u8]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
        cmd.args(["--log-level", "warn", "secrets"]).args(args).args(["--db", &self.db]);
        if let Some(key) = key {
            cmd.arg("--secrets-key-file").arg(self.key(key));
        }
        cmd.env_remove("CORRAL_DB").env_remove("CORRAL_SECRETS_KEY_FILE");
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        // A command that refuses its flags may exit before reading: that is no failure here.
        let _ = child.stdin.take().unwrap().write_all(stdin);
        child.wait_with_output().unwrap()
    }

    fn ok(&self, args: &[&str], key: Option<&str>, stdin: &[u8]) -> String {
        let out = self.run(args, key, stdin);
        assert!(out.status.success(), "corral secrets {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        no_values(&out);
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str], key: Option<&str>, stdin: &[u8], code: i32) -> String {
        let out = self.run(args, key, stdin);
        assert_eq!(out.status.code(), Some(code), "corral secrets {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        no_values(&out);
        String::from_utf8(out.stderr).unwrap()
    }

    fn list(&self, extra: &[&str]) -> Vec<Value> {
        let mut args = vec!["list", "--json"];
        args.extend_from_slice(extra);
        serde_json::from_str::<Value>(&self.ok(&args, None, b"")).unwrap().as_array().unwrap().clone()
    }

    /// Every byte the store holds: the SQLite file and its WAL, or the PostgreSQL rows.
    fn raw(&self) -> Vec<u8> {
        if self.file {
            let mut bytes = Vec::new();
            for entry in std::fs::read_dir(self.dir.path()).unwrap() {
                bytes.extend(std::fs::read(entry.unwrap().path()).unwrap_or_default());
            }
            bytes
        } else {
            pg_cluster::psql(&self.db, "SELECT holder, plugin, name, key_id, encode(nonce, 'escape'), encode(sealed, 'escape') FROM corral_secrets")
                .unwrap()
                .into_bytes()
        }
    }
}

fn no_values(out: &Output) {
    for bytes in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(bytes);
        for v in VALUES {
            assert!(!text.contains(v), "a value was printed: {text}");
        }
    }
}

fn names(listing: &[Value]) -> Vec<(String, String, String)> {
    listing.iter().map(|l| (l["principal"].as_str().unwrap().into(), l["plugin"].as_str().unwrap().into(), l["name"].as_str().unwrap().into())).collect()
}

fn set_list_delete_and_rotate(store: &Store) {
    let ada = "token:ada";
    let bob = "user:https://id.example/realm bob";
    store.ok(&["set", "tracker", "TRACKER_TOKEN", "--principal", ada], Some("old.key"), format!("{}\n", VALUES[0]).as_bytes());
    store.ok(&["set", "tracker", "TRACKER_TOKEN", "--principal", bob], Some("old.key"), VALUES[1].as_bytes());
    store.ok(&["set", "chat", "SLACK_TOKEN", "--principal", ada], Some("old.key"), VALUES[2].as_bytes());

    let all = store.list(&[]);
    let expected = |rows: &[(&str, &str, &str)]| rows.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect::<Vec<_>>();
    assert_eq!(names(&all), expected(&[(ada, "chat", "SLACK_TOKEN"), (ada, "tracker", "TRACKER_TOKEN"), (bob, "tracker", "TRACKER_TOKEN")]));
    assert!(all[0]["createdAt"].as_str().unwrap().ends_with('Z') && all[0]["updatedAt"].is_string(), "{all:?}");
    assert_eq!(names(&store.list(&["--principal", bob])), expected(&[(bob, "tracker", "TRACKER_TOKEN")]));
    let table = store.ok(&["list"], Some("old.key"), b"");
    assert!(table.starts_with("PRINCIPAL") && table.contains("SLACK_TOKEN"), "{table}");

    let raw = store.raw();
    for v in VALUES {
        assert!(!raw.windows(v.len()).any(|w| w == v.as_bytes()), "{v} is stored in the clear");
    }

    // The wrong key is refused before anything is written; so is a missing key for `set`.
    let e = store.fails(&["set", "tracker", "TRACKER_TOKEN", "--principal", ada], Some("new.key"), b"other", 2);
    assert!(e.contains("sealed under key id") && e.contains("it is not their key"), "{e}");
    let e = store.fails(&["set", "tracker", "X", "--principal", ada], None, b"v", 2);
    assert!(e.contains("needs --secrets-key-file"), "{e}");
    assert_eq!(store.list(&[]).len(), 3);

    // Rotation: afterwards the new key is the only one accepted, and every secret is still there.
    let e = store.fails(&["rotate-key", "--new-key-file", store.key("old.key").to_str().unwrap()], Some("old.key"), b"", 2);
    assert!(e.contains("already in use"), "{e}");
    let said = store.run(&["rotate-key", "--new-key-file", store.key("new.key").to_str().unwrap()], Some("old.key"), b"");
    assert!(said.status.success(), "{}", String::from_utf8_lossy(&said.stderr));
    assert!(String::from_utf8_lossy(&said.stderr).contains("encrypted 3 secrets again"), "{}", String::from_utf8_lossy(&said.stderr));
    let e = store.fails(&["list"], Some("old.key"), b"", 2);
    assert!(e.contains("it is not their key"), "{e}");
    store.ok(&["list"], Some("new.key"), b"");
    store.ok(&["set", "tracker", "TRACKER_TOKEN", "--principal", ada], Some("new.key"), VALUES[0].as_bytes());
    let after = store.list(&[]);
    assert_eq!(after.len(), 3);
    assert_eq!(after[1]["createdAt"], all[1]["createdAt"], "a rotation and a new value keep when it was first set");

    assert!(store.fails(&["delete", "chat", "SLACK_TOKEN", "--principal", bob], None, b"", 1).contains("has no secret SLACK_TOKEN"));
    store.ok(&["delete", "chat", "SLACK_TOKEN", "--principal", ada], Some("new.key"), b"");
    assert_eq!(names(&store.list(&["--principal", ada])), expected(&[(ada, "tracker", "TRACKER_TOKEN")]));
}

fn bad_input_is_refused_with_its_reason(store: &Store) {
    store.ok(&["set", "tracker", "T", "--principal", "token:ada"], Some("old.key"), b"first");
    let set =
        |principal: &str, plugin: &str, name: &str, value: &[u8]| store.fails(&["set", plugin, name, "--principal", principal], Some("old.key"), value, 2);
    assert!(set("ada", "tracker", "T", b"v").contains("is not a principal"));
    assert!(set("session:abc", "tracker", "T", b"v").contains("cannot hold secrets"));
    assert!(set("modern:token:ada", "tracker", "T", b"v").contains("is not a principal"));
    assert!(set("token:ada", "../etc", "T", b"v").contains("is not a plugin name"));
    assert!(set("token:ada", "tracker", "NOT-A-NAME", b"v").contains("is not a secret name"));
    assert!(set("token:ada", "tracker", "T", b"\n").contains("the value is empty"));
    assert!(set("token:ada", "tracker", "T", &vec![b'x'; 20_000]).contains("at most 16384"));
    assert!(set("token:ada", "tracker", "T", b"a\0b").contains("not UTF-8 text without NUL"));
    std::fs::write(store.key("short.key"), "abc\n").unwrap();
    let e = store.fails(&["list"], Some("short.key"), b"", 2);
    assert!(e.contains("short.key") && e.contains("openssl rand -hex 32"), "{e}");
    assert!(store.fails(&["list"], Some("absent.key"), b"", 2).contains("cannot read"));
    assert_eq!(names(&store.list(&[])), vec![("token:ada".into(), "tracker".into(), "T".into())], "nothing else was stored");
}

/// The records of `path`, the audit trail `--audit-log` wrote.
fn audit_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn set_delete_and_rotate_are_audited_by_name_only(store: &Store) {
    let trail = store.key("audit.log");
    let t = trail.to_str().unwrap();
    // The arguments, then who acts and where it is recorded.
    macro_rules! audited {
        ($($arg:expr),*) => { &[$($arg,)* "--operator", "ops-ada", "--audit-log", t][..] };
    }
    let ada = "token:ada";
    let new_key = store.key("new.key");
    let new_key = new_key.to_str().unwrap();
    store.ok(audited!("set", "tracker", "TRACKER_TOKEN", "--principal", ada), Some("old.key"), VALUES[0].as_bytes());
    // Refused: the wrong key (nothing stored), and a delete of a secret there is not.
    store.fails(audited!("set", "tracker", "TRACKER_TOKEN", "--principal", ada), Some("new.key"), VALUES[1].as_bytes(), 2);
    store.fails(audited!("delete", "chat", "SLACK_TOKEN", "--principal", ada), None, b"", 1);
    store.ok(audited!("rotate-key", "--new-key-file", new_key), Some("old.key"), b"");
    store.ok(audited!("delete", "tracker", "TRACKER_TOKEN", "--principal", ada), None, b"");
    // Without --audit-log nothing is written anywhere.
    store.ok(&["set", "chat", "SLACK_TOKEN", "--principal", ada], Some("new.key"), VALUES[2].as_bytes());

    let records = audit_records(&trail);
    let seen: Vec<_> = records
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or("").to_owned();
            (field("kind"), field("operator"), field("action"), field("outcome"), field("principal"), field("plugin"), field("secret"))
        })
        .collect();
    let row = |action: &str, outcome: &str, plugin: &str, secret: &str| {
        let principal = if plugin.is_empty() { "" } else { ada };
        ("operator".to_owned(), "ops-ada".to_owned(), action.to_owned(), outcome.to_owned(), principal.to_owned(), plugin.to_owned(), secret.to_owned())
    };
    assert_eq!(
        seen,
        vec![
            row("secret-set", "done", "tracker", "TRACKER_TOKEN"),
            row("secret-set", "refused", "tracker", "TRACKER_TOKEN"),
            row("secret-delete", "refused", "chat", "SLACK_TOKEN"),
            row("secret-rotate-key", "done", "", ""),
            row("secret-delete", "done", "tracker", "TRACKER_TOKEN"),
        ],
        "{records:?}"
    );
    assert!(records[1]["detail"].as_str().unwrap().contains("it is not their key"), "{records:?}");
    assert_eq!(records[2]["detail"], "no such secret");
    assert!(records[3]["detail"].as_str().unwrap().contains("1 secret sealed again"), "{records:?}");
    let bytes = std::fs::read(&trail).unwrap();
    for v in VALUES {
        assert!(!bytes.windows(v.len()).any(|w| w == v.as_bytes()), "{v} is in the audit trail");
    }
    let e = store.fails(&["delete", "tracker", "X", "--principal", ada, "--audit-log", "/nonexistent/dir/audit.log"], None, b"", 2);
    assert!(e.contains("--audit-log /nonexistent/dir/audit.log"), "{e}");
    let e = store.fails(&["delete", "tracker", "X", "--principal", ada, "--operator", "two words"], None, b"", 2);
    assert!(e.contains("without spaces"), "{e}");
}

#[test]
fn a_missing_sqlite_file_is_created_only_by_set() {
    let store = Store::sqlite().unwrap();
    let e = store.fails(&["list"], None, b"", 2);
    assert!(e.contains("no such file"), "{e}");
    assert!(!Path::new(&store.db).exists());
    store.ok(&["set", "tracker", "T", "--principal", "local"], Some("old.key"), b"v");
    assert_eq!(names(&store.list(&[])), vec![("local".into(), "tracker".into(), "T".into())]);
}

/// Each scenario on a SQLite file and on PostgreSQL.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { if let Some(store) = super::Store::sqlite() { super::$name(&store) } } )*
        }
        mod postgres {
            $( #[test] fn $name() { if let Some(store) = super::Store::postgres() { super::$name(&store) } } )*
        }
    };
}

on_both_stores!(set_list_delete_and_rotate, bad_input_is_refused_with_its_reason, set_delete_and_rotate_are_audited_by_name_only);
