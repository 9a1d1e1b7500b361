//! `corral serve`: the server's own flags (HTTP and OAuth, the console, the audit trail, the
//! policy, the 2026-07-28 era's knobs).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{HostArgs, TaskArgs};
use crate::audit::Destination;
use crate::config::{self, defaults};
use crate::identity::{self, IssuerUrl};
use crate::server::{ServerOptions, StateSecret};
use crate::transport::http::{ConnectionSettings, StreamSettings};

/// The Streamable HTTP transport's flags.
#[derive(Args)]
pub struct HttpArgs {
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8080.
    /// Binding anything but a loopback address is explicit and should come with --auth-tokens-file.
    #[arg(long, env = "CORRAL_HTTP", value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,
    /// Extra Host names to accept besides localhost, 127.0.0.1 and [::1] (DNS rebinding protection).
    #[arg(long = "allowed-host", env = "CORRAL_ALLOWED_HOSTS", value_delimiter = ',', value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Extra browser origins to accept besides loopback ones, e.g. https://app.example.
    #[arg(long = "allowed-origin", env = "CORRAL_ALLOWED_ORIGINS", value_delimiter = ',', value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// Bearer tokens, one per line as `NAME TOKEN` (or just `TOKEN`); turns authentication on.
    /// Tasks then belong to the token's NAME.
    #[arg(long, env = "CORRAL_AUTH_TOKENS_FILE", value_name = "PATH")]
    pub auth_tokens_file: Option<PathBuf>,
    /// Bearer tokens for `/metrics` alone (the format of --auth-tokens-file, none of its
    /// tokens): a Prometheus scraper then holds a credential that cannot call tools. Without
    /// it, `/metrics` takes what `/mcp` takes.
    #[arg(long, env = "CORRAL_METRICS_TOKENS_FILE", value_name = "PATH")]
    pub metrics_tokens_file: Option<PathBuf>,
    /// The URL clients reach this host at, e.g. https://mcp.example.com (behind a proxy: the
    /// proxy's). The MCP endpoint is this + /mcp; with --oauth-issuer it is the protected
    /// resource the metadata names and tokens must be issued for.
    #[arg(long, env = "CORRAL_PUBLIC_URL", value_name = "URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,
    /// Trust OAuth access tokens (JWT, RFC 9068) from this authorization server, by its issuer
    /// identifier (https://, or http:// on a loopback address); repeatable. Turns the OAuth
    /// resource server on: tasks then belong to the token's issuer and subject. Needs --public-url.
    #[arg(long = "oauth-issuer", env = "CORRAL_OAUTH_ISSUERS", value_delimiter = ',', value_name = "URL", value_parser = parse_issuer)]
    pub oauth_issuers: Vec<IssuerUrl>,
    /// The audience every access token must carry in `aud` (default: --public-url + /mcp, the
    /// RFC 8707 resource clients ask for).
    #[arg(long, env = "CORRAL_OAUTH_AUDIENCE", value_name = "URI", value_parser = parse_audience)]
    pub oauth_audience: Option<String>,
    /// Also accept this audience from one issuer, as ISSUER=AUDIENCE (e.g. a client id, or
    /// Entra ID's api://… name, for servers that cannot put the resource in `aud`); repeatable.
    #[arg(long = "oauth-extra-audience", env = "CORRAL_OAUTH_EXTRA_AUDIENCES", value_delimiter = ',', value_name = "ISSUER=AUDIENCE", value_parser = parse_extra_audience)]
    pub oauth_extra_audiences: Vec<(IssuerUrl, String)>,
    /// Accept access tokens typed `JWT` (or untyped) from this issuer besides RFC 9068's
    /// `at+jwt` (Entra ID, Keycloak); repeatable.
    #[arg(long = "oauth-relax-typ", env = "CORRAL_OAUTH_RELAX_TYP", value_delimiter = ',', value_name = "ISSUER", value_parser = parse_issuer)]
    pub oauth_relax_typ: Vec<IssuerUrl>,
    /// A scope every MCP request's access token must grant (else 403 insufficient_scope);
    /// repeatable; advertised as scopes_supported. Default: none, any valid token for this host.
    #[arg(long = "oauth-scope", env = "CORRAL_OAUTH_SCOPES", value_delimiter = ',', value_name = "SCOPE", value_parser = parse_scope)]
    pub oauth_scopes: Vec<String>,
    /// Clock skew allowed on a token's `exp` and `nbf` (at most 5m).
    #[arg(long, env = "CORRAL_OAUTH_LEEWAY", default_value = identity::defaults::LEEWAY, value_parser = parse_leeway)]
    pub oauth_leeway: Duration,
    /// How long fetching an issuer's metadata or signing keys may take.
    #[arg(long, env = "CORRAL_OAUTH_FETCH_TIMEOUT", default_value = identity::defaults::FETCH_TIMEOUT, value_parser = config::parse_duration)]
    pub oauth_fetch_timeout: Duration,
    /// The least time between two fetches of an issuer's keys that tokens with unknown key ids
    /// trigger (a rotated key is found on its first token; made-up ids cannot flood the issuer).
    #[arg(long, env = "CORRAL_OAUTH_REFETCH_COOLDOWN", default_value = identity::defaults::REFETCH_COOLDOWN, value_parser = config::parse_duration)]
    pub oauth_refetch_cooldown: Duration,
    /// Check opaque (non-JWT) access tokens by asking their issuer (RFC 7662 introspection), as
    /// this client: ISSUER=CLIENT_ID, the issuer one of --oauth-issuer. Needs
    /// --oauth-introspection-secret-file.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_CLIENT", value_name = "ISSUER=CLIENT_ID", value_parser = parse_introspection_client)]
    pub oauth_introspection_client: Option<(IssuerUrl, String)>,
    /// A file holding the introspection client's secret, alone on one line (read at start; never
    /// shown or logged).
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_SECRET_FILE", value_name = "PATH")]
    pub oauth_introspection_secret_file: Option<PathBuf>,
    /// The introspection endpoint (https://, or http:// on a loopback address). Default: the
    /// `introspection_endpoint` of the issuer's metadata.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_ENDPOINT", value_name = "URL", value_parser = parse_endpoint)]
    pub oauth_introspection_endpoint: Option<String>,
    /// How long an introspection answer is kept at most (less when the token expires sooner):
    /// also how long a revoked token may still be accepted.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_MAX_AGE", value_name = "DURATION", default_value = identity::defaults::INTROSPECTION_MAX_AGE, value_parser = config::parse_duration)]
    pub oauth_introspection_max_age: Duration,
    /// Introspection answers kept at once (the oldest goes first when full).
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_CACHE", value_name = "ENTRIES", default_value_t = identity::defaults::INTROSPECTION_CACHE, value_parser = config::parse_positive::<usize>)]
    pub oauth_introspection_cache: usize,
    /// Introspections one client address may cause (a token bucket, N/s, N/min, N/h: N at
    /// once, then that rate); past it an unknown opaque token is answered 429 with
    /// Retry-After. Known tokens and refusals remembered cost none.
    #[arg(long, env = "CORRAL_OAUTH_INTROSPECTION_RATE", value_name = "RATE", default_value = identity::defaults::INTROSPECTION_RATE, value_parser = parse_introspection_rate)]
    pub oauth_introspection_rate: identity::IntrospectionRate,
    /// Largest request body (an HTTP body or a stdio line), e.g. 4MiB; bigger ones get 413 (over
    /// stdio, an error answer).
    #[arg(long, env = "CORRAL_MAX_BODY", default_value = "4MiB", value_parser = config::parse_size)]
    pub max_body: u64,
    /// A session unused this long is ended.
    #[arg(long, env = "CORRAL_SESSION_IDLE", default_value = "30m", value_parser = config::parse_duration)]
    pub session_idle: Duration,
    /// Sessions open at once.
    #[arg(long, env = "CORRAL_MAX_SESSIONS", default_value_t = 1000, value_parser = config::parse_positive::<usize>)]
    pub max_sessions: usize,
    /// Server-initiated messages kept per session for clients that reconnect with Last-Event-ID.
    #[arg(long, env = "CORRAL_EVENT_BUFFER", default_value_t = 1024, value_parser = config::parse_positive::<usize>)]
    pub event_buffer: usize,
    /// HTTP connections open at once (a quarter is kept for connections already serving a
    /// client); lowered to fit the open-file limit. Beyond it a connection gets 503 at once.
    #[arg(long, env = "CORRAL_MAX_CONNECTIONS", default_value_t = ConnectionSettings::default().max_connections, value_parser = config::parse_positive::<usize>)]
    pub max_connections: usize,
    /// HTTP connections one client address (an IPv6 /64) may hold at once: beyond it, its own
    /// oldest idle keep-alive is closed for the new one, or the new one gets 429 when all of its
    /// are busy. 0: no bound (behind a reverse proxy, whose connections share its address).
    #[arg(long, env = "CORRAL_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = ConnectionSettings::default().per_address)]
    pub max_connections_per_address: usize,
    /// How long a client gets to send a request's headers; slower ones are disconnected.
    #[arg(long, env = "CORRAL_HTTP_HEADER_TIMEOUT", default_value = "10s", value_parser = config::parse_duration)]
    pub http_header_timeout: Duration,
    /// How long a client gets to send a request's body; slower ones get 408.
    #[arg(long, env = "CORRAL_HTTP_BODY_TIMEOUT", default_value = "30s", value_parser = config::parse_duration)]
    pub http_body_timeout: Duration,
    /// A keep-alive connection with no request in progress for this long is closed.
    #[arg(long, env = "CORRAL_HTTP_IDLE_TIMEOUT", default_value = "60s", value_parser = config::parse_duration)]
    pub http_idle_timeout: Duration,
    /// Event streams (GET streams, 2026-07-28 listens) one client may hold open at once: an
    /// authenticated principal, or without authentication one address. Beyond it: 429.
    #[arg(long, env = "CORRAL_MAX_STREAMS_PER_CLIENT", default_value_t = StreamSettings::default().per_client, value_parser = config::parse_positive::<usize>)]
    pub max_streams_per_client: usize,
    /// An event stream open this long is ended; the client reconnects (with Last-Event-ID, or
    /// by listening again).
    #[arg(long, env = "CORRAL_MAX_STREAM_LIFETIME", default_value = "30m", value_parser = config::parse_duration)]
    pub max_stream_lifetime: Duration,
}

