//! Signing a person in at the issuer of `[http.jwt]`, in the browser:
//! OpenID Connect authorization code with PKCE (S256), a `state` and a
//! `nonce`, the client being `[approvals] client_id` (a public client: no
//! secret). The issuer's endpoints come from its discovery document, read
//! once (again after a failure). The ID token is checked by the same
//! verifier, key set and principal claim as access tokens
//! (`jwt::Verifier::verify_id_token`).
//!
//! What the browser carries between the redirect and the callback (the
//! PKCE verifier, the state, the nonce, where to go next) is in a cookie
//! signed with the host's link key, so nothing of it is kept here; the
//! session that follows is a signed cookie too (`Session`). Nothing the
//! browser or the issuer sends is trusted unchecked: cookies are capped and
//! their MACs compared in constant time, the callback's `state` must be the
//! cookie's, the token response is capped.

use super::super::jwt::Verifier;
use super::{Bucket, ClientConnection, Page, client, cookie, notice, set_cookie, too_many};
use airlock_pipeline::transport::access::Access;
use airlock_pipeline::transport::approval::{LinkKey, PAGE_PATH, now_ms};
use airlock_pipeline::transport::outbound::Outbound;
use axum::Extension;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use ring::rand::SecureRandom as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

/// The most bytes of the discovery document and of the token response read.
pub(super) const MAX_ISSUER_RESPONSE_BYTES: usize = 64 << 10;
/// How long a request to the issuer may take.
pub(super) const ISSUER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a sign-in may take, from the redirect to the callback.
pub(super) const SIGNIN_TTL_MS: u64 = 10 * 60 * 1000;
/// How long a page session lasts once signed in.
pub(super) const SESSION_TTL_MS: u64 = 30 * 60 * 1000;
/// The most bytes of a cookie value accepted.
pub(super) const MAX_COOKIE_BYTES: usize = 2048;
/// The cookie of a sign-in in progress.
pub(super) const SIGNIN_COOKIE: &str = "airlock-signin";
/// The cookie of a signed-in person.
pub(super) const SESSION_COOKIE: &str = "airlock-approver";
/// MAC contexts, one per use of the link key.
const SIGNIN_CONTEXT: &[u8] = b"airlock approval sign-in v1";
const SESSION_CONTEXT: &[u8] = b"airlock approval session v1";
const CSRF_CONTEXT: &[u8] = b"airlock approval form v1";

/// What a sign-in in progress remembers in its cookie.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Pending {
    /// The PKCE code verifier.
    pub(super) verifier: String,
    /// The `state` sent to the issuer.
    pub(super) state: String,
    /// The `nonce` sent to the issuer.
    pub(super) nonce: String,
    /// Where to go once signed in (a path under `/approvals/`).
    pub(super) next: String,
    /// Unix milliseconds after which the sign-in is void.
    pub(super) expires_ms: u64,
}

/// A signed-in person, as their session cookie says.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub(super) struct Session {
    /// Their principal, from the issuer's ID token.
    pub(super) principal: String,
    /// A random id: forms are bound to it.
    pub(super) id: String,
    /// Unix milliseconds after which they must sign in again.
    pub(super) expires_ms: u64,
}

/// Seal a sign-in in progress.
pub(super) fn seal_pending(key: &LinkKey, pending: &Pending) -> Option<String> {
    key.seal(SIGNIN_CONTEXT, pending)
}

/// The sign-in in progress `text` seals, if it checks and has not lapsed.
pub(super) fn open_pending(key: &LinkKey, text: &str, now_ms: u64) -> Option<Pending> {
    key.open::<Pending>(SIGNIN_CONTEXT, text, MAX_COOKIE_BYTES).filter(|p| p.expires_ms > now_ms)
}

/// Seal a session.
pub(super) fn seal_session(key: &LinkKey, session: &Session) -> Option<String> {
    key.seal(SESSION_CONTEXT, session)
}

/// The session `text` seals, if it checks and has not lapsed.
pub(super) fn open_session(key: &LinkKey, text: &str, now_ms: u64) -> Option<Session> {
    key.open::<Session>(SESSION_CONTEXT, text, MAX_COOKIE_BYTES).filter(|s| s.expires_ms > now_ms)
}

/// The form token of `approval` for the session `session` (`"link"` when
/// the link alone identifies the person).
pub(super) fn csrf(key: &LinkKey, session: &str, approval: &str) -> String {
    key.sign(CSRF_CONTEXT, &[session.as_bytes(), approval.as_bytes()])
}

/// Whether `token` is the form token of `approval` for `session`.
pub(super) fn csrf_checks(key: &LinkKey, session: &str, approval: &str, token: &str) -> bool {
    key.verify(CSRF_CONTEXT, &[session.as_bytes(), approval.as_bytes()], token)
}

