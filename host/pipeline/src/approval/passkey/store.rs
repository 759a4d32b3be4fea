//! Where passkeys are kept, with the one-time links that enrol a person's
//! first one: where approvals are kept, so that they outlive a restart
//! and a reload and every process of the host (or every replica of a
//! fleet) sees the same ones. On one machine, `passkeys.json` in the
//! approvals' state directory (`[approvals] state_dir`, a file of mode 0600
//! changed under an exclusive lock and replaced atomically, `state_file`);
//! in a fleet, the fleet's Redis (a hash of people, a hash from credential
//! id to principal, one key per enrolment link with its expiry; each change
//! one Lua script that checks the person is as read, so two replicas never
//! lose each other's change).
//!
//! An enrolment link is kept as the SHA-256 of its token, never the token:
//! reading the store gives no working link.
//!
//! # Trust
//!
//! What is kept here decides who can approve: the file is the operator's
//! (only the user Airlock runs as can read or write the state directory),
//! the Redis the fleet's, trusted as the fleet trusts it for approvals.
//! Whoever can write either can enrol a passkey of their own: the
//! book's approvals page says so.

use super::super::state_file::{LazyStateFile, StateError};
use super::super::store::Shared;
use super::credential_id;
use crate::fleet::FleetSettings;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use webauthn_rs::prelude::{AuthenticationResult, Passkey, Uuid};

/// Most passkeys one principal may have.
pub const MAX_PASSKEYS_PER_PRINCIPAL: usize = 16;
/// Most enrolment links waiting to be used at once.
pub const MAX_ENROLMENT_LINKS: usize = 256;
/// How long an enrolment link lives.
pub const ENROLMENT_TTL: Duration = Duration::from_secs(15 * 60);
/// The state file, in `[approvals] state_dir`.
pub const FILE_NAME: &str = "passkeys.json";
/// How often a change kept in Redis is tried when another replica changed
/// the same person meanwhile.
const MAX_SHARED_TRIES: usize = 8;
/// The prefix of every Redis key kept here.
const PREFIX: &str = "airlock:passkeys:";

/// A principal's passkeys, and the WebAuthn user handle they were made
/// for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Person {
    /// The user handle (random, one per principal).
    pub user: Uuid,
    /// The passkeys, oldest first.
    pub passkeys: Vec<Credential>,
}

/// One passkey as kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Credential {
    /// Its credential id, base64url.
    pub id: String,
    /// What verifies it (the public key, the signature counter).
    pub passkey: Passkey,
    /// When it was added (Unix milliseconds).
    pub added_ms: u64,
    /// How: `"enrolment link"`, `"sign-in"`, or `"passkey ID"` (another
    /// passkey of the principal confirmed it).
    pub added_by: String,
    /// When it last answered an approval (Unix milliseconds; 0: never).
    #[serde(default)]
    pub used_ms: u64,
}

/// A waiting enrolment link, kept by its token's digest.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Enrolment {
    /// Whose passkey it enrols.
    pub principal: String,
    /// When it lapses (Unix milliseconds).
    pub expires_ms: u64,
}

/// Why a passkey was not added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAdded {
    /// The enrolment link was used already, or lapsed.
    LinkUsed,
    /// The credential is someone's already.
    Taken,
    /// The principal has [`MAX_PASSKEYS_PER_PRINCIPAL`].
    Full,
}

/// The passkeys could not be read or kept.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the passkeys cannot be read or kept: {0}")]
pub struct Unavailable(pub String);

impl From<StateError> for Unavailable {
    fn from(err: StateError) -> Self {
        Unavailable(err.to_string())
    }
}

/// The file's document.
#[derive(Default, Serialize, Deserialize)]
struct Doc {
    #[serde(default)]
    people: BTreeMap<String, Person>,
    /// Waiting enrolment links, by the SHA-256 (hex) of their token.
    #[serde(default)]
    enrolments: BTreeMap<String, Enrolment>,
}

