//! Registry credentials: from `[distribution.credentials."REGISTRY"]` (a user
//! name and a password in an environment variable or a file), else from a
//! Docker-style auth file: `[distribution] auth_file`, `$REGISTRY_AUTH_FILE`,
//! `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`.
//!
//! Credentials come only from the operator's environment, never from a
//! component or a registry, and are sent only to the registry they are
//! filed under (a redirect elsewhere drops them; see `client.rs`).
//! Credential helpers (`credsStore`, `credHelpers`) are not run.

use super::settings::{DistributionSettings, Secret, Secretless};
use base64::Engine as _;
use serde_json::Value;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Largest auth file read.
pub const MAX_AUTH_FILE_BYTES: u64 = 1 << 20;
/// Largest password file read.
const MAX_PASSWORD_FILE_BYTES: u64 = 64 << 10;

/// A user name and password (or token) for one registry.
#[derive(Clone)]
pub struct Credentials {
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials({}, [redacted])", self.username)
    }
}

impl Credentials {
    /// The `Authorization: Basic` value.
    pub fn basic(&self) -> String {
        let pair = format!("{}:{}", self.username, self.password);
        format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
    }
}

/// The credentials for `registry`, if the operator has any.
///
/// # Errors
///
/// A named variable is unset, a named file cannot be read or an auth file
/// is malformed (each named).
pub fn credentials(settings: &DistributionSettings, registry: &str) -> Result<Option<Credentials>, String> {
    if let Some(source) = settings.credentials.get(registry) {
        let ctx = format!("[distribution.credentials.{registry:?}]");
        let env = |var: &str| {
            std::env::var(var).map_err(|_| format!("{ctx} names the environment variable {var}, which is not set"))
        };
        let username = match &source.username {
            Secretless::Value(name) => name.clone(),
            Secretless::Env(var) => env(var)?,
        };
        let password = match &source.password {
            Secret::Env(var) => env(var)?,
            Secret::File(path) => first_line(path, MAX_PASSWORD_FILE_BYTES).map_err(|m| format!("{ctx} {m}"))?,
        };
        return Ok(Some(Credentials { username, password }));
    }
    for file in auth_files(settings) {
        if let Some(found) = from_auth_file(&file, registry)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The auth files looked at, in order.
pub fn auth_files(settings: &DistributionSettings) -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut files: Vec<PathBuf> = settings.auth_file.iter().cloned().collect();
    files.extend(var("REGISTRY_AUTH_FILE"));
    files.extend(var("DOCKER_CONFIG").map(|d| d.join("config.json")));
    files.extend(var("HOME").map(|d| d.join(".docker/config.json")));
    files
}

fn read_capped(path: &Path, max: u64) -> Result<Option<String>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(format!("{}: cannot read: {err}", path.display())),
    };
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text).map_err(|err| format!("{}: cannot read: {err}", path.display()))?;
    if text.len() as u64 > max {
        return Err(format!("{}: larger than the {max}-byte cap", path.display()));
    }
    Ok(Some(text))
}

fn first_line(path: &Path, max: u64) -> Result<String, String> {
    let text = read_capped(path, max)?.ok_or_else(|| format!("password_file {} does not exist", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// The entry for `registry` in a Docker-style auth file (`auths` keyed by
/// `host[:port]`, optionally with a scheme and a path).
fn from_auth_file(path: &Path, registry: &str) -> Result<Option<Credentials>, String> {
    let Some(text) = read_capped(path, MAX_AUTH_FILE_BYTES)? else { return Ok(None) };
    let config: Value = serde_json::from_str(&text)
        .map_err(|err| format!("{}: not a Docker auth file (JSON): {err}", path.display()))?;
    let Some(auths) = config.get("auths").and_then(Value::as_object) else { return Ok(None) };
    let key_host = |key: &str| {
        let key = key.strip_prefix("https://").or_else(|| key.strip_prefix("http://")).unwrap_or(key);
        key.split('/').next().unwrap_or(key).to_owned()
    };
    let docker_hub = matches!(registry, "docker.io" | "registry-1.docker.io" | "index.docker.io");
    let Some(entry) = auths
        .iter()
        .find(|(key, _)| {
            let host = key_host(key);
            host == registry || (docker_hub && host == "index.docker.io")
        })
        .map(|(_, entry)| entry)
    else {
        return Ok(None);
    };
    let field = |name: &str| entry.get(name).and_then(Value::as_str).filter(|s| !s.is_empty());
    if let Some(auth) = field("auth") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| format!("{}: auths.{registry:?}.auth is not base64 of USER:PASSWORD", path.display()))?;
        let (username, password) = decoded
            .split_once(':')
            .ok_or_else(|| format!("{}: auths.{registry:?}.auth is not base64 of USER:PASSWORD", path.display()))?;
        return Ok(Some(Credentials { username: username.to_owned(), password: password.to_owned() }));
    }
    match (field("username"), field("password")) {
        (Some(username), Some(password)) => {
            Ok(Some(Credentials { username: username.to_owned(), password: password.to_owned() }))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_auth_files_are_read_by_registry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
        std::fs::write(
            &file,
            format!(r#"{{"auths": {{"https://ghcr.io": {{"auth": "{auth}"}}, "r.example:5000": {{"username": "bob", "password": "pw"}}}}}}"#),
        )
        .unwrap();
        let found = from_auth_file(&file, "ghcr.io").unwrap().unwrap();
        assert_eq!((found.username.as_str(), found.password.as_str()), ("alice", "s3cret"));
        assert_eq!(found.basic(), format!("Basic {auth}"));
        assert_eq!(from_auth_file(&file, "r.example:5000").unwrap().unwrap().username, "bob");
        assert!(from_auth_file(&file, "quay.io").unwrap().is_none());
        assert!(!format!("{found:?}").contains("s3cret"));
    }
}
