//! Outgoing network access, checked against a plugin's `[permissions] network` allow-list.
//!
//! Three doors lead out and each is guarded here: `wasi:sockets` TCP connects (wasmtime-wasi's
//! socket address check), `wasi:sockets` name lookups (our own `ip-name-lookup`, shadowing
//! wasmtime-wasi's, so only allowed names are ever resolved), and `wasi:http` requests (the
//! `send_request` hook, which sees the authority before the host resolves or connects).
//! A connect by IP is allowed when a pattern names that IP, or a name this call resolved to
//! that IP matches a pattern, on that port. Every refusal is recorded in the call's
//! [`Denials`], which the server turns into a message naming the grant that would allow it,
//! and every connect and request, allowed or refused, in its [`Connections`], for the audit
//! trail.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{Host as LookupHost, HostResolveAddressStream, ResolveAddressStream};
use wasmtime_wasi::p2::bindings::sockets::network::{self as wasi_network, ErrorCode, IpAddress, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::{SocketAddrUse, WasiSocketsCtxView};
use wasmtime_wasi_http::{WasiBody, WasiHttpHooks};

use super::connections::{Connections, Door};
use super::denials::Denials;
use crate::config::NetPattern;

/// The network policy of one call, and what it resolved so far.
pub(crate) struct NetGuard {
    allow: Arc<[NetPattern]>,
    denials: Arc<Denials>,
    connections: Arc<Connections>,
    /// IPs that allowed names resolved to in this call, with those names.
    resolved: Mutex<HashMap<IpAddr, Vec<String>>>,
    /// The name each open lookup stream is resolving, by resource rep.
    lookups: Mutex<HashMap<u32, String>>,
}

impl NetGuard {
    pub fn new(allow: Arc<[NetPattern]>, denials: Arc<Denials>, connections: Arc<Connections>) -> NetGuard {
        NetGuard { allow, denials, connections, resolved: Mutex::default(), lookups: Mutex::default() }
    }

    /// Records a TCP connect to `addr`, with the name of this call's lookups it came from.
    fn record_connect(&self, addr: SocketAddr, allowed: bool) {
        let ip = addr.ip().to_canonical();
        let name = self.resolved.lock().unwrap().get(&ip).and_then(|names| names.first().cloned());
        self.connections.record(Door::Tcp, ip.to_string(), name, addr.port(), allowed);
    }

    fn name_allowed(&self, name: &str) -> bool {
        self.allow.iter().any(|p| p.allows_name(name))
    }

    fn host_port_allowed(&self, host: &str, port: u16) -> bool {
        self.allow.iter().any(|p| p.allows_name(host) && p.allows_port(port))
    }

    fn addr_allowed(&self, addr: SocketAddr) -> bool {
        let ip = addr.ip().to_canonical();
        if self.host_port_allowed(&ip.to_string(), addr.port()) {
            return true;
        }
        let resolved = self.resolved.lock().unwrap();
        resolved.get(&ip).is_some_and(|names| names.iter().any(|n| self.host_port_allowed(n, addr.port())))
    }

    fn deny(&self, what: String, target: &str) {
        self.denials.record(format!("network: {what} was denied; allow it with network = [\"{target}\"] under [permissions] in the plugin's manifest"));
    }

    /// wasmtime-wasi's socket address check: outgoing TCP connects only (binding the implicit
    /// local address of a connect is part of connecting; listening and UDP are never allowed).
    pub fn check(&self, addr: SocketAddr, usage: SocketAddrUse) -> bool {
        let allowed = match usage {
            SocketAddrUse::TcpConnect => {
                let allowed = self.addr_allowed(addr);
                self.record_connect(addr, allowed);
                allowed
            }
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            _ => false,
        };
        if !allowed {
            let target = match addr {
                SocketAddr::V4(a) => a.to_string(),
                SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
            };
            let what = match usage {
                SocketAddrUse::TcpConnect => format!("a TCP connection to {target}"),
                SocketAddrUse::TcpBind => format!("binding a TCP socket to {target}"),
                _ => format!("{usage:?} on {target}"),
            };
            self.deny(what, &target);
        }
        allowed
    }
}

/// `wasi:sockets/ip-name-lookup`, resolving only names the allow-list mentions.
pub(crate) struct GuardedLookup;

impl HasData for GuardedLookup {
    type Data<'a> = LookupView<'a>;
}

pub(crate) struct LookupView<'a> {
    sockets: WasiSocketsCtxView<'a>,
    guard: &'a NetGuard,
}