/// `bytes` random bytes as base64url.
pub(super) fn random(bytes: usize) -> Option<String> {
    let mut buf = vec![0u8; bytes];
    ring::rand::SystemRandom::new().fill(&mut buf).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf))
}

/// The S256 challenge of a PKCE verifier.
pub(super) fn challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The issuer's endpoints, from its discovery document.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Endpoints {
    pub(super) issuer: String,
    pub(super) authorization_endpoint: String,
    pub(super) token_endpoint: String,
}

/// The page's client at the issuer of `[http.jwt]`.
pub(super) struct SignIn {
    pub(super) verifier: Arc<Verifier>,
    pub(super) client_id: String,
    endpoints: Mutex<Option<Endpoints>>,
}

impl SignIn {
    pub(super) fn new(verifier: Arc<Verifier>, client_id: String) -> Self {
        SignIn { verifier, client_id, endpoints: Mutex::new(None) }
    }

    /// The issuer's endpoints, read once from its discovery document.
    pub(super) async fn endpoints(&self) -> Result<Endpoints, String> {
        let mut held = self.endpoints.lock().await;
        if let Some(endpoints) = held.as_ref() {
            return Ok(endpoints.clone());
        }
        let issuer = self.verifier.issuer().trim_end_matches('/');
        let url = format!("{issuer}/.well-known/openid-configuration");
        let response = Outbound::get(&url, MAX_ISSUER_RESPONSE_BYTES, ISSUER_TIMEOUT)
            .send()
            .await
            .map_err(|err| format!("the issuer's discovery document ({url}) cannot be read: {err}"))?;
        if response.status != http::StatusCode::OK {
            return Err(format!("the issuer's discovery document ({url}) answered {}", response.status));
        }
        let endpoints: Endpoints = serde_json::from_slice(&response.body)
            .map_err(|err| format!("the issuer's discovery document ({url}) is not one: {err}"))?;
        if endpoints.issuer.trim_end_matches('/') != issuer {
            return Err(format!(
                "the issuer's discovery document names the issuer {:?}, not {issuer:?} ([http.jwt] issuer)",
                endpoints.issuer
            ));
        }
        *held = Some(endpoints.clone());
        Ok(endpoints)
    }

    /// Exchange the callback's `code` for an ID token and verify it: the
    /// principal it names.
    pub(super) async fn finish(
        &self,
        code: &str,
        redirect_uri: &str,
        pending: &Pending,
        access: &Access,
    ) -> Result<String, String> {
        let endpoints = self.endpoints().await?;
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("client_id", &self.client_id)
            .append_pair("code_verifier", &pending.verifier)
            .finish();
        let request = Outbound {
            method: http::Method::POST,
            url: &endpoints.token_endpoint,
            headers: Vec::new(),
            body: Some(("application/x-www-form-urlencoded", form.into_bytes())),
            max_bytes: MAX_ISSUER_RESPONSE_BYTES,
            timeout: ISSUER_TIMEOUT,
        };
        let response = request.send().await.map_err(|err| format!("the issuer's token endpoint failed: {err}"))?;
        if response.status != http::StatusCode::OK {
            return Err(format!("the issuer refused the sign-in ({})", response.status));
        }
        #[derive(Deserialize)]
        struct Tokens {
            id_token: String,
        }
        let tokens: Tokens =
            serde_json::from_slice(&response.body).map_err(|_| "the issuer's answer has no ID token".to_owned())?;
        self.verifier.verify_id_token(&tokens.id_token, &self.client_id, &pending.nonce, access).await
    }
}

#[derive(Deserialize)]
pub(super) struct SignInQuery {
    #[serde(default)]
    next: String,
}