enum Kept {
    /// Nowhere: no state directory, no fleet. Nobody has a passkey.
    Nowhere,
    File(Arc<LazyStateFile>),
    Shared(Arc<Shared>),
}

/// The host's passkeys.
pub struct Passkeys {
    kept: Kept,
}

impl std::fmt::Debug for Passkeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = match &self.kept {
            Kept::Nowhere => "nowhere",
            Kept::File(_) => "file",
            Kept::Shared(_) => "redis",
        };
        f.debug_struct("Passkeys").field("kept", &kept).finish()
    }
}

/// A new random enrolment token, and its digest.
fn new_token() -> Result<(String, String), Unavailable> {
    use ring::rand::SecureRandom as _;
    let mut bytes = [0u8; 32];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| Unavailable("the system's random source cannot be read".into()))?;
    let token = credential_id(&bytes);
    let digest = token_digest(&token);
    Ok((token, digest))
}

/// The digest an enrolment token is kept by.
pub fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `token` looks like one [`Passkeys::enrolment_link`] made
/// (checked before any lookup).
pub fn is_token(token: &str) -> bool {
    token.len() == 43 && token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Passkeys {
    /// The passkeys of a host: in the fleet's Redis, else in
    /// `state_dir` (opened when first used), else nowhere (nobody can have
    /// one).
    ///
    /// # Errors
    ///
    /// The Redis URL is not one.
    pub fn open(fleet: Option<&FleetSettings>, state_dir: Option<PathBuf>) -> Result<Self, String> {
        let kept = match (fleet, state_dir) {
            (Some(fleet), _) => Kept::Shared(Arc::new(Shared::new(
                &fleet.redis_url,
                fleet.redis_connect_timeout,
                fleet.redis_response_timeout,
            )?)),
            (None, Some(dir)) => Kept::File(Arc::new(LazyStateFile::new(dir, FILE_NAME))),
            (None, None) => Kept::Nowhere,
        };
        Ok(Passkeys { kept })
    }

    /// Whether passkeys can be kept at all.
    pub fn kept(&self) -> bool {
        !matches!(self.kept, Kept::Nowhere)
    }

    /// Every principal with passkeys.
    ///
    /// # Errors
    ///
    /// The store cannot be read.
    pub async fn people(&self) -> Result<BTreeMap<String, Person>, Unavailable> {
        match &self.kept {
            Kept::Nowhere => Ok(BTreeMap::new()),
            Kept::File(file) => {
                let file = file.clone();
                blocking(move || Ok(file.get()?.read::<Doc>()?.people)).await
            }
            Kept::Shared(shared) => {
                let all = shared.hash_all(&people_key()).await.map_err(|e| Unavailable(e.0))?;
                Ok(all.into_iter().filter_map(|(who, json)| Some((who, serde_json::from_str(&json).ok()?))).collect())
            }
        }
    }

    /// `principal`'s passkeys, if any.
    ///
    /// # Errors
    ///
    /// The store cannot be read.
    pub async fn person(&self, principal: &str) -> Result<Option<Person>, Unavailable> {
        match &self.kept {
            Kept::Shared(shared) => {
                let json = shared.hash_get(&people_key(), principal).await.map_err(|e| Unavailable(e.0))?;
                Ok(json.and_then(|json| serde_json::from_str(&json).ok()))
            }
            _ => Ok(self.people().await?.remove(principal)),
        }
    }

    /// A one-time link's token enrolling a passkey for `principal`, alive
    /// for [`ENROLMENT_TTL`].
    ///
    /// # Errors
    ///
    /// Nowhere to keep it, [`MAX_ENROLMENT_LINKS`] are waiting, or the
    /// store cannot be written.
    pub async fn enrolment_link(&self, principal: &str, now_ms: u64) -> Result<String, Unavailable> {
        let (token, digest) = new_token()?;
        let expires_ms = now_ms.saturating_add(u64::try_from(ENROLMENT_TTL.as_millis()).unwrap_or(u64::MAX));
        let enrolment = Enrolment { principal: principal.to_owned(), expires_ms };
        match &self.kept {
            Kept::Nowhere => Err(Unavailable(
                "there is nowhere to keep passkeys: set [approvals] state_dir (or [fleet] for a fleet)".into(),
            )),
            Kept::File(file) => {
                let file = file.clone();
                blocking(move || {
                    file.get()?.update(|doc: &mut Doc| {
                        doc.enrolments.retain(|_, e| e.expires_ms > now_ms);
                        if doc.enrolments.len() >= MAX_ENROLMENT_LINKS {
                            return Err(Unavailable(format!(
                                "{MAX_ENROLMENT_LINKS} enrolment links are waiting to be used; wait until some lapse"
                            )));
                        }
                        doc.enrolments.insert(digest, enrolment);
                        Ok(())
                    })?
                })
                .await?;
                Ok(token)
            }
            Kept::Shared(shared) => {
                let ttl = ENROLMENT_TTL.as_millis().to_string();
                shared
                    .eval(SET_LINK, &[link_key(&digest)], &[principal.to_owned(), ttl])
                    .await
                    .map_err(|e| Unavailable(e.0))?;
                Ok(token)
            }
        }
    }

    /// The waiting enrolment of the link `token`, if it lives.
    ///
    /// # Errors
    ///
    /// The store cannot be read.
    pub async fn enrolment(&self, token: &str, now_ms: u64) -> Result<Option<Enrolment>, Unavailable> {
        if !is_token(token) {
            return Ok(None);
        }
        let digest = token_digest(token);
        match &self.kept {
            Kept::Nowhere => Ok(None),
            Kept::File(file) => {
                let file = file.clone();
                let doc = blocking(move || Ok(file.get()?.read::<Doc>()?)).await?;
                Ok(doc.enrolments.get(&digest).filter(|e| e.expires_ms > now_ms).cloned())
            }
            Kept::Shared(shared) => {
                let principal = shared.get_key(&link_key(&digest)).await.map_err(|e| Unavailable(e.0))?;
                Ok(principal.map(|principal| Enrolment { principal, expires_ms: u64::MAX }))
            }
        }
    }

    /// Add `passkey` for `principal` (WebAuthn user `user`), using up the
    /// enrolment link `link` when it came through one.
    ///
    /// # Errors
    ///
    /// The store cannot be read or written.
    pub async fn add(
        &self,
        principal: &str,
        user: Uuid,
        credential: Credential,
        link: Option<&str>,
        now_ms: u64,
    ) -> Result<Result<(), NotAdded>, Unavailable> {
        let digest = link.map(token_digest);
        match &self.kept {
            Kept::Nowhere => Err(Unavailable("there is nowhere to keep passkeys".into())),
            Kept::File(file) => {
                let (file, principal) = (file.clone(), principal.to_owned());
                blocking(move || {
                    Ok(file.get()?.update(|doc: &mut Doc| {
                        doc.enrolments.retain(|_, e| e.expires_ms > now_ms);
                        if let Some(digest) = &digest {
                            match doc.enrolments.get(digest) {
                                Some(e) if e.principal == principal => {}
                                _ => return Err(NotAdded::LinkUsed),
                            }
                        }
                        if doc.people.values().flat_map(|p| &p.passkeys).any(|c| c.id == credential.id) {
                            return Err(NotAdded::Taken);
                        }
                        let person = doc.people.entry(principal).or_insert(Person { user, passkeys: Vec::new() });
                        if person.passkeys.len() >= MAX_PASSKEYS_PER_PRINCIPAL {
                            return Err(NotAdded::Full);
                        }
                        person.passkeys.push(credential);
                        if let Some(digest) = &digest {
                            doc.enrolments.remove(digest);
                        }
                        Ok(())
                    })?)
                })
                .await
            }
            Kept::Shared(shared) => {
                let link = digest.as_deref().map(link_key);
                let id = credential.id.clone();
                change_shared(shared, principal, link.as_deref(), Some(&id), &[], |person| {
                    let mut person = person.unwrap_or(Person { user, passkeys: Vec::new() });
                    if person.passkeys.len() >= MAX_PASSKEYS_PER_PRINCIPAL {
                        return Err(NotAdded::Full);
                    }
                    person.passkeys.push(credential.clone());
                    Ok(Some(person))
                })
                .await
            }
        }
    }

    /// Note that `principal`'s passkey answered with `result`: its
    /// signature counter and when it was used.
    ///
    /// # Errors
    ///
    /// The store cannot be read or written.
    pub async fn used(&self, principal: &str, result: &AuthenticationResult, now_ms: u64) -> Result<(), Unavailable> {
        let result = result.clone();
        let touch = move |person: &mut Person| {
            for credential in &mut person.passkeys {
                if credential.passkey.update_credential(&result).is_some() {
                    credential.used_ms = now_ms;
                }
            }
        };
        match &self.kept {
            Kept::Nowhere => Ok(()),
            Kept::File(file) => {
                let (file, principal) = (file.clone(), principal.to_owned());
                blocking(move || {
                    file.get()?.update(|doc: &mut Doc| doc.people.get_mut(&principal).map(touch))?;
                    Ok(())
                })
                .await
            }
            Kept::Shared(shared) => {
                let _ = change_shared(shared, principal, None, None, &[], |person| {
                    Ok(person.map(|mut person| {
                        touch(&mut person);
                        person
                    }))
                })
                .await?;
                Ok(())
            }
        }
    }

    /// Remove `principal`'s passkey `id` (every one of theirs when `None`):
    /// the ones removed.
    ///
    /// # Errors
    ///
    /// The store cannot be read or written.
    pub async fn revoke(&self, principal: &str, id: Option<&str>) -> Result<Vec<Credential>, Unavailable> {
        let id = id.map(str::to_owned);
        let split = move |person: Person| -> (Option<Person>, Vec<Credential>) {
            let (removed, kept): (Vec<Credential>, Vec<Credential>) =
                person.passkeys.into_iter().partition(|c| id.as_ref().is_none_or(|id| c.id == *id));
            let left = (!kept.is_empty()).then_some(Person { user: person.user, passkeys: kept });
            (left, removed)
        };
        match &self.kept {
            Kept::Nowhere => Ok(Vec::new()),
            Kept::File(file) => {
                let (file, principal) = (file.clone(), principal.to_owned());
                blocking(move || {
                    Ok(file.get()?.update(|doc: &mut Doc| {
                        let Some(person) = doc.people.remove(&principal) else { return Vec::new() };
                        let (left, removed) = split(person);
                        if let Some(left) = left {
                            doc.people.insert(principal, left);
                        }
                        removed
                    })?)
                })
                .await
            }
            Kept::Shared(shared) => {
                let Some(person) = self.person(principal).await? else { return Ok(Vec::new()) };
                let (left, removed) = split(person.clone());
                let freed: Vec<String> = removed.iter().map(|c| c.id.clone()).collect();
                let changed = change_shared(shared, principal, None, None, &freed, |now| match now {
                    Some(now) if now.passkeys.len() == person.passkeys.len() => Ok(left.clone()),
                    _ => Err(NotAdded::Taken),
                })
                .await?;
                match changed {
                    Ok(()) => Ok(removed),
                    Err(_) => Err(Unavailable("the passkeys changed meanwhile: try again".into())),
                }
            }
        }
    }
}

/// `work` on a thread that may block (a state file's lock).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Unavailable> + Send + 'static,
) -> Result<T, Unavailable> {
    tokio::task::spawn_blocking(work).await.map_err(|err| Unavailable(format!("the store's task failed: {err}")))?
}

