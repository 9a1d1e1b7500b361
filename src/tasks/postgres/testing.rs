//! A throwaway PostgreSQL server for tests, started by the test process itself: `initdb` and
//! `pg_ctl` (as the `postgres` user when run as root) in a temporary directory, listening on
//! 127.0.0.1 and a free port, with password authentication over TCP. A watchdog stops it and
//! removes the directory when the test process exits, however it exits.
//!
//! `CORRAL_TEST_POSTGRES=postgres://…` uses that server instead. Each caller of
//! [`fresh_database`] gets a database of its own.
//!
//! Plain `std`, so the integration tests include this same file (`#[path]`).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The password of the `postgres` role on a server started here.
pub const PASSWORD: &str = "corral-test";

/// A running server.
pub struct Server {
    /// `postgres://postgres:PASSWORD@127.0.0.1:PORT` (no database).
    pub base: String,
    /// The data directory (for tests that stop and start the server).
    pub data: Option<PathBuf>,
    /// `pg_ctl`, and whether it must run as the `postgres` user.
    pg_ctl: Option<(PathBuf, bool)>,
    /// The `postgres` options the server runs with.
    options: String,
}

static SERVER: OnceLock<Result<Server, String>> = OnceLock::new();

/// The shared server, started on first use; `Err` says why there is none.
pub fn server() -> Result<&'static Server, String> {
    SERVER.get_or_init(start).as_ref().map_err(Clone::clone)
}

/// The URL of a new, empty database on the shared server.
pub fn fresh_database() -> Result<String, String> {
    server()?.database()
}

/// A server of the caller's own, for a test that stops and starts it (never an external one).
pub fn private_server() -> Result<Server, String> {
    if std::env::var_os("CORRAL_TEST_POSTGRES").is_some() {
        return Err("CORRAL_TEST_POSTGRES names a server this test must not stop".into());
    }
    start_cluster()
}

