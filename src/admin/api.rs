//! The admin API's routes and handlers: each reads one view of the host (or does one action)
//! after the checks of `super::auth`. Documented in `assets/openapi.json`, served at
//! `/api/openapi.json`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::auth::{self, Caller};
use super::filter::TaskQuery;
use super::refusal::ApiRefusal;
use super::{assets, tasks, Admin};
use crate::server::Acting;
use crate::transport::http::{closing, read_whole, BodyError, PeerAddr};

/// Bytes of a request body at most (a sign-in is a token in a small JSON object).
const MAX_BODY: usize = 16 * 1024;

pub(super) fn router(admin: Arc<Admin>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/console.css", get(|| async { assets::css() }))
        .route("/console.js", get(|| async { assets::js() }))
        .route("/api/openapi.json", get(openapi))
        .route("/api/login", post(login))
        .route("/api/logout", post(logout))
        .route("/api/session", get(session))
        .route("/api/tasks", get(list_tasks))
        .route("/api/tasks/{id}", get(show_task))
        .route("/api/tasks/{id}/cancel", post(cancel_task))
        .route("/api/plugins", get(plugins))
        .route("/api/plugins/reload", post(reload))
        .route("/api/tools", get(tools))
        .route("/api/replicas", get(replicas))
        .route("/api/sessions", get(sessions))
        .route("/api/events", get(events))
        .fallback(|| async { ApiRefusal::new(StatusCode::NOT_FOUND, "no such page or endpoint; the API is described at /api/openapi.json") })
        .layer(axum::middleware::from_fn_with_state(admin.clone(), guessing))
        .layer(axum::middleware::from_fn(bounded_body))
        .layer(axum::middleware::map_response(no_sniffing))
        .with_state(admin)
}

/// Where a request came from (the acceptor puts it on every request).
type Peer = Option<Extension<PeerAddr>>;

fn address(peer: &Peer) -> Option<std::net::IpAddr> {
    peer.as_ref().map(|Extension(PeerAddr(addr))| addr.ip())
}

/// Every request that presents an admin token (a bearer token, or a sign-in) passes here: one
/// from an address paused for failed sign-ins is refused with 429 before its token is looked
/// at; a token refused with 401 is logged (without the token), counted, audited and counts
/// towards the pause; an accepted one clears the address (`super::throttle`).
async fn guessing(State(admin): State<Arc<Admin>>, request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let presents_token = request.headers().contains_key(header::AUTHORIZATION) || request.uri().path() == "/api/login";
    let ip = request.extensions().get::<PeerAddr>().map(|PeerAddr(addr)| addr.ip());
    if !presents_token {
        return next.run(request).await;
    }
    if let Some(ip) = ip {
        if let Err(wait) = admin.throttle.check(ip) {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let refusal = ApiRefusal::new(StatusCode::TOO_MANY_REQUESTS, format!("too many refused admin tokens from this address: try again in {seconds} s"));
            let mut response = refusal.into_response();
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return response;
        }
    }
    let bearer = request.headers().contains_key(header::AUTHORIZATION);
    let response = next.run(request).await;
    if response.status() == StatusCode::UNAUTHORIZED {
        let failures = ip.map(|ip| admin.throttle.failed(ip));
        let how = if bearer { "a bearer token on the admin API" } else { "a console sign-in" };
        let address = ip.map_or_else(|| "an unknown address".to_owned(), |ip| ip.to_string());
        tracing::warn!(address = %address, failures_lately = failures.unwrap_or(1), "refused an admin token: {how} from {address} presented a token that is not one");
        admin.host.operator_sign_in_refused(ip, &format!("the token of {how} is not an admin token"));
    } else if response.status().is_success() {
        if let Some(ip) = ip {
            admin.throttle.succeeded(ip);
        }
    }
    response
}