/// The admin console's flags.
#[derive(Args)]
pub struct AdminArgs {
    /// Serve the operator's web console and its JSON API at http://ADDR/, a listener apart from
    /// MCP's; a bare port means 127.0.0.1:PORT. Needs --admin-tokens-file or --admin-public-url
    /// (OAuth): there is no console without authentication. It speaks plain HTTP: reach it over
    /// a network only through TLS.
    #[arg(long, env = "CORRAL_ADMIN", value_name = "ADDR", value_parser = parse_admin_addr)]
    pub admin: Option<std::net::SocketAddr>,
    /// The console's tokens, one per line as `NAME TOKEN` (the format of --auth-tokens-file; use
    /// other tokens than MCP clients have). A person signs in with one; a script sends it as
    /// `Authorization: Bearer TOKEN`.
    #[arg(long, env = "CORRAL_ADMIN_TOKENS_FILE", value_name = "PATH", requires = "admin")]
    pub admin_tokens_file: Option<PathBuf>,
    /// The URL people reach the console at (behind a proxy: the proxy's). With --oauth-issuer,
    /// the console also takes OAuth access tokens from those issuers whose `aud` names this URL
    /// (its own audience: tokens issued for the MCP endpoint are refused there).
    #[arg(long, env = "CORRAL_ADMIN_PUBLIC_URL", value_name = "URL", value_parser = parse_public_url, requires = "admin")]
    pub admin_public_url: Option<String>,
    /// The scope an OAuth access token must grant to use the console.
    #[arg(long, env = "CORRAL_ADMIN_OAUTH_SCOPE", value_name = "SCOPE", default_value = "corral:admin", value_parser = parse_scope)]
    pub admin_oauth_scope: String,
    /// A group or role an OAuth access token must also carry (`groups`, `roles`, Keycloak's
    /// realm roles) to use the console. Default: the scope alone decides.
    #[arg(long, env = "CORRAL_ADMIN_OAUTH_GROUP", value_name = "GROUP", requires = "admin_public_url")]
    pub admin_oauth_group: Option<String>,
}

