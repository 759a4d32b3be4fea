//! The terminal's API of the approval page: `GET /approvals/api/pending`,
//! what a named approver lists with `airlock approvals list`: the
//! approvals waiting for them, each with its link. A terminal lists; it
//! does not answer: a bearer token proves only that its holder has it (an
//! MCP client may hold the approver's), so answers are given on the page,
//! where the approver proves they are there.
//!
//! # Trust
//!
//! The bearer token a request presents is checked as the MCP gate checks
//! it (a static token of the state in force, or a JWT with `[http.jwt]`),
//! and names whose approvals are listed; never the caller's own, which
//! only they approve. Each client address shares the page's request rate.

use super::{Bucket, Page, client, json_response};
use crate::http::connections::ClientConnection;
use airlock_pipeline::Approver;
use airlock_pipeline::transport::approval::{Approval, may_answer, now_ms};
use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
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

/// An approval as the terminal lists it, with the link that answers it.
fn listed(page: &Page, approval: &Approval) -> serde_json::Value {
    json!({
        "id": approval.id,
        "principal": approval.principal,
        "tool": approval.tool,
        "revision": approval.revision,
        "card": approval.card,
        "reason": approval.reason,
        "approver": approval.approver.describe(&approval.principal),
        "expires_in_secs": approval.expires_ms.saturating_sub(now_ms()) / 1000,
        "link": page.host.approvals().link(approval),
    })
}

/// Whether `principal` is a named approver who may answer `approval`.
fn named_approver(page: &Page, approval: &Approval, principal: &str) -> bool {
    let state = page.host.state();
    approval.approver != Approver::Caller
        && may_answer(approval, principal, |person, group| state.policy().principal_is_in(person, group)).is_ok()
}

pub(super) async fn api_pending(
    State(page): State<Arc<Page>>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    if !page.limiter.allow(Bucket::Address(client(connected.as_ref(), &headers))) {
        return json_response(&page, StatusCode::TOO_MANY_REQUESTS, &json!({"error": "too many requests"}));
    }
    let Some(principal) = bearer(&page, &headers).await else {
        return json_response(
            &page,
            StatusCode::UNAUTHORIZED,
            &json!({"error": "send a bearer token of the approver"}),
        );
    };
    match page.host.approvals().pending().await {
        Ok(list) => {
            let mine: Vec<serde_json::Value> =
                list.iter().filter(|a| named_approver(&page, a, &principal)).map(|a| listed(&page, a)).collect();
            json_response(&page, StatusCode::OK, &json!({"principal": principal, "pending": mine}))
        }
        Err(err) => json_response(&page, StatusCode::SERVICE_UNAVAILABLE, &json!({"error": err.to_string()})),
    }
}