/// Every answer, JSON and refusals included, is to be read as the type it says: a browser must
/// never sniff an API answer that quotes a task's arguments into a page it would run.
async fn no_sniffing(mut response: Response) -> Response {
    response.headers_mut().insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// How long a request's body may take to arrive once its headers are in.
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads every request's body whole, up to [`MAX_BODY`], before any handler runs. A handler
/// that refuses early, or an action that takes no body, would otherwise leave the body unread on
/// the connection, and hyper then closes a keep-alive connection the client may already be
/// sending its next request down. A body announced larger, running past the bound, or too slow
/// is refused here, and that answer says the connection ends (its rest is still unread).
async fn bounded_body(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let (parts, body) = request.into_parts();
    let body = match read_whole(body, MAX_BODY, BODY_TIMEOUT).await {
        Ok(body) => body,
        Err(error) => return closing(body_refusal(error).into_response()),
    };
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(body))).await
}

fn body_refusal(error: BodyError) -> ApiRefusal {
    let over = format!("over the {MAX_BODY} bytes an admin request may have");
    match error {
        BodyError::TooLarge { announced: Some(length) } => ApiRefusal::new(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is {length} bytes, {over}")),
        BodyError::TooLarge { announced: None } => ApiRefusal::new(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is {over}")),
        BodyError::TooSlow => ApiRefusal::new(StatusCode::REQUEST_TIMEOUT, format!("the body did not arrive within {} s", BODY_TIMEOUT.as_secs())),
        BodyError::Unreadable(e) => ApiRefusal::bad_request(format!("cannot read the body: {e}")),
    }
}

/// Host/Origin, then the caller.
async fn caller(admin: &Admin, headers: &HeaderMap) -> Result<Caller, ApiRefusal> {
    admin.auth.check_origin(headers)?;
    admin.auth.caller(headers).await
}

/// [`caller`], then the checks of an action.
async fn actor(admin: &Admin, headers: &HeaderMap) -> Result<Caller, ApiRefusal> {
    let caller = caller(admin, headers).await?;
    admin.auth.check_action(&caller, headers)?;
    Ok(caller)
}

/// The console page: 200 for a signed-in browser, else 401 with the same page, which then shows
/// its sign-in form. It holds no data either way; what it shows comes from the API.
async fn page(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Response {
    if let Err(refusal) = admin.auth.check_origin(&headers) {
        return refusal.into_response();
    }
    let status = match admin.auth.caller(&headers).await {
        Ok(_) => StatusCode::OK,
        Err(_) => StatusCode::UNAUTHORIZED,
    };
    let mut response = (status, assets::html()).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], assets::OPENAPI).into_response()
}

async fn login(State(admin): State<Arc<Admin>>, peer: Peer, headers: HeaderMap, body: Bytes) -> Result<Response, ApiRefusal> {
    admin.auth.check_origin(&headers)?;
    auth::check_json(&headers)?;
    let body: Value = serde_json::from_slice(&body).map_err(|e| ApiRefusal::bad_request(format!("the body is not JSON: {e}")))?;
    let Some(token) = body.get("token").and_then(Value::as_str) else {
        return Err(ApiRefusal::bad_request("missing `token`: send {\"token\": \"…\"}, an admin token's value"));
    };
    let (cookie, caller) = admin.auth.login(token)?;
    tracing::info!(admin = %caller.who, "signed in to the admin console");
    admin.host.operator_signed_in(Acting { who: &caller.who, address: address(&peer), reason: None });
    let mut response = Json(json!({ "who": caller.who, "csrf": caller.csrf })).into_response();
    response.headers_mut().insert(header::SET_COOKIE, HeaderValue::from_str(&auth::set_cookie(Some(&cookie))).expect("hex cookie"));
    Ok(response)
}

async fn logout(State(admin): State<Arc<Admin>>, peer: Peer, headers: HeaderMap) -> Result<Response, ApiRefusal> {
    let caller = actor(&admin, &headers).await?;
    admin.auth.logout(&headers);
    admin.host.operator_signed_out(Acting { who: &caller.who, address: address(&peer), reason: None });
    let mut response = Json(json!({ "signedOut": true })).into_response();
    response.headers_mut().insert(header::SET_COOKIE, HeaderValue::from_str(&auth::set_cookie(None)).expect("static cookie"));
    Ok(response)
}

async fn session(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Result<Json<Value>, ApiRefusal> {
    let caller = caller(&admin, &headers).await?;
    Ok(Json(json!({ "who": caller.who, "csrf": caller.csrf })))
}

async fn list_tasks(State(admin): State<Arc<Admin>>, headers: HeaderMap, RawQuery(query): RawQuery) -> Result<Json<Value>, ApiRefusal> {
    caller(&admin, &headers).await?;
    let filter = TaskQuery::parse(query.as_deref())?;
    let page = tasks::list(&admin.host, &filter).await.map_err(unavailable)?;
    Ok(Json(serde_json::to_value(page).expect("views serialize")))
}

async fn show_task(State(admin): State<Arc<Admin>>, headers: HeaderMap, Path(id): Path<String>) -> Result<Json<Value>, ApiRefusal> {
    caller(&admin, &headers).await?;
    tasks::check_id(&id)?;
    match tasks::detail(&admin.host, &id).await.map_err(unavailable)? {
        Some(detail) => Ok(Json(detail)),
        None => Err(ApiRefusal::new(StatusCode::NOT_FOUND, format!("no task `{id}`"))),
    }
}

async fn cancel_task(State(admin): State<Arc<Admin>>, peer: Peer, headers: HeaderMap, Path(id): Path<String>, body: Bytes) -> Result<Json<Value>, ApiRefusal> {
    let caller = actor(&admin, &headers).await?;
    tasks::check_id(&id)?;
    let reason = tasks::reason(&body)?;
    let by = Acting { who: &caller.who, address: address(&peer), reason: reason.as_deref() };
    let row = tasks::cancel(&admin.host, &id, by).await?;
    tracing::info!(admin = %caller.who, task_id = %id, reason = reason.as_deref().unwrap_or(""), "task cancelled from the admin console");
    Ok(Json(serde_json::to_value(row).expect("views serialize")))
}

async fn plugins(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Result<Json<Value>, ApiRefusal> {
    caller(&admin, &headers).await?;
    Ok(Json(json!({ "loaded": admin.host.plugins_loaded(), "plugins": admin.host.plugin_views() })))
}

async fn reload(State(admin): State<Arc<Admin>>, peer: Peer, headers: HeaderMap) -> Result<Json<Value>, ApiRefusal> {
    let caller = actor(&admin, &headers).await?;
    let changed = (admin.reload)().await;
    tracing::info!(admin = %caller.who, changed, "plugins reloaded from the admin console");
    admin.host.operator_reloaded(Acting { who: &caller.who, address: address(&peer), reason: None }, changed);
    Ok(Json(json!({ "changed": changed, "plugins": admin.host.plugin_views() })))
}

async fn tools(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Result<Json<Value>, ApiRefusal> {
    caller(&admin, &headers).await?;
    Ok(Json(json!({ "tools": admin.host.tool_views() })))
}

async fn replicas(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Result<Json<Value>, ApiRefusal> {
    caller(&admin, &headers).await?;
    let view = admin.host.replica_views().await.map_err(unavailable)?;
    Ok(Json(serde_json::to_value(view).expect("views serialize")))
}

async fn sessions(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Result<Json<Value>, ApiRefusal> {
    caller(&admin, &headers).await?;
    Ok(Json(json!({ "sessions": admin.host.session_views() })))
}

async fn events(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Response {
    if let Err(refusal) = caller(&admin, &headers).await {
        return refusal.into_response();
    }
    match admin.hub.subscribe(admin.stopping.clone()) {
        Some(stream) => stream.into_response(),
        None => ApiRefusal::new(StatusCode::SERVICE_UNAVAILABLE, format!("{} event streams are open already; close one", super::events::MAX_CLIENTS))
            .into_response(),
    }
}

/// The task store did not answer.
fn unavailable(e: String) -> ApiRefusal {
    ApiRefusal::new(StatusCode::SERVICE_UNAVAILABLE, format!("the task store did not answer: {e}"))
}
