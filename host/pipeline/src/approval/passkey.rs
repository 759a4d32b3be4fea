//! Passkeys: WebAuthn with user verification, what proves that a person at
//! an authenticator answered on Airlock's page, not the software between
//! them and Airlock. A link, a cookie, a form token or a bearer token only
//! proves that someone holds it, and an MCP client holds all of them; an
//! assertion needs the authenticator and the person's fingerprint, face or
//! PIN on it.
//!
//! The ceremonies are `webauthn-rs`'s (registration and authentication of a
//! passkey, user verification required); this module binds them to what is
//! being proven and keeps nothing between the page and the answer: a
//! challenge's state is sealed with the host's link key into what the page
//! carries ([`Challenge::sealed`]) and is bound to its purpose
//! ([`Purpose`]). For an answer that is the approval (its id, principal,
//! tool, tool revision and argument digest) and the answer itself
//! (approve or decline), so an assertion made for one approval, or for
//! declining it, answers nothing else; and an approval is answered once,
//! so a replayed assertion finds it answered (and its signature counter
//! behind the one kept).
//!
//! The relying party is the page's origin ([`RelyingParty::for_page`]): a
//! browser makes passkeys only for a domain reached over https, or for
//! `localhost` over http, so a page served at `http://127.0.0.1:8080` or at
//! another host over plain http cannot have them.
//!
//! # Trust
//!
//! Trusted: the operator's settings, the host's link key, and the
//! credentials kept (`store.rs`). Not trusted: everything a browser sends
//! back (the sealed state's MAC is checked before it is read, and the
//! credential is verified by `webauthn-rs` against the challenge, the
//! origin, the relying party id and the public key kept), capped at
//! [`MAX_CREDENTIAL_BYTES`] and [`MAX_SEALED_BYTES`].

pub mod store;

use super::Approval;
use super::link::LinkKey;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use webauthn_rs::prelude::{
    AuthenticationResult, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, Url, Uuid, Webauthn, WebauthnBuilder,
};

/// Most bytes of a credential (the browser's JSON answer to a ceremony)
/// read.
pub const MAX_CREDENTIAL_BYTES: usize = 16 << 10;
/// Most bytes of a sealed ceremony state read.
pub const MAX_SEALED_BYTES: usize = 48 << 10;
/// Most passkeys one challenge allows: the approvers' passkeys when a
/// group may approve (past it, those enrolled first).
pub const MAX_ALLOWED_PASSKEYS: usize = 64;
/// How long a person has to answer a challenge shown on the page.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(10 * 60);
/// The name the authenticator shows for the relying party.
const RP_NAME: &str = "Airlock approvals";
/// Separates sealed ceremony states from every other use of the link key.
const AUTHENTICATION_CONTEXT: &[u8] = b"airlock passkey authentication v1";
const REGISTRATION_CONTEXT: &[u8] = b"airlock passkey registration v1";

/// The page's relying party: its id (the origin's host) and origin.
pub struct RelyingParty {
    id: String,
    origin: String,
    webauthn: Webauthn,
}

impl std::fmt::Debug for RelyingParty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelyingParty").field("id", &self.id).field("origin", &self.origin).finish_non_exhaustive()
    }
}

/// What an assertion is made for: the one thing it proves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Purpose {
    /// Answering an approval, one way.
    Answer {
        /// The approval's id.
        approval: String,
        /// The principal the call acts for.
        principal: String,
        /// The tool.
        tool: String,
        /// Its revision.
        revision: String,
        /// The digest of the arguments.
        argument_digest: String,
        /// Approve (`true`) or decline.
        approved: bool,
    },
    /// Letting another passkey be added for a principal who has one: an
    /// existing one confirms it.
    Enrol {
        /// The principal.
        principal: String,
        /// What the enrolment came through (an enrolment link's digest, or
        /// the signed-in session's id).
        through: String,
    },
}

impl Purpose {
    /// The purpose of answering `approval` with `approved`.
    pub fn answer(approval: &Approval, approved: bool) -> Self {
        Purpose::Answer {
            approval: approval.id.clone(),
            principal: approval.principal.clone(),
            tool: approval.tool.clone(),
            revision: approval.revision.clone(),
            argument_digest: approval.argument_digest.clone(),
            approved,
        }
    }
}