/// `--admin`: `HOST:PORT`, or a bare port on the loopback address.
fn parse_admin_addr(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    }
    text.parse().map_err(|_| format!("`{text}` is neither a port nor an address like 127.0.0.1:9090 or [::1]:9090"))
}

/// `corral serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// The plugin directory, limits and runtime.
    #[command(flatten)]
    pub host: HostArgs,
    /// The task store and engine.
    #[command(flatten)]
    pub tasks: TaskArgs,
    /// The HTTP transport (stdio when `--http` is absent).
    #[command(flatten)]
    pub http: HttpArgs,
    /// The operator's console.
    #[command(flatten)]
    pub admin: AdminArgs,
    /// The audit trail.
    #[command(flatten)]
    pub audit: AuditArgs,
    /// Caller and host secrets.
    #[command(flatten)]
    pub secrets: super::secrets::SecretsFlags,
    /// Tools per tools/list page.
    #[arg(long, env = "CORRAL_PAGE_SIZE", default_value_t = ServerOptions::default().page_size, value_parser = config::parse_positive::<usize>)]
    pub page_size: usize,
    /// Reload a plugin when its .wasm or manifest changes, and tell clients the tool list
    /// changed. Calls already running finish on the version they started on.
    #[arg(long, env = "CORRAL_WATCH")]
    pub watch: bool,
    /// A policy file (TOML): which principals may list and use which plugins, tools, resources
    /// and prompts, who may steer every task, and each principal's call rate and task cap.
    /// Without one everything is allowed; with one, what no rule allows is denied. The file is
    /// watched: a change applies at once, and a broken one leaves the last good policy in force.
    #[arg(long, env = "CORRAL_POLICY", value_name = "FILE", value_parser = parse_policy_file)]
    pub policy: Option<PolicyFile>,
    /// How long an `optional` tool called by a 2026-07-28 client that declares the tasks
    /// extension runs inline; past it, the running call becomes a task (and gets the task's
    /// timeout). A plugin's manifest may set its own (`[limits] task-after`).
    #[arg(long, env = "CORRAL_TASK_AFTER", default_value = "1s", value_parser = config::parse_duration)]
    pub task_after: Duration,
    /// A file holding the key that signs the `requestState` of 2026-07-28 input-required results:
    /// at least 32 bytes, as hex (e.g. `openssl rand -hex 32`). Replicas behind one address need
    /// the same key; without one each process picks a random key, and a client's retry that
    /// reaches another process is refused.
    #[arg(long, env = "CORRAL_STATE_SECRET_FILE", value_parser = parse_state_secret_file)]
    pub state_secret_file: Option<StateSecret>,
    /// The same key given directly, as hex (prefer the variable or the file: arguments are visible
    /// to every user of the machine).
    #[arg(long, env = "CORRAL_STATE_SECRET", hide_env_values = true, value_parser = SecretParser, conflicts_with = "state_secret_file")]
    pub state_secret: Option<StateSecret>,
    /// On SIGTERM or the end of stdin: how long calls in flight get to finish and answer before
    /// the rest are answered with a shutdown error and cancelled. Running tasks are left for
    /// recovery at the next start; task ends still waiting for an unreachable store get as long
    /// again to be stored.
    #[arg(long, env = "CORRAL_SHUTDOWN_GRACE", default_value = defaults::SHUTDOWN_GRACE, value_parser = config::parse_duration)]
    pub shutdown_grace: Duration,
    /// Requests one stdio session runs at once; at the bound stdin is not read until one answers.
    #[arg(long, env = "CORRAL_MAX_IN_FLIGHT", default_value_t = crate::transport::stdio::StdioSettings::default().max_in_flight, value_parser = config::parse_positive::<usize>)]
    pub max_in_flight: usize,
}

