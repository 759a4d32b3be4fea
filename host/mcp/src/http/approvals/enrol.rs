//! Adding a person's passkey: through a one-time link the operator made in
//! a terminal (`airlock approvals enroll NAME`: `/approvals/enroll/<token>`,
//! alive for `ENROLMENT_TTL`, used up by the passkey it adds), or, with
//! `[http.jwt]`, signed in (`/approvals/passkeys`). Once a principal has a
//! passkey, adding another needs an assertion from one of theirs first:
//! an enrolment link that leaked, or a session someone else holds, does
//! not add a passkey to a person who has one.
//!
//! # Trust
//!
//! The link's token is checked against the digest kept (never the token);
//! the registration and the confirming assertion come back as sealed
//! challenges bound to the principal and to what the enrolment came
//! through (the link's digest or the session), and are verified by
//! `webauthn-rs` against the page's origin. A form from another site is
//! refused. What the link itself proves is only that the operator made it:
//! whoever opens it first adds the first passkey (the book's approvals
//! page says what that means).

use super::{Bucket, ClientConnection, Page, client, form, html, notice, same_origin, signed_in, signin, too_many};
use airlock_pipeline::transport::approval::{
    Credential, NotAdded, PAGE_PATH, Purpose, RelyingParty, credential_id, now_ms,
};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use std::sync::Arc;

/// The context of the signed-in enrolment form's token.
const PASSKEYS_FORM: &str = "passkeys";

/// What an enrolment form sends.
#[derive(Deserialize)]
struct EnrolForm {
    #[serde(default)]
    csrf: String,
    /// The registration, sealed.
    #[serde(default)]
    registration_state: String,
    /// The new passkey (the browser's JSON).
    #[serde(default)]
    registration: String,
    /// The confirming challenge, sealed (when the person has a passkey).
    #[serde(default)]
    state: String,
    /// The confirming assertion.
    #[serde(default)]
    credential: String,
}

/// Whose passkey is being added, and through what.
struct Enrolling {
    principal: String,
    /// `link DIGEST` or `session ID`: what the sealed challenges are bound to.
    through: String,
    /// The one-time link's token, used up by the passkey it adds.
    link: Option<String>,
    /// The form token of a signed-in person.
    csrf: Option<String>,
    /// Where the form is sent.
    action: String,
}

/// The relying party, or the page that says this server adds no passkeys.
fn relying_party(page: &Page) -> Result<&RelyingParty, Box<Response>> {
    page.passkeys.as_ref().ok_or_else(|| {
        Box::new(notice(
            page,
            StatusCode::NOT_FOUND,
            "No passkeys here",
            "This server signs people in at its identity provider and asks for no passkey ([approvals] \
             require_passkey is off).",
        ))
    })
}

/// The enrolment of the link `token`, within its principal's request rate.
async fn by_link(
    page: &Page,
    token: &str,
    headers: &HeaderMap,
    connected: Option<&Extension<ClientConnection>>,
) -> Result<Enrolling, Box<Response>> {
    let found = page.host.approvals().passkeys().enrolment(token, now_ms()).await;
    let enrolment = match found {
        Ok(Some(enrolment)) => enrolment,
        Ok(None) => {
            if !page.limiter.allow(Bucket::Address(client(connected, headers))) {
                return Err(Box::new(too_many(page)));
            }
            return Err(Box::new(notice(
                page,
                StatusCode::NOT_FOUND,
                "No such enrolment link",
                "This link was used already, or it lapsed: ask the operator for another (`airlock approvals enroll \
                 NAME`).",
            )));
        }
        Err(err) => {
            tracing::warn!("{err}");
            return Err(Box::new(notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "")));
        }
    };
    if !page.limiter.allow(Bucket::Principal(enrolment.principal.clone())) {
        return Err(Box::new(too_many(page)));
    }
    Ok(Enrolling {
        principal: enrolment.principal,
        through: format!("link {}", airlock_pipeline::transport::approval::token_digest(token)),
        link: Some(token.to_owned()),
        csrf: None,
        action: format!("{PAGE_PATH}/enroll/{token}"),
    })
}