pub(super) async fn sign_in(
    State(page): State<Arc<Page>>,
    Query(query): Query<SignInQuery>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    if !page.limiter.allow(Bucket::Address(client(connected.as_ref(), &headers))) {
        return too_many(&page);
    }
    let Some(signin) = &page.signin else {
        return notice(&page, StatusCode::NOT_FOUND, "No sign-in", "This server has no sign-in ([http.jwt]).");
    };
    // Only back to an approval page: never a redirect elsewhere.
    let next = if query.next.starts_with(&format!("{PAGE_PATH}/")) && !query.next.contains("//") {
        query.next
    } else {
        PAGE_PATH.to_owned()
    };
    let endpoints = match signin.endpoints().await {
        Ok(endpoints) => endpoints,
        Err(err) => {
            tracing::warn!("{err}");
            return notice(
                &page,
                StatusCode::BAD_GATEWAY,
                "Sign-in unavailable",
                "The sign-in service cannot be reached.",
            );
        }
    };
    let (Some(verifier), Some(state), Some(nonce)) = (random(48), random(24), random(24)) else {
        return notice(&page, StatusCode::INTERNAL_SERVER_ERROR, "Sign-in unavailable", "No random source.");
    };
    let pending = Pending { verifier, state, nonce, next, expires_ms: now_ms().saturating_add(SIGNIN_TTL_MS) };
    let Some(sealed) = seal_pending(page.host.approvals().key(), &pending) else {
        return notice(
            &page,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Sign-in unavailable",
            "The sign-in could not be started.",
        );
    };
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", &signin.client_id)
        .append_pair("redirect_uri", &format!("{}{PAGE_PATH}/callback", page.base))
        .append_pair("scope", "openid")
        .append_pair("state", &pending.state)
        .append_pair("nonce", &pending.nonce)
        .append_pair("code_challenge", &challenge(&pending.verifier))
        .append_pair("code_challenge_method", "S256")
        .finish();
    let separator = if endpoints.authorization_endpoint.contains('?') { '&' } else { '?' };
    let location = format!("{}{separator}{query}", endpoints.authorization_endpoint);
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&location) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(header::SET_COOKIE, set_cookie(&page, SIGNIN_COOKIE, &sealed, SIGNIN_TTL_MS / 1000));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Deserialize)]
pub(super) struct CallbackQuery {
    #[serde(default)]
    code: String,
    #[serde(default)]
    state: String,
}

pub(super) async fn callback(
    State(page): State<Arc<Page>>,
    Query(query): Query<CallbackQuery>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    if !page.limiter.allow(Bucket::Address(client(connected.as_ref(), &headers))) {
        return too_many(&page);
    }
    let Some(signin) = &page.signin else {
        return notice(&page, StatusCode::NOT_FOUND, "No sign-in", "This server has no sign-in ([http.jwt]).");
    };
    let key = page.host.approvals().key();
    let pending = cookie(&headers, SIGNIN_COOKIE).and_then(|text| open_pending(key, text, now_ms()));
    let Some(pending) = pending.filter(|p| !query.state.is_empty() && p.state == query.state) else {
        return notice(
            &page,
            StatusCode::BAD_REQUEST,
            "Sign-in not recognised",
            "This sign-in was not started here, or it took too long. Open the approval link again.",
        );
    };
    let redirect_uri = format!("{}{PAGE_PATH}/callback", page.base);
    let access = page.host.state().access().clone();
    let principal = match signin.finish(&query.code, &redirect_uri, &pending, &access).await {
        Ok(principal) => principal,
        Err(why) => {
            tracing::warn!("an approval page sign-in failed: {why}");
            return notice(&page, StatusCode::FORBIDDEN, "Sign-in failed", &why);
        }
    };
    let Some(id) = random(24) else {
        return notice(&page, StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", "No random source.");
    };
    let session = Session { principal, id, expires_ms: now_ms().saturating_add(SESSION_TTL_MS) };
    let Some(sealed) = seal_session(key, &session) else {
        return notice(&page, StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", "The session could not be made.");
    };
    let mut response = StatusCode::SEE_OTHER.into_response();
    let out = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&pending.next) {
        out.insert(header::LOCATION, location);
    }
    out.append(header::SET_COOKIE, set_cookie(&page, SESSION_COOKIE, &sealed, SESSION_TTL_MS / 1000));
    out.append(header::SET_COOKIE, set_cookie(&page, SIGNIN_COOKIE, "", 0));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_context_and_time() {
        let key = LinkKey::random().unwrap();
        let session = Session { principal: "alice".into(), id: "s1".into(), expires_ms: 100 };
        let sealed = seal_session(&key, &session).unwrap();
        assert_eq!(open_session(&key, &sealed, 50), Some(session));
        assert_eq!(open_session(&key, &sealed, 100), None, "lapsed");
        assert_eq!(open_session(&LinkKey::random().unwrap(), &sealed, 50), None, "another key");
        assert!(open_pending(&key, &sealed, 50).is_none(), "another context");
        let (body, mac) = sealed.rsplit_once('.').unwrap();
        // JSON begins `{"`, which base64 writes `eyJ`: changing it is sure
        // to change the body (a body may hold no given letter).
        let forged = format!("{}.{mac}", body.replacen("eyJ", "fyJ", 1));
        assert_eq!(open_session(&key, &forged, 50), None, "an edited body");
        assert_eq!(open_session(&key, &"x".repeat(MAX_COOKIE_BYTES + 1), 50), None);
    }

    #[test]
    fn form_tokens_are_bound_to_the_session_and_the_approval() {
        let key = LinkKey::random().unwrap();
        let token = csrf(&key, "s1", "a1");
        assert!(csrf_checks(&key, "s1", "a1", &token));
        assert!(!csrf_checks(&key, "s2", "a1", &token));
        assert!(!csrf_checks(&key, "s1", "a2", &token));
        assert!(!csrf_checks(&key, "s1", "a1", ""));
    }

    #[test]
    fn the_pkce_challenge_is_s256() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