/// The audit trail's flags.
#[derive(Args)]
pub struct AuditArgs {
    /// Append one JSON line per finished call and per task transition to PATH (`-`: stderr):
    /// who, which tool and plugin, the outcome, duration, fuel, peak memory and sandbox denials.
    /// Reopened on SIGHUP (log rotation). Written off the request path: records the writer
    /// cannot keep up with are dropped and counted (corral_audit_records_dropped_total).
    #[arg(long, env = "CORRAL_AUDIT_LOG", value_name = "PATH", value_parser = parse_audit_destination)]
    pub audit_log: Option<Destination>,
    /// Also record each call's arguments and result in the audit log (they may hold personal
    /// data or secrets a client sent).
    #[arg(long, env = "CORRAL_AUDIT_ARGUMENTS", requires = "audit_log")]
    pub audit_arguments: bool,
}

fn parse_audit_destination(s: &str) -> Result<Destination, String> {
    match s {
        "" => Err("an empty path: give a file, or `-` for stderr".into()),
        s => Ok(Destination::parse(s)),
    }
}

/// `--state-secret` / `CORRAL_STATE_SECRET`: hex, at least 32 bytes. A parser of its own because
/// clap quotes a refused value in its error, and this value is a key: the error names the flag,
/// the variable and what is wrong, never the text.
#[derive(Clone)]
struct SecretParser;