impl<'a> LookupView<'a> {
    /// A call's lookups through `guard`.
    pub(crate) fn new(sockets: WasiSocketsCtxView<'a>, guard: &'a NetGuard) -> LookupView<'a> {
        LookupView { sockets, guard }
    }
}

impl LookupHost for LookupView<'_> {
    fn resolve_addresses(&mut self, network: Resource<Network>, name: String) -> Result<Resource<ResolveAddressStream>, SocketError> {
        let literal = name.parse::<IpAddr>().is_ok();
        if !literal && !self.guard.name_allowed(&name) {
            self.guard.deny(format!("looking up the name {name}"), &format!("{name}:PORT"));
            return Err(ErrorCode::PermanentResolverFailure.into());
        }
        let stream = self.sockets.resolve_addresses(network, name.clone())?;
        self.guard.lookups.lock().unwrap().insert(stream.rep(), name);
        Ok(stream)
    }
}

// The lookup interface's errors are `wasi:sockets/network` errors; these delegate unchanged.
impl wasi_network::Host for LookupView<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        self.sockets.convert_error_code(error)
    }

    fn network_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        self.sockets.network_error_code(err)
    }
}

impl wasi_network::HostNetwork for LookupView<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        wasi_network::HostNetwork::drop(&mut self.sockets, network)
    }
}

impl HostResolveAddressStream for LookupView<'_> {
    fn resolve_next_address(&mut self, stream: Resource<ResolveAddressStream>) -> Result<Option<IpAddress>, SocketError> {
        let rep = stream.rep();
        let next = self.sockets.resolve_next_address(stream)?;
        if let Some(address) = &next {
            let ip = match *address {
                IpAddress::Ipv4((a, b, c, d)) => IpAddr::from([a, b, c, d]),
                IpAddress::Ipv6((a, b, c, d, e, f, g, h)) => IpAddr::from([a, b, c, d, e, f, g, h]),
            };
            if let Some(name) = self.guard.lookups.lock().unwrap().get(&rep) {
                self.guard.resolved.lock().unwrap().entry(ip.to_canonical()).or_default().push(name.clone());
            }
        }
        Ok(next)
    }

    fn subscribe(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<Resource<DynPollable>> {
        self.sockets.subscribe(stream)
    }

    fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        self.guard.lookups.lock().unwrap().remove(&stream.rep());
        HostResolveAddressStream::drop(&mut self.sockets, stream)
    }
}

/// `wasi:http` hooks: a request leaves only for an allowed `host:port`.
pub(crate) struct HttpGuard(pub Arc<NetGuard>);

type ResponseFuture =
    Box<dyn Future<Output = wasmtime_wasi_http::Result<(http::Response<WasiBody>, Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>)>> + Send>;

impl WasiHttpHooks for HttpGuard {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> ResponseFuture {
        let uri = request.uri();
        let port = uri.port_u16().unwrap_or(if uri.scheme() == Some(&http::uri::Scheme::HTTPS) { 443 } else { 80 });
        let host = uri.host().unwrap_or("").trim_start_matches('[').trim_end_matches(']').to_owned();
        let allowed = self.0.host_port_allowed(&host, port);
        self.0.connections.record(Door::Http, host.clone(), None, port, allowed);
        if !allowed {
            let target = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
            self.0.deny(format!("an HTTP request to {target}"), &target);
            return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
        }
        _ = fut;
        Box::new(async move {
            use http_body_util::BodyExt;
            let (response, io) = wasmtime_wasi_http::default_send_request(request, options).await?;
            Ok((response.map(BodyExt::boxed_unsync), Box::new(io) as Box<dyn Future<Output = _> + Send>))
        })
    }
}