/// The signed-in person's enrolment; a person not signed in is sent to.
fn by_session(page: &Page, headers: &HeaderMap) -> Result<Enrolling, Box<Response>> {
    let action = format!("{PAGE_PATH}/passkeys");
    let Some(session) = signed_in(page, headers, &action)? else {
        return Err(Box::new(notice(
            page,
            StatusCode::NOT_FOUND,
            "No sign-in",
            "This server has no sign-in ([http.jwt]): a passkey is added through a link the operator makes \
             (`airlock approvals enroll NAME`).",
        )));
    };
    if !page.limiter.allow(Bucket::Principal(session.principal.clone())) {
        return Err(Box::new(too_many(page)));
    }
    let csrf = signin::csrf(page.host.approvals().key(), &session.id, PASSKEYS_FORM);
    Ok(Enrolling {
        principal: session.principal,
        through: format!("session {}", session.id),
        link: None,
        csrf: Some(csrf),
        action,
    })
}

/// The page that adds a passkey for `enrolling`.
async fn show(page: &Page, enrolling: &Enrolling) -> Response {
    let rp = match relying_party(page) {
        Ok(rp) => rp,
        Err(response) => return *response,
    };
    let person = match page.host.approvals().passkeys().person(&enrolling.principal).await {
        Ok(person) => person,
        Err(err) => {
            tracing::warn!("{err}");
            return notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "Passkeys cannot be read.");
        }
    };
    let key = page.host.approvals().key();
    let now = now_ms();
    let existing: Vec<_> = person.iter().flat_map(|p| p.passkeys.iter().map(|c| c.passkey.clone())).collect();
    let user = person.as_ref().map_or_else(webauthn_rs_user, |p| p.user);
    let registration = rp.register(key, &enrolling.principal, user, &enrolling.through, &existing, now);
    let purpose = Purpose::Enrol { principal: enrolling.principal.clone(), through: enrolling.through.clone() };
    let confirm = (!existing.is_empty()).then(|| rp.ask(key, purpose, &existing, now));
    let (registration, confirm) = match (registration, confirm.transpose()) {
        (Ok(registration), Ok(confirm)) => (registration, confirm),
        (Err(err), _) | (_, Err(err)) => {
            tracing::warn!("a passkey registration could not be started: {err}");
            return notice(page, StatusCode::INTERNAL_SERVER_ERROR, "Try again", "The registration could not start.");
        }
    };
    let enrol = super::page::Enrol {
        principal: &enrolling.principal,
        action: &enrolling.action,
        registration: &registration,
        confirm: confirm.as_ref(),
        csrf: enrolling.csrf.as_deref(),
    };
    html(page, StatusCode::OK, super::page::enrol(&enrol))
}

/// A new WebAuthn user handle, for a principal's first passkey.
fn webauthn_rs_user() -> airlock_pipeline::transport::approval::Uuid {
    airlock_pipeline::transport::approval::Uuid::new_v4()
}