impl clap::builder::TypedValueParser for SecretParser {
    type Value = StateSecret;

    fn parse_ref(&self, cmd: &clap::Command, _arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<StateSecret, clap::Error> {
        let refuse = |why: &str| {
            let message = format!("invalid --state-secret (or CORRAL_STATE_SECRET; its value is not shown): {why}\n");
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, message).with_cmd(cmd)
        };
        let text = value.to_str().ok_or_else(|| refuse("the state secret must be hexadecimal text"))?;
        StateSecret::from_hex(text).map_err(|why| refuse(&why))
    }
}

/// `--public-url`: an absolute http(s) URL with a host, without query or fragment; a trailing
/// slash is dropped so that `/mcp` appends cleanly.
fn parse_public_url(text: &str) -> Result<String, String> {
    let url = http::Uri::try_from(text).map_err(|e| format!("not a URL: {e}"))?;
    if !matches!(url.scheme_str(), Some("http" | "https")) || url.host().is_none() {
        return Err(format!("`{text}` is not an http:// or https:// URL with a host"));
    }
    if text.contains('?') || text.contains('#') {
        return Err(format!("`{text}` has a query or fragment; the resource URI has neither (RFC 8707 §2)"));
    }
    Ok(text.trim_end_matches('/').to_owned())
}

fn parse_issuer(text: &str) -> Result<IssuerUrl, String> {
    IssuerUrl::parse(text)
}

/// An audience: any URI or name, but not empty and without a fragment.
fn parse_audience(text: &str) -> Result<String, String> {
    if text.trim().is_empty() || text.contains('#') || text.chars().any(char::is_whitespace) {
        return Err(format!("`{text}` is not an audience: a URI or name without spaces or fragment"));
    }
    Ok(text.to_owned())
}

/// `ISSUER=AUDIENCE`: an issuer identifier has no `=` (no query), so the first one splits.
fn parse_extra_audience(text: &str) -> Result<(IssuerUrl, String), String> {
    let (issuer, audience) = text.split_once('=').ok_or_else(|| format!("`{text}` is not ISSUER=AUDIENCE"))?;
    Ok((IssuerUrl::parse(issuer)?, parse_audience(audience)?))
}

/// `ISSUER=CLIENT_ID`: an issuer identifier has no `=`, so the first one splits.
fn parse_introspection_client(text: &str) -> Result<(IssuerUrl, String), String> {
    let (issuer, client) = text.split_once('=').ok_or_else(|| format!("`{text}` is not ISSUER=CLIENT_ID"))?;
    if client.is_empty() || client.chars().any(|c| c.is_control()) {
        return Err(format!("`{client}` is not a client id"));
    }
    Ok((IssuerUrl::parse(issuer)?, client.to_owned()))
}

/// `N/s`, `N/min`, `N/h` or `N/day`, as a policy's rates are written: N at once, then that rate.
fn parse_introspection_rate(text: &str) -> Result<identity::IntrospectionRate, String> {
    let per_second = crate::policy::Rate::per(text)?;
    let count = text.split_once('/').and_then(|(n, _)| n.trim().parse::<f64>().ok()).unwrap_or(1.0);
    Ok(identity::IntrospectionRate { per_second, burst: count.ceil().clamp(1.0, u32::MAX as f64) as u32 })
}

/// An endpoint corral sends secrets to: https, or plain http on a loopback address only.
fn parse_endpoint(text: &str) -> Result<String, String> {
    let url = http::Uri::try_from(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
    let host = url.host().ok_or_else(|| format!("`{text}` has no host"))?;
    match url.scheme_str() {
        Some("https") => Ok(text.to_owned()),
        Some("http") if identity::issuer::is_loopback(host) => Ok(text.to_owned()),
        _ => Err(format!("`{text}` is not https:// (plain http:// only on a loopback address): the client secret goes there")),
    }
}

/// A scope token (RFC 6749 §3.3: printable ASCII without space, `"` or `\`).
fn parse_scope(text: &str) -> Result<String, String> {
    if text.is_empty() || !text.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\') {
        return Err(format!("`{text}` is not a scope (printable ASCII without spaces, quotes or backslashes)"));
    }
    Ok(text.to_owned())
}