/// Runs one SQL command with `psql` against `url`.
pub fn psql(url: &str, sql: &str) -> Result<String, String> {
    let out = Command::new("psql").args([url, "-v", "ON_ERROR_STOP=1", "-Atqc", sql]).output().map_err(|e| format!("psql: {e}"))?;
    if !out.status.success() {
        return Err(format!("psql {sql:?}: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A database of its own for a test that skips without a server: `None` after saying so on
/// the process's stderr, once (written there directly, which libtest does not capture), or a
/// panic under `CORRAL_REQUIRE_POSTGRES`, as in CI.
pub fn database_or_skip() -> Option<String> {
    match fresh_database() {
        Ok(url) => Some(url),
        Err(why) => {
            assert!(std::env::var_os("CORRAL_REQUIRE_POSTGRES").is_none(), "{}", skip_notice(&why));
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                use std::io::Write;
                let _ = std::io::stderr().write_all(format!("{}*** (every PostgreSQL test in this binary skips)\n", skip_notice(&why)).as_bytes());
            });
            None
        }
    }
}

/// The reason to give when a PostgreSQL test cannot run, loud enough to be seen in a log.
pub fn skip_notice(why: &str) -> String {
    format!("\n*** SKIPPED: no PostgreSQL for this test: {why}\n*** install postgresql-15 (apt-get install postgresql-15) or set CORRAL_TEST_POSTGRES=postgres://…\n")
}

impl Server {
    /// The URL of a new, empty database on this server.
    pub fn database(&self) -> Result<String, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("corral_t{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
        psql(&format!("{}/postgres", self.base), &format!("CREATE DATABASE {name}"))?;
        Ok(format!("{}/{name}", self.base))
    }

    /// Stops the server (`-m immediate`: as a crash looks to its clients).
    pub fn stop(&self) {
        if let (Some((pg_ctl, as_postgres)), Some(data)) = (&self.pg_ctl, &self.data) {
            let data = data.to_str().unwrap();
            let _ = run(pg_ctl, *as_postgres, &["-D", data, "-m", "immediate", "-w", "stop"]);
        }
    }

    /// Starts the server again after [`Server::stop`].
    pub fn restart(&self) {
        if let (Some((pg_ctl, as_postgres)), Some(data)) = (&self.pg_ctl, &self.data) {
            let data = data.to_str().unwrap();
            let log = format!("{data}/../server.log");
            run(pg_ctl, *as_postgres, &["-D", data, "-l", &log, "-w", "-o", &self.options, "start"]).expect("restarting PostgreSQL");
        }
    }

    /// Whether this process started the server (so it may stop it).
    pub fn is_own(&self) -> bool {
        self.pg_ctl.is_some()
    }
}

fn start() -> Result<Server, String> {
    if let Ok(url) = std::env::var("CORRAL_TEST_POSTGRES") {
        let base = url.trim_end_matches('/').rsplit_once('/').filter(|(b, _)| b.contains("://") && b.len() > "postgres://".len()).map(|(b, _)| b.to_owned());
        return Ok(Server { base: base.unwrap_or(url), data: None, pg_ctl: None, options: String::new() });
    }
    start_cluster()
}

fn start_cluster() -> Result<Server, String> {
    static CLUSTERS: AtomicUsize = AtomicUsize::new(0);
    let bin = bin_dir().ok_or("no PostgreSQL server binaries (initdb, pg_ctl) were found")?;
    let as_postgres = is_root();
    let dir = std::env::temp_dir().join(format!("corral-pg-{}-{}", std::process::id(), CLUSTERS.fetch_add(1, Ordering::SeqCst)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if as_postgres {
        let ok = Command::new("chown").args(["postgres:postgres", dir.to_str().unwrap()]).status().map_err(|e| e.to_string())?;
        if !ok.success() {
            return Err("cannot hand the cluster directory to the postgres user".into());
        }
    }
    let data = dir.join("data");
    let pwfile = dir.join("pw");
    std::fs::write(&pwfile, PASSWORD).map_err(|e| e.to_string())?;
    if as_postgres {
        let _ = Command::new("chown").args(["postgres:postgres", pwfile.to_str().unwrap()]).status();
    }
    let initdb = bin.join("initdb");
    run(
        &initdb,
        as_postgres,
        &[
            "-D",
            data.to_str().unwrap(),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            &format!("--pwfile={}", pwfile.display()),
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ],
    )?;
    let port = free_port()?;
    let options = format!("-c listen_addresses=127.0.0.1 -p {port} -k {} -c fsync=off -c max_connections=400", dir.display());
    let pg_ctl = bin.join("pg_ctl");
    let log = dir.join("server.log");
    run(&pg_ctl, as_postgres, &["-D", data.to_str().unwrap(), "-l", log.to_str().unwrap(), "-w", "-o", &options, "start"])?;
    watchdog(&pg_ctl, as_postgres, &data, &dir);
    Ok(Server { base: format!("postgres://postgres:{PASSWORD}@127.0.0.1:{port}"), data: Some(data), pg_ctl: Some((pg_ctl, as_postgres)), options })
}

/// Stops the server and removes its directory once this process has exited.
fn watchdog(pg_ctl: &Path, as_postgres: bool, data: &Path, dir: &Path) {
    let stop = format!("{} {} -D {} -m immediate stop", if as_postgres { "runuser -u postgres --" } else { "" }, pg_ctl.display(), data.display());
    let script = format!("while kill -0 {} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; rm -rf {}", std::process::id(), dir.display());
    use std::os::unix::process::CommandExt;
    let _ = Command::new("sh").args(["-c", &script]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn();
}

fn run(program: &Path, as_postgres: bool, args: &[&str]) -> Result<(), String> {
    let mut command = if as_postgres {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    let out = command.args(args).stdin(Stdio::null()).output().map_err(|e| format!("{}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(format!("{} failed: {}{}", program.display(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    }
    Ok(())
}

fn bin_dir() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("CORRAL_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql").ok()?.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).collect();
    versions.sort();
    versions.into_iter().rev().find(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0").unwrap_or(false)
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}