fn people_key() -> String {
    format!("{PREFIX}people")
}

fn ids_key() -> String {
    format!("{PREFIX}ids")
}

fn link_key(digest: &str) -> String {
    format!("{PREFIX}link:{digest}")
}

/// Keeps an enrolment link: `KEYS` = its key; `ARGV` = the principal, its
/// life in milliseconds.
const SET_LINK: &str = r"
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return {'ok'}
";

/// Changes one person if they are as read: `KEYS` = the people, the
/// credential ids, the enrolment link (or the people again); `ARGV` = the
/// principal, the person as read (`''`: none), the person to write (`''`:
/// none), `'1'` when the link is used up, the credential id to reserve
/// (`''`: none), the ids to free (comma-separated). Returns `{"ok"}`,
/// `{"changed"}` (try again), `{"link"}` or `{"taken"}`.
const CHANGE_PERSON: &str = r"
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then current = '' end
if current ~= ARGV[2] then return {'changed'} end
if ARGV[4] == '1' and redis.call('GET', KEYS[3]) ~= ARGV[1] then return {'link'} end
if ARGV[5] ~= '' and redis.call('HEXISTS', KEYS[2], ARGV[5]) == 1 then return {'taken'} end
if ARGV[4] == '1' then redis.call('DEL', KEYS[3]) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], ARGV[5], ARGV[1]) end
for id in string.gmatch(ARGV[6], '[^,]+') do redis.call('HDEL', KEYS[2], id) end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
return {'ok'}
";