/// A challenge for the page: the options handed to the browser's
/// `navigator.credentials` (JSON of `publicKey`) and the state the page
/// sends back with the browser's answer.
#[derive(Debug, Clone)]
pub struct Challenge {
    /// `PublicKeyCredentialRequestOptions` or `…CreationOptions`, as JSON.
    pub options: String,
    /// The ceremony's state, sealed and bound to its purpose.
    pub sealed: String,
}

/// An authentication in progress, as sealed.
#[derive(Serialize, Deserialize)]
struct Asked {
    purpose: Purpose,
    expires_ms: u64,
    state: PasskeyAuthentication,
}

/// A registration in progress, as sealed.
#[derive(Serialize, Deserialize)]
struct Registering {
    principal: String,
    user: Uuid,
    through: String,
    expires_ms: u64,
    state: PasskeyRegistration,
}

/// Why an assertion or a registration was not accepted, in words for the
/// person at the page and the audit log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotProven(pub String);

impl RelyingParty {
    /// The relying party of a page served at `base` (scheme, host and
    /// port).
    ///
    /// # Errors
    ///
    /// Why a browser cannot make passkeys for that origin, and what would
    /// do: `https://` and a domain name, or `http://localhost`.
    pub fn for_page(base: &str) -> Result<Self, String> {
        let origin = Url::parse(base).map_err(|err| format!("{base:?} is not an origin ({err})"))?;
        let host = match (origin.domain(), origin.host_str()) {
            (Some(host), _) => host.to_owned(),
            (None, Some(_)) => {
                return Err(format!(
                    "the page's origin {base} names an IP address, and a passkey's relying party is a domain name: \
                     browsers refuse passkeys for it. Reach the page as http://localhost:PORT (set [approvals] \
                     public_url to it), or at an https:// name"
                ));
            }
            (None, None) => return Err(format!("the page's origin {base} has no host")),
        };
        let local = host == "localhost" || host.ends_with(".localhost");
        if origin.scheme() != "https" && !local {
            return Err(format!(
                "the page's origin {base} is plain http at another host than localhost, which browsers do not trust \
                 with passkeys: serve it behind https (set [approvals] public_url = \"https://…\")"
            ));
        }
        let webauthn = WebauthnBuilder::new(&host, &origin)
            .and_then(|builder| builder.rp_name(RP_NAME).timeout(CHALLENGE_TTL).build())
            .map_err(|err| format!("passkeys cannot be set up for {base}: {err}"))?;
        Ok(RelyingParty { id: host, origin: base.trim_end_matches('/').to_owned(), webauthn })
    }

    /// The relying party id (the page's host).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The origin passkeys are used at.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// A challenge for `purpose` that one of `allowed` (at most
    /// [`MAX_ALLOWED_PASSKEYS`], the first ones) answers, sealed with `key`.
    ///
    /// # Errors
    ///
    /// No passkey is allowed, or the challenge cannot be made.
    pub fn ask(&self, key: &LinkKey, purpose: Purpose, allowed: &[Passkey], now_ms: u64) -> Result<Challenge, String> {
        let allowed = allowed.get(..allowed.len().min(MAX_ALLOWED_PASSKEYS)).unwrap_or_default();
        if allowed.is_empty() {
            return Err("no passkey may answer this".to_owned());
        }
        let (options, state) =
            self.webauthn.start_passkey_authentication(allowed).map_err(|err| format!("no challenge: {err}"))?;
        let options = serde_json::to_string(&options.public_key).map_err(|err| err.to_string())?;
        let asked = Asked { purpose, expires_ms: now_ms.saturating_add(ttl_ms()), state };
        let sealed = key.seal(AUTHENTICATION_CONTEXT, &asked).ok_or("the challenge cannot be sealed")?;
        Ok(Challenge { options, sealed })
    }

