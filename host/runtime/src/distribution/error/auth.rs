//! Why a registry refused the host's credentials, or why the credentials
//! could not be read (the password file, the auth file).

use super::status_text;
use crate::distribution::settings;
use std::path::PathBuf;

/// Why a registry's authentication challenge cannot be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthProblem {
    /// A 401 without `WWW-Authenticate`.
    NoChallenge,
    /// Credentials are asked for and the operator has none for the
    /// registry (the auth files looked at).
    NoCredentials(Vec<PathBuf>),
    /// A scheme other than Basic and Bearer.
    Scheme(String),
    /// A Bearer challenge without a realm.
    NoRealm,
    /// A token realm that is not a URL.
    RealmNotAUrl(String),
    /// A token realm over plain http, or on this machine for a registry
    /// that is not.
    RealmRefused(String),
    /// The token server refused the credentials.
    TokenRefused {
        /// The token realm.
        realm: String,
        /// Its HTTP status.
        status: u16,
        /// The start of its answer (capped).
        message: String,
    },
    /// The token server's answer is not JSON.
    TokenNotJson(String),
    /// The token server's answer has no token.
    NoToken(String),
}

impl AuthProblem {
    pub(super) fn render(&self, registry: &str) -> String {
        match self {
            AuthProblem::NoChallenge => {
                format!("registry {registry} refused the request (401) without saying how to authenticate")
            }
            AuthProblem::NoCredentials(files) => format!(
                "registry {registry} asks for credentials and none were found: add [distribution.credentials.\
                 {registry:?}] to the config, or log in so that one of {:?} has an entry for {registry}",
                files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>()
            ),
            AuthProblem::Scheme(scheme) => {
                format!("registry {registry} asks for {scheme} authentication: accepted are Basic and Bearer")
            }
            AuthProblem::NoRealm => format!("registry {registry}: a Bearer challenge without a realm"),
            AuthProblem::RealmNotAUrl(realm) => format!("registry {registry}: token realm {realm:?} is not a URL"),
            AuthProblem::RealmRefused(realm) => format!(
                "registry {registry}: token realm {realm} refused: it must be https (credentials would travel \
                 unencrypted) and, for a registry that is not on loopback, not on this machine"
            ),
            AuthProblem::TokenRefused { realm, status, message } => format!(
                "registry {registry}: the token server {realm} refused the credentials ({}): {message}",
                status_text(*status)
            ),
            AuthProblem::TokenNotJson(realm) => {
                format!("registry {registry}: the token server {realm} did not answer JSON")
            }
            AuthProblem::NoToken(realm) => format!("registry {registry}: the token server {realm} answered no token"),
        }
    }
}

/// The operator's credentials for a registry cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialError {
    /// `[distribution.credentials."REGISTRY"]` names an unset variable.
    #[error("[distribution.credentials.{registry:?}] names the environment variable {var}, which is not set")]
    EnvUnset {
        /// The registry.
        registry: String,
        /// The variable.
        var: String,
    },
    /// `[distribution.credentials."REGISTRY"] password_file` cannot be
    /// read.
    #[error("[distribution.credentials.{registry:?}] {}", problem.render(path))]
    PasswordFile {
        /// The registry.
        registry: String,
        /// The password file.
        path: PathBuf,
        /// What is wrong with it.
        problem: PasswordFileProblem,
    },
    /// A Docker-style auth file that cannot be used.
    #[error("{}: {problem}", path.display())]
    AuthFile {
        /// The auth file.
        path: PathBuf,
        /// What is wrong with it.
        problem: AuthFileProblem,
    },
}

/// What is wrong with a password file.
#[derive(Debug)]
#[non_exhaustive]
pub enum PasswordFileProblem {
    /// There is no such file.
    Missing,
    /// It cannot be read.
    Read(std::io::Error),
    /// It is not UTF-8 text.
    NotUtf8,
    /// Larger than the fixed cap on a password file.
    TooLarge {
        /// The cap.
        cap: u64,
    },
}

impl PasswordFileProblem {
    pub(super) fn render(&self, path: &std::path::Path) -> String {
        let path = path.display();
        match self {
            PasswordFileProblem::Missing => format!("password_file {path} does not exist"),
            PasswordFileProblem::Read(err) => format!("{path}: cannot read: {err}"),
            PasswordFileProblem::NotUtf8 => format!("{path}: not UTF-8 text"),
            PasswordFileProblem::TooLarge { cap } => format!(
                "{path}: larger than the {cap}-byte cap (fixed: a password file holds one password or token on its \
                 first line)"
            ),
        }
    }
}

/// What is wrong with a Docker-style auth file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFileProblem {
    /// It cannot be read.
    #[error("cannot read: {0}")]
    Read(std::io::Error),
    /// It is not UTF-8 text.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// Larger than `[distribution] max_auth_file_bytes`.
    #[error(
        "larger than the {cap}-byte cap ([distribution] max_auth_file_bytes raises it, up to {})",
        settings::MAX_AUTH_FILE_BYTES
    )]
    TooLarge {
        /// The cap.
        cap: u64,
    },
    /// Not JSON (the parser's words).
    #[error("not a Docker auth file (JSON): {0}")]
    NotJson(String),
    /// The registry's `auth` entry is not base64 of `USER:PASSWORD`.
    #[error("auths.{0:?}.auth is not base64 of USER:PASSWORD")]
    BadAuth(String),
}