/// Change `principal` in Redis with `change` (given the person as read),
/// using up `link` and reserving `reserve` and freeing `free` (credential
/// ids) in the same step; tried again while another replica changed the
/// person meanwhile.
async fn change_shared(
    shared: &Shared,
    principal: &str,
    link: Option<&str>,
    reserve: Option<&str>,
    free: &[String],
    change: impl Fn(Option<Person>) -> Result<Option<Person>, NotAdded>,
) -> Result<Result<(), NotAdded>, Unavailable> {
    let unavailable = |e: super::super::store::Unavailable| Unavailable(e.0);
    for _ in 0..MAX_SHARED_TRIES {
        let before = shared.hash_get(&people_key(), principal).await.map_err(unavailable)?;
        let person = before.as_deref().and_then(|json| serde_json::from_str(json).ok());
        let after = match change(person) {
            Ok(after) => after,
            Err(why) => return Ok(Err(why)),
        };
        let after = match after {
            Some(person) => serde_json::to_string(&person).map_err(|e| Unavailable(e.to_string()))?,
            None => String::new(),
        };
        let keys = [people_key(), ids_key(), link.map_or_else(people_key, str::to_owned)];
        let args = [
            principal.to_owned(),
            before.unwrap_or_default(),
            after,
            if link.is_some() { "1" } else { "0" }.to_owned(),
            reserve.unwrap_or_default().to_owned(),
            free.join(","),
        ];
        let reply = shared.eval(CHANGE_PERSON, &keys, &args).await.map_err(unavailable)?;
        match reply.first().cloned().flatten().as_deref() {
            Some("ok") => return Ok(Ok(())),
            Some("link") => return Ok(Err(NotAdded::LinkUsed)),
            Some("taken") => return Ok(Err(NotAdded::Taken)),
            _ => {}
        }
    }
    Err(Unavailable("other replicas kept changing the same person's passkeys".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enrolment_tokens_are_256_random_bits_kept_by_their_digest() {
        let (token, digest) = new_token().unwrap();
        assert!(is_token(&token), "{token}");
        assert_eq!(digest, token_digest(&token));
        assert_ne!(new_token().unwrap().0, token);
        assert!(!is_token("short") && !is_token(&"a".repeat(42)) && !is_token(&format!("{}/", "a".repeat(42))));
    }
}