/// Add the passkey `form` carries for `enrolling`, once one of their
/// passkeys confirmed it (when they have one).
async fn add(page: &Page, enrolling: &Enrolling, form: &EnrolForm) -> Response {
    let rp = match relying_party(page) {
        Ok(rp) => rp,
        Err(response) => return *response,
    };
    let approvals = page.host.approvals();
    let (key, now) = (approvals.key(), now_ms());
    let principal = enrolling.principal.as_str();
    let refuse = |why: &str| {
        tracing::warn!(principal, through = %enrolling.through, "a passkey was not added: {why}");
        notice(page, StatusCode::FORBIDDEN, "No passkey added", &format!("No passkey was added: {why}."))
    };
    let person = match approvals.passkeys().person(principal).await {
        Ok(person) => person,
        Err(err) => {
            tracing::warn!("{err}");
            return notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "Passkeys cannot be read.");
        }
    };
    let mut added_by = match &enrolling.link {
        Some(_) => "enrolment link".to_owned(),
        None => "sign-in".to_owned(),
    };
    if let Some(person) = person.as_ref().filter(|p| !p.passkeys.is_empty()) {
        let purpose = Purpose::Enrol { principal: principal.to_owned(), through: enrolling.through.clone() };
        let result = match rp.check(key, &purpose, &form.state, &form.credential, now) {
            Ok(result) => result,
            Err(why) => return refuse(&format!("{principal} has a passkey, and it did not confirm this: {why}")),
        };
        let id = credential_id(result.cred_id());
        if !person.passkeys.iter().any(|c| c.id == id) {
            return refuse(&format!("the passkey that confirmed it ({id}) is not one of {principal}'s"));
        }
        if let Err(err) = approvals.passkeys().used(principal, &result, now).await {
            tracing::warn!("{err}");
        }
        added_by = format!("passkey {id}");
    }
    let (passkey, user) =
        match rp.registered(key, principal, &enrolling.through, &form.registration_state, &form.registration, now) {
            Ok(registered) => registered,
            Err(why) => return refuse(&why.0),
        };
    let id = credential_id(passkey.cred_id());
    let credential = Credential { id: id.clone(), passkey, added_ms: now, added_by, used_ms: 0 };
    match approvals.passkeys().add(principal, user, credential, enrolling.link.as_deref(), now).await {
        Ok(Ok(())) => {
            tracing::info!(principal, credential = %id, through = %enrolling.through, "a passkey was added");
            notice(
                page,
                StatusCode::OK,
                "Passkey added",
                &format!("{principal}'s passkey {id} answers approvals on this page from now on."),
            )
        }
        Ok(Err(NotAdded::LinkUsed)) => refuse("the enrolment link was used already, or it lapsed"),
        Ok(Err(NotAdded::Taken)) => refuse("that passkey is registered already"),
        Ok(Err(NotAdded::Full)) => refuse(&format!(
            "{principal} has the most passkeys one person may have; revoke one first (`airlock approvals passkeys revoke`)"
        )),
        Err(err) => {
            tracing::warn!("{err}");
            notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "The passkey could not be kept.")
        }
    }
}

pub(super) async fn show_link(
    State(page): State<Arc<Page>>,
    Path(token): Path<String>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    match by_link(&page, &token, &headers, connected.as_ref()).await {
        Ok(enrolling) => show(&page, &enrolling).await,
        Err(response) => *response,
    }
}

pub(super) async fn add_by_link(
    State(page): State<Arc<Page>>,
    Path(token): Path<String>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form: EnrolForm = match form(&page, &headers, &body) {
        Ok(form) => form,
        Err(response) => return *response,
    };
    let enrolling = match by_link(&page, &token, &headers, connected.as_ref()).await {
        Ok(enrolling) => enrolling,
        Err(response) => return *response,
    };
    if !same_origin(&page, &headers) {
        return notice(&page, StatusCode::FORBIDDEN, "Not from this page", "A passkey is only added from this page.");
    }
    add(&page, &enrolling, &form).await
}

pub(super) async fn show_signed_in(State(page): State<Arc<Page>>, headers: HeaderMap) -> Response {
    match by_session(&page, &headers) {
        Ok(enrolling) => show(&page, &enrolling).await,
        Err(response) => *response,
    }
}

pub(super) async fn add_signed_in(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form: EnrolForm = match form(&page, &headers, &body) {
        Ok(form) => form,
        Err(response) => return *response,
    };
    let enrolling = match by_session(&page, &headers) {
        Ok(enrolling) => enrolling,
        Err(response) => return *response,
    };
    let session_id = enrolling.through.strip_prefix("session ").unwrap_or_default();
    if !same_origin(&page, &headers)
        || !signin::csrf_checks(page.host.approvals().key(), session_id, PASSKEYS_FORM, &form.csrf)
    {
        return notice(&page, StatusCode::FORBIDDEN, "Not from this page", "A passkey is only added from this page.");
    }
    add(&page, &enrolling, &form).await
}
