//! Registry credentials: from `[distribution.credentials."REGISTRY"]` (a user
//! name and a password in an environment variable or a file), else from a
//! Docker-style auth file: `[distribution] auth_file`, `$REGISTRY_AUTH_FILE`,
//! `$DOCKER_CONFIG/config.json` or `~/.docker/config.json`.
//!
//! Credentials come only from the operator's environment, never from a
//! component or a registry, and are sent only to the registry they are
//! filed under (a redirect elsewhere drops them; see `client.rs`).
//! Credential helpers (`credsStore`, `credHelpers`) are not run.

use super::error::{AuthFileProblem, CredentialError, PasswordFileProblem};
use super::settings::{DistributionSettings, Secret, Secretless};
use super::store::ReadFailure;
use base64::Engine as _;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Largest password file read: the operator's own file holding one line.
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
pub fn credentials(settings: &DistributionSettings, registry: &str) -> Result<Option<Credentials>, CredentialError> {
    if let Some(source) = settings.credentials.get(registry) {
        let env = |var: &str| {
            std::env::var(var)
                .map_err(|_| CredentialError::EnvUnset { registry: registry.to_owned(), var: var.to_owned() })
        };
        let username = match &source.username {
            Secretless::Value(name) => name.clone(),
            Secretless::Env(var) => env(var)?,
        };
        let password = match &source.password {
            Secret::Env(var) => env(var)?,
            Secret::File(path) => first_line(path).map_err(|problem| CredentialError::PasswordFile {
                registry: registry.to_owned(),
                path: path.clone(),
                problem,
            })?,
        };
        return Ok(Some(Credentials { username, password }));
    }
    for file in auth_files(settings) {
        if let Some(found) = from_auth_file(&file, registry, settings.max_auth_file_bytes)? {
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

fn first_line(path: &Path) -> Result<String, PasswordFileProblem> {
    let text = super::store::read_capped_text(path, MAX_PASSWORD_FILE_BYTES)
        .map_err(|failure| match failure {
            ReadFailure::Io(err) => PasswordFileProblem::Read(err),
            ReadFailure::NotUtf8 => PasswordFileProblem::NotUtf8,
            ReadFailure::TooLarge { .. } => PasswordFileProblem::TooLarge { cap: MAX_PASSWORD_FILE_BYTES },
        })?
        .ok_or(PasswordFileProblem::Missing)?;
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

/// The entry for `registry` in a Docker-style auth file (`auths` keyed by
/// `host[:port]`, optionally with a scheme and a path).
fn from_auth_file(path: &Path, registry: &str, max: u64) -> Result<Option<Credentials>, CredentialError> {
    let bad = |problem| CredentialError::AuthFile { path: path.to_owned(), problem };
    let text = super::store::read_capped_text(path, max).map_err(|failure| {
        bad(match failure {
            ReadFailure::Io(err) => AuthFileProblem::Read(err),
            ReadFailure::NotUtf8 => AuthFileProblem::NotUtf8,
            ReadFailure::TooLarge { .. } => AuthFileProblem::TooLarge { cap: max },
        })
    })?;
    let Some(text) = text else { return Ok(None) };
    let config: Value = serde_json::from_str(&text).map_err(|err| bad(AuthFileProblem::NotJson(err.to_string())))?;
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
        let bad_auth = || bad(AuthFileProblem::BadAuth(registry.to_owned()));
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(bad_auth)?;
        let (username, password) = decoded.split_once(':').ok_or_else(bad_auth)?;
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

    const MAX: u64 = crate::distribution::settings::DEFAULT_MAX_AUTH_FILE_BYTES;

    /// `text` padded with trailing spaces to `len` bytes.
    fn padded(text: &str, len: u64) -> String {
        text.to_owned() + &" ".repeat(usize::try_from(len).unwrap() - text.len())
    }

    #[test]
    fn an_auth_file_of_exactly_max_auth_file_bytes_is_read_and_one_byte_more_is_refused_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        let max = 2048;
        let json = r#"{"auths": {"r.example": {"username": "bob", "password": "pw"}}}"#;
        std::fs::write(&file, padded(json, max)).unwrap();
        assert_eq!(from_auth_file(&file, "r.example", max).unwrap().unwrap().username, "bob");
        std::fs::write(&file, padded(json, max + 1)).unwrap();
        let err = from_auth_file(&file, "r.example", max).unwrap_err().to_string();
        assert!(err.contains("2048-byte cap") && err.contains("[distribution] max_auth_file_bytes"), "{err}");
    }

    #[test]
    fn a_password_file_of_exactly_its_fixed_cap_is_read_and_one_byte_more_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, padded("s3cret\n", MAX_PASSWORD_FILE_BYTES)).unwrap();
        assert_eq!(first_line(&file).unwrap(), "s3cret");
        std::fs::write(&file, padded("s3cret\n", MAX_PASSWORD_FILE_BYTES + 1)).unwrap();
        let err = CredentialError::PasswordFile {
            registry: "r".into(),
            path: file.clone(),
            problem: first_line(&file).unwrap_err(),
        }
        .to_string();
        assert!(err.contains(&format!("{MAX_PASSWORD_FILE_BYTES}-byte cap")) && err.contains("one password"), "{err}");
    }

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
        let found = from_auth_file(&file, "ghcr.io", MAX).unwrap().unwrap();
        assert_eq!((found.username.as_str(), found.password.as_str()), ("alice", "s3cret"));
        assert_eq!(found.basic(), format!("Basic {auth}"));
        assert_eq!(from_auth_file(&file, "r.example:5000", MAX).unwrap().unwrap().username, "bob");
        assert!(from_auth_file(&file, "quay.io", MAX).unwrap().is_none());
        assert!(!format!("{found:?}").contains("s3cret"));
    }
}