fn parse_leeway(text: &str) -> Result<Duration, String> {
    let leeway = config::parse_duration(text)?;
    if leeway > Duration::from_secs(300) {
        return Err(format!("{text} is over 5m: a token that expired that long ago is no longer fresh"));
    }
    Ok(leeway)
}

/// `--state-secret-file`: a file whose text is the hex key.
fn parse_state_secret_file(path: &str) -> Result<StateSecret, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the state secret file {path}: {e}"))?;
    StateSecret::from_hex(&text).map_err(|e| format!("{path}: {e}"))
}

/// A policy file as `--policy` names it, read and compiled once at start (a broken file is a
/// usage error naming the file, line and key).
#[derive(Clone, Debug)]
pub struct PolicyFile {
    /// Where it is, for the watcher.
    pub path: PathBuf,
    /// What it says now.
    pub policy: crate::policy::Policy,
}

fn parse_policy_file(path: &str) -> Result<PolicyFile, String> {
    let path = PathBuf::from(path);
    let policy = crate::policy::load(&path).map_err(|e| e.to_string())?;
    Ok(PolicyFile { path, policy })
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::Parser;

    use super::*;
    use crate::cli::args::{Cli, Command};
    use crate::config::Limits;
    use crate::runtime::EngineSettings;
    use crate::tasks::{Durability, TaskSettings};

    #[test]
    fn an_admin_port_alone_listens_on_loopback() {
        assert_eq!(parse_admin_addr("9090").unwrap(), "127.0.0.1:9090".parse().unwrap());
        assert_eq!(parse_admin_addr("[::1]:9090").unwrap(), "[::1]:9090".parse().unwrap());
        assert!(parse_admin_addr("nine").unwrap_err().contains("neither a port nor an address"));
    }

    fn serve(extra: &[&str]) -> Result<ServeArgs, clap::Error> {
        let argv = ["corral", "serve", "--plugins", "p"].into_iter().chain(extra.iter().copied());
        match Cli::try_parse_from(argv)?.command {
            Command::Serve(args) => Ok(args),
            _ => unreachable!("the argv names `serve`"),
        }
    }

    /// Each count flag that used to be raised from 0 to 1 in silence now refuses 0, naming itself.
    #[test]
    fn zero_is_an_error_that_names_the_flag() {
        for flag in
            ["--fuel", "--max-concurrency", "--max-instances", "--max-running", "--max-tasks-per-client", "--max-sessions", "--event-buffer", "--page-size"]
        {
            let err = serve(&[flag, "0"]).err().unwrap_or_else(|| panic!("{flag} 0 was accepted"));
            assert_eq!(err.kind(), ErrorKind::ValueValidation, "{flag}");
            let text = err.to_string();
            assert!(text.contains(flag) && text.contains("must be greater than zero"), "{flag}: {text}");
        }
    }

    #[test]
    fn durations_and_sizes_refuse_zero_too() {
        for flag in
            ["--timeout", "--task-timeout", "--epoch-tick", "--task-ttl", "--task-max-ttl", "--task-poll-interval", "--task-reap-every", "--session-idle"]
        {
            let err = serve(&[flag, "0s"]).err().unwrap_or_else(|| panic!("{flag} 0s was accepted"));
            assert!(err.to_string().contains("must be greater than zero"), "{flag}: {err}");
        }
        for flag in
            ["--memory", "--memory-ceiling", "--max-output", "--max-body", "--inline-result-limit", "--max-result-bytes-per-client", "--max-result-bytes"]
        {
            assert!(serve(&[flag, "0B"]).is_err(), "{flag} 0B was accepted");
        }
    }

    #[test]
    fn counts_keep_their_values_and_defaults() {
        let args = serve(&["--max-running", "3", "--fuel", "7"]).unwrap();
        assert_eq!((args.tasks.max_running, args.host.fuel), (3, 7));
        let args = serve(&[]).unwrap();
        assert_eq!(args.tasks.max_running, TaskSettings::default().max_running);
        assert_eq!(args.host.max_instances, EngineSettings::default().max_instances);
        assert_eq!(args.page_size, ServerOptions::default().page_size);
        assert!(serve(&["--max-running", "many"]).err().unwrap().to_string().contains("not a whole number"));
    }

    #[test]
    fn defaults_are_the_shared_constants() {
        let args = serve(&[]).unwrap();
        let limits = Limits::default();
        assert_eq!((args.host.timeout, args.host.task_timeout, args.host.memory), (limits.timeout, limits.task_timeout, limits.memory));
        assert_eq!(args.host.memory_ceiling, EngineSettings::default().memory_ceiling);
        let runtime = crate::runtime::RuntimeSettings::default();
        assert_eq!((args.host.epoch_tick, args.host.max_output), (runtime.epoch_tick, runtime.max_output));
        let tasks = TaskSettings::default();
        assert_eq!(
            (args.tasks.task_ttl, args.tasks.task_max_ttl, args.tasks.task_poll_interval, args.tasks.task_reap_every),
            (tasks.default_ttl, tasks.max_ttl, tasks.poll_interval, tasks.reap_every)
        );
        assert_eq!((args.tasks.max_result_bytes_per_client, args.tasks.max_result_bytes), (tasks.result_quota.per_owner, tasks.result_quota.total));
        let args = serve(&["--max-result-bytes-per-client", "1MiB", "--max-result-bytes", "3MiB"]).unwrap();
        assert_eq!(args.tasks.settings().result_quota, crate::tasks::ResultQuota { per_owner: 1 << 20, total: 3 << 20 });
    }

    #[test]
    fn db_sync_is_one_of_two_words() {
        assert_eq!(Durability::from(serve(&[]).unwrap().tasks.db_sync), Durability::Process);
        assert_eq!(Durability::from(serve(&["--db-sync", "power"]).unwrap().tasks.db_sync), Durability::Power);
        assert_eq!(serve(&["--db-sync", "fsync"]).err().map(|e| e.kind()), Some(ErrorKind::InvalidValue));
    }

    #[test]
    fn shutdown_grace_and_the_stdio_bound_have_defaults_and_refuse_zero() {
        let args = serve(&[]).unwrap();
        assert_eq!((args.shutdown_grace, args.max_in_flight), (Duration::from_secs(10), crate::transport::stdio::StdioSettings::default().max_in_flight));
        assert_eq!(serve(&["--shutdown-grace", "2s"]).unwrap().shutdown_grace, Duration::from_secs(2));
        assert!(serve(&["--shutdown-grace", "0s"]).err().unwrap().to_string().contains("must be greater than zero"));
        assert!(serve(&["--max-in-flight", "0"]).err().unwrap().to_string().contains("must be greater than zero"));
    }

    /// A refused key is named, with what is wrong, and never printed back.
    #[test]
    fn a_malformed_state_secret_is_not_echoed() {
        for bad in ["not-hex-SECRETVALUE", "abcdef0123", "abc"] {
            let err = serve(&["--state-secret", bad]).err().unwrap_or_else(|| panic!("{bad} was accepted"));
            assert_eq!(err.kind(), ErrorKind::ValueValidation);
            let text = err.to_string();
            assert!(!text.contains(bad), "the secret was echoed: {text}");
            assert!(text.contains("--state-secret") && text.contains("CORRAL_STATE_SECRET") && text.contains("state secret"), "{text}");
        }
        assert!(serve(&["--state-secret", &"ab".repeat(32)]).unwrap().state_secret.is_some());
    }

    #[test]
    fn connection_flags_have_the_transport_defaults_and_refuse_zero() {
        let args = serve(&[]).unwrap();
        let defaults = ConnectionSettings::default();
        assert_eq!(args.http.max_connections, defaults.max_connections);
        assert_eq!(
            (args.http.http_header_timeout, args.http.http_body_timeout, args.http.http_idle_timeout),
            (defaults.header_timeout, defaults.body_timeout, defaults.idle_timeout)
        );
        assert!(serve(&["--max-connections", "0"]).err().unwrap().to_string().contains("must be greater than zero"));
        for flag in ["--http-header-timeout", "--http-body-timeout", "--http-idle-timeout"] {
            assert!(serve(&[flag, "0s"]).err().unwrap().to_string().contains("must be greater than zero"), "{flag}");
        }
    }
}
