//! `corral health`: asks a running `corral serve --http` whether it is ready (`/readyz`) or alive
//! (`/healthz`), and exits 0 or 1. It is the health check of the image, which has no shell and
//! no curl: container engines run a command inside the container (podman `--health-cmd`, a
//! compose file's `healthcheck.test`), while Kubernetes probes the endpoints itself.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::config;

/// `corral health`'s flags.
#[derive(Args)]
pub struct HealthArgs {
    /// The address `corral serve --http` listens on; an unspecified address (0.0.0.0, [::]) is
    /// asked on loopback.
    #[arg(long, env = "CORRAL_HTTP", value_name = "ADDR")]
    pub http: SocketAddr,
    /// Ask whether the process is alive (`/healthz`) rather than ready for traffic (`/readyz`).
    #[arg(long)]
    pub live: bool,
    /// How long the server may take to answer.
    #[arg(long, default_value = "5s", value_parser = config::parse_duration)]
    pub timeout: Duration,
}

/// Where to ask: the listening address, with an unspecified one replaced by loopback.
fn probe_address(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// Runs `corral health`: prints the server's answer; exits 0 when it is 200, 1 otherwise or when
/// nothing answers.
pub async fn run(args: HealthArgs) -> anyhow::Result<ExitCode> {
    let path = if args.live { "/healthz" } else { "/readyz" };
    let url = format!("http://{}{path}", probe_address(args.http));
    let client = reqwest::Client::builder().timeout(args.timeout).build()?;
    let response = match client.get(&url).send().await {
        Ok(response) => response,
        Err(e) => {
            eprintln!("corral: {url}: no answer: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    println!("{url}: {status} {}", body.trim());
    Ok(if status.is_success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_address_is_asked_on_loopback() {
        assert_eq!(probe_address("0.0.0.0:8080".parse().unwrap()), "127.0.0.1:8080".parse().unwrap());
        assert_eq!(probe_address("[::]:8080".parse().unwrap()), "[::1]:8080".parse().unwrap());
        assert_eq!(probe_address("10.0.0.5:9000".parse().unwrap()), "10.0.0.5:9000".parse().unwrap());
    }
}