    /// Check an assertion (`credential`, the browser's JSON) against the
    /// challenge `sealed` carries, which must be for `purpose` and not
    /// lapsed.
    ///
    /// # Errors
    ///
    /// Why it proves nothing: a state not sealed here, for another purpose
    /// or lapsed, a credential that is not an assertion, or one that does
    /// not verify (another challenge, origin or key, no user
    /// verification).
    pub fn check(
        &self,
        key: &LinkKey,
        purpose: &Purpose,
        sealed: &str,
        credential: &str,
        now_ms: u64,
    ) -> Result<AuthenticationResult, NotProven> {
        let asked: Asked = key
            .open(AUTHENTICATION_CONTEXT, sealed, MAX_SEALED_BYTES)
            .ok_or_else(|| NotProven("the passkey challenge was not made by this page".into()))?;
        if asked.purpose != *purpose {
            return Err(NotProven("the passkey's answer was made for another approval or answer".into()));
        }
        if asked.expires_ms <= now_ms {
            return Err(NotProven("the passkey challenge lapsed: reload the page".into()));
        }
        let credential: PublicKeyCredential = parse(credential)?;
        let result = self
            .webauthn
            .finish_passkey_authentication(&credential, &asked.state)
            .map_err(|err| NotProven(format!("the passkey's answer does not verify ({err})")))?;
        if !result.user_verified() {
            return Err(NotProven("the authenticator did not verify the person (no PIN or biometric)".into()));
        }
        Ok(result)
    }

    /// A registration of a new passkey for `principal` (WebAuthn user
    /// `user`), coming `through` an enrolment link or a session;
    /// `existing` passkeys (of anyone) are excluded.
    ///
    /// # Errors
    ///
    /// The challenge cannot be made.
    pub fn register(
        &self,
        key: &LinkKey,
        principal: &str,
        user: Uuid,
        through: &str,
        existing: &[Passkey],
        now_ms: u64,
    ) -> Result<Challenge, String> {
        let exclude = existing.iter().map(|p| p.cred_id().clone()).collect::<Vec<_>>();
        let (options, state) = self
            .webauthn
            .start_passkey_registration(user, principal, principal, Some(exclude))
            .map_err(|err| format!("no registration: {err}"))?;
        let options = serde_json::to_string(&options.public_key).map_err(|err| err.to_string())?;
        let registering = Registering {
            principal: principal.to_owned(),
            user,
            through: through.to_owned(),
            expires_ms: now_ms.saturating_add(ttl_ms()),
            state,
        };
        let sealed = key.seal(REGISTRATION_CONTEXT, &registering).ok_or("the registration cannot be sealed")?;
        Ok(Challenge { options, sealed })
    }

    /// The passkey a registration made, and the user handle it was made
    /// for, checked against the registration `sealed` carries, which must
    /// be for `principal` coming `through` the same link or session.
    ///
    /// # Errors
    ///
    /// Why no passkey was made.
    pub fn registered(
        &self,
        key: &LinkKey,
        principal: &str,
        through: &str,
        sealed: &str,
        credential: &str,
        now_ms: u64,
    ) -> Result<(Passkey, Uuid), NotProven> {
        let registering: Registering = key
            .open(REGISTRATION_CONTEXT, sealed, MAX_SEALED_BYTES)
            .ok_or_else(|| NotProven("the registration was not started by this page".into()))?;
        if registering.principal != principal || registering.through != through {
            return Err(NotProven("the registration was started for another person or link".into()));
        }
        if registering.expires_ms <= now_ms {
            return Err(NotProven("the registration lapsed: reload the page".into()));
        }
        let credential: RegisterPublicKeyCredential = parse(credential)?;
        let passkey = self
            .webauthn
            .finish_passkey_registration(&credential, &registering.state)
            .map_err(|err| NotProven(format!("the new passkey does not verify ({err})")))?;
        Ok((passkey, registering.user))
    }
}

/// A credential's id as text (base64url, as the browser names it).
pub fn credential_id(id: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}

fn ttl_ms() -> u64 {
    u64::try_from(CHALLENGE_TTL.as_millis()).unwrap_or(u64::MAX)
}

/// The browser's JSON answer, capped.
fn parse<T: serde::de::DeserializeOwned>(credential: &str) -> Result<T, NotProven> {
    if credential.len() > MAX_CREDENTIAL_BYTES {
        return Err(NotProven(format!("the passkey's answer is over {MAX_CREDENTIAL_BYTES} bytes")));
    }
    if credential.is_empty() {
        return Err(NotProven("no passkey answered: the page's Approve and Decline need one".into()));
    }
    serde_json::from_str(credential).map_err(|_| NotProven("the passkey's answer is not one".into()))
}

#[cfg(test)]
mod tests;
