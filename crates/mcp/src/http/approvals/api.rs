//! The terminal's API of the approval page: `GET /approvals/api/pending`
//! and `POST /approvals/api/<id>`, what a named approver lists and answers
//! with `airlock approvals`.
//!
//! # Trust
//!
//! The bearer token a request presents is checked as the MCP gate checks
//! it (a static token of the state in force, or a JWT with `[http.jwt]`),
//! and names the person answering; a terminal never answers the caller's
//! own approval, since an MCP client holds the caller's token. Each client
//! address shares the page's request rate.

use super::{Page, client, json_response, refused};
use crate::http::connections::ClientConnection;
use airlock_host::Approver;
use airlock_host::transport::approval::{Answer, Approval, How, NotAnswered, NotYours, may_answer, now_ms};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// The principal a terminal's bearer token names: a static token of the
/// state in force, or a JWT access token with `[http.jwt]`.
async fn bearer(page: &Page, headers: &HeaderMap) -> Option<String> {
    let token = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim().strip_prefix("Bearer ").map(str::trim)?;
    let access = page.host.state().access().clone();
    if let Some(principal) = access.principal_of(token) {
        return Some(principal);
    }
    let signin = page.signin.as_ref()?;
    let mut with = HeaderMap::new();
    with.insert(header::AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).ok()?);
    signin.verifier.authenticate(&with, &access).await.ok().map(|(principal, _)| principal)
}

/// An approval as the terminal lists it.
fn listed(approval: &Approval) -> serde_json::Value {
    json!({
        "id": approval.id,
        "principal": approval.principal,
        "tool": approval.tool,
        "revision": approval.revision,
        "card": approval.card,
        "reason": approval.reason,
        "approver": approval.approver.describe(&approval.principal),
        "expires_in_secs": approval.expires_ms.saturating_sub(now_ms()) / 1000,
    })
}

/// Whether the terminal's principal may answer `approval`: a named
/// approver only (the caller's own approval needs the page).
fn terminal_may_answer(page: &Page, approval: &Approval, principal: &str) -> Result<(), String> {
    if approval.approver == Approver::Caller {
        return Err(
            "this call acts for its own approver: it is approved on the page, signed in, never with a token an MCP \
             client may hold"
                .into(),
        );
    }
    let state = page.host.state();
    may_answer(approval, principal, |person, group| state.policy().principal_is_in(person, group))
        .map_err(|why: NotYours| why.explain(approval))
}

pub(super) async fn api_pending(
    State(page): State<Arc<Page>>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    if !page.limiter.allow(client(connected.as_ref())) {
        return json_response(StatusCode::TOO_MANY_REQUESTS, &json!({"error": "too many requests"}));
    }
    let Some(principal) = bearer(&page, &headers).await else {
        return json_response(StatusCode::UNAUTHORIZED, &json!({"error": "send a bearer token of the approver"}));
    };
    match page.host.approvals().pending().await {
        Ok(list) => {
            let mine: Vec<serde_json::Value> =
                list.iter().filter(|a| terminal_may_answer(&page, a, &principal).is_ok()).map(listed).collect();
            json_response(StatusCode::OK, &json!({"principal": principal, "pending": mine}))
        }
        Err(err) => json_response(StatusCode::SERVICE_UNAVAILABLE, &json!({"error": err.to_string()})),
    }
}

#[derive(Deserialize)]
struct ApiAnswer {
    decision: String,
}

pub(super) async fn api_answer(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !page.limiter.allow(client(connected.as_ref())) {
        return json_response(StatusCode::TOO_MANY_REQUESTS, &json!({"error": "too many requests"}));
    }
    let Some(principal) = bearer(&page, &headers).await else {
        return json_response(StatusCode::UNAUTHORIZED, &json!({"error": "send a bearer token of the approver"}));
    };
    let approved = match serde_json::from_slice::<ApiAnswer>(&body).map(|a| a.decision) {
        Ok(decision) if decision == "approve" => true,
        Ok(decision) if decision == "decline" => false,
        _ => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": "send {\"decision\": \"approve\"|\"decline\"}"}),
            );
        }
    };
    let approval = match page.host.approvals().get(&id).await {
        Ok(Some(approval)) => approval,
        Ok(None) => {
            return json_response(StatusCode::NOT_FOUND, &json!({"error": "no such approval (lapsed or unknown)"}));
        }
        Err(err) => return json_response(StatusCode::SERVICE_UNAVAILABLE, &json!({"error": err.to_string()})),
    };
    if let Err(why) = terminal_may_answer(&page, &approval, &principal) {
        refused(&page, &approval, Some(&principal), &why);
        return json_response(StatusCode::FORBIDDEN, &json!({"error": why}));
    }
    let answer = Answer { by: principal, how: How::Terminal, at_ms: now_ms(), approved };
    match page.host.approvals().answer(&approval.id, answer).await {
        Ok(Ok(answered)) => {
            json_response(StatusCode::OK, &json!({"answered": listed(&answered), "approved": approved}))
        }
        Ok(Err(NotAnswered::Answered(given))) => json_response(
            StatusCode::CONFLICT,
            &json!({"error": format!("already {} by {}", if given.approved { "approved" } else { "declined" }, given.by)}),
        ),
        Ok(Err(NotAnswered::Unknown)) => json_response(StatusCode::NOT_FOUND, &json!({"error": "lapsed"})),
        Err(err) => json_response(StatusCode::SERVICE_UNAVAILABLE, &json!({"error": err.to_string()})),
    }
}
