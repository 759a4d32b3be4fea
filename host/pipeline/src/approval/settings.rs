//! `[approvals]`, each key declared once ([`APPROVALS`]): how an asked
//! call is confirmed by default, where the page is served and how browsers
//! reach it, how long an approval lives and how many may wait, how people
//! sign in, and where named approvers are told (the webhook).
//!
//! Trusts the operator's file and the webhook secret file it names (read
//! once, at most [`MAX_WEBHOOK_SECRET_FILE_BYTES`]); the secret is never
//! shown, only compared by its digest when a reload checks what changed.

use super::webhook;
use airlock_policy::confirm::ApprovalMode;
use airlock_settings::key_doc::Value;
use std::path::PathBuf;
use std::time::Duration;

/// Default `[approvals] link_ttl_secs`.
pub const DEFAULT_LINK_TTL: Duration = Duration::from_secs(600);
/// Default `[approvals] max_pending_per_principal`.
pub const DEFAULT_MAX_PENDING_PER_PRINCIPAL: usize = 16;
/// Default `[approvals] max_pending`.
pub const DEFAULT_MAX_PENDING: usize = 4096;
/// Most `[approvals] max_pending` accepted.
pub const MAX_PENDING_CEILING: usize = 1 << 20;
/// Default `[approvals] client_id`.
pub const DEFAULT_CLIENT_ID: &str = "airlock";
/// Default `[approvals] page_requests_per_second`.
pub const DEFAULT_PAGE_REQUESTS_PER_SECOND: u32 = 20;
/// Default `[approvals] page_requests_per_second_total`.
pub const DEFAULT_PAGE_REQUESTS_PER_SECOND_TOTAL: u32 = 200;
/// Default `[approvals] webhook_max_attempts`.
pub const DEFAULT_WEBHOOK_MAX_ATTEMPTS: u32 = 6;
/// Least bytes of the webhook's secret (256 bits).
pub const MIN_WEBHOOK_SECRET_BYTES: usize = 32;
/// Most bytes of the webhook's secret file read.
pub const MAX_WEBHOOK_SECRET_FILE_BYTES: u64 = 4096;

airlock_settings::section! {
    /// The keys of `[approvals]`.
    pub const APPROVALS: Section<ApprovalSettings> = "approvals";
    /// `[approvals]` as written.
    pub struct RawApprovals {}
    hand {
        /// how a call the policy asks about is confirmed: by the MCP client, on Airlock's page, or on the page when one is served
        mode: Option<String>, Reload, accepts "`\"client\"`, `\"page\"` or `\"page-when-possible\"`",
            unset "`\"client\"`",
            show |a: &ApprovalSettings| Some(Value::Text(a.mode.as_str().to_owned())),
            example "\"page\"";
        /// an address of the page's own (how a stdio server serves one); unset, the page is on the MCP origin of `serve --http`
        listen: Option<String>, Restart, accepts "an address `IP:PORT`, loopback unless `[http.jwt]` signs people in",
            unset "not set: on the MCP HTTP server only",
            show |a: &ApprovalSettings| a.listen.map(|listen| Value::Text(listen.to_string())),
            example "\"127.0.0.1:8081\"";
        /// the page's origin as people's browsers reach it (behind a proxy that passes the Host header on)
        public_url: Option<String>, Restart, accepts "an `https://` (or `http://`) origin",
            unset "not set: the address it is served on",
            show |a: &ApprovalSettings| a.public_url.clone().map(Value::Text),
            example "\"https://approvals.bank.example\"";
        /// where named approvers are told an approval waits for them: a signed POST of the card as JSON
        webhook_url: Option<String>, Restart, accepts "an `https://` URL (`http://` to loopback only), with `webhook_secret_file`",
            unset "not set: no webhook",
            show |a: &ApprovalSettings| a.webhook.as_ref().map(|w| Value::Text(w.url.clone())),
            example "\"https://hooks.bank.example/airlock\"";
        /// the file holding the webhook's HMAC-SHA256 secret (at least 32 bytes)
        webhook_secret_file: Option<PathBuf>, Restart, accepts "a path to a file of at most 4096 bytes",
            unset "not set: required with `webhook_url`",
            identity |a: &ApprovalSettings| a.webhook.as_ref().map(|w| hex::encode(&w.secret)),
            example "\"/run/secrets/airlock-webhook\"";
        /// where approvals waiting for an answer, the key that signs their links and the people's passkeys (`passkeys.json`, without `[fleet] redis_url`) are kept, for every Airlock process of the host (a stdio server's approvals outlive it there)
        state_dir: Option<PathBuf>, Restart, accepts "a path to a directory only the user running Airlock can write (made with mode 0700)",
            unset "the directory of `[audit] file` as the server started; with neither, approvals live in the process that opened them and nobody can have a passkey",
            show |a: &ApprovalSettings| a.state_dir.as_deref().map(Value::path),
            example "\"/var/lib/airlock\"";
    }
    /// `[approvals]`: approvals on Airlock's own page.
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct ApprovalSettings: Default (RawApprovalKeys) at () {
        /// The mode of tools that do not set their own.
        pub mode: ApprovalMode = ApprovalMode::Client,
        /// An address of its own for the page.
        pub listen: Option<std::net::SocketAddr> = None,
        /// The page's origin as browsers reach it.
        pub public_url: Option<String> = None,
        /// Where named approvers are told an approval waits for them.
        pub webhook: Option<webhook::WebhookSettings> = None,
        /// Where approvals, their link key and passkeys are kept, as written
        /// (see [`ApprovalSettings::state_dir_with`]).
        pub state_dir: Option<PathBuf> = None;
        /// how long an approval and its link live; a call made again within it runs once after the approval
        link_ttl_secs => link_ttl: Duration = DEFAULT_LINK_TTL, Reload, range Secs 30..=86_400;
        /// approvals one principal may have waiting for an answer; past it a call is refused (`quota_exceeded`)
        max_pending_per_principal => max_pending_per_principal: usize = DEFAULT_MAX_PENDING_PER_PRINCIPAL, Reload,
            range Count 1..=MAX_PENDING_CEILING as u64;
        /// approvals the host keeps waiting for an answer; past it a principal below its fair share (`max_pending` / principals with approvals waiting) gets one, and the oldest waiting approval of the principal most above its share is withdrawn; anyone else is refused (`busy`)
        max_pending => max_pending: usize = DEFAULT_MAX_PENDING, Reload, range Count 1..=MAX_PENDING_CEILING as u64;
        /// whether a person signed in at the issuer of `[http.jwt]` must also answer with a passkey (without `[http.jwt]` a passkey is always needed)
        require_passkey => require_passkey: bool = false, Restart;
        /// the OpenID Connect client id the page signs people in as, at the issuer of `[http.jwt]`
        client_id => client_id: String = DEFAULT_CLIENT_ID.to_owned(), Restart;
        /// requests to the page per second about one principal's approvals (or from one client address, before the approval is known); past it `429`
        page_requests_per_second => page_requests_per_second: u32 = DEFAULT_PAGE_REQUESTS_PER_SECOND, Restart,
            range Count 1..=10_000;
        /// requests to the page per second in all; past it `429`
        page_requests_per_second_total => page_requests_per_second_total: u32 =
            DEFAULT_PAGE_REQUESTS_PER_SECOND_TOTAL, Restart, range Count 1..=100_000;
        /// attempts at delivering one webhook, with backoff from 1 s doubling to 60 s, within the approval's life
        webhook_max_attempts => webhook_max_attempts: u32 = DEFAULT_WEBHOOK_MAX_ATTEMPTS, Restart, range Count 1..=20;
    }
}

impl ApprovalSettings {
    /// Check `[approvals]`; a relative `webhook_secret_file` is resolved by
    /// `resolve`.
    ///
    /// # Errors
    ///
    /// A value out of range or not understood, naming the key and what is
    /// accepted.
    pub fn from_raw(raw: RawApprovals, resolve: &dyn Fn(&std::path::Path) -> PathBuf) -> Result<Self, String> {
        let scope = APPROVALS.scope();
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &scope)?;
        if let Some(text) = &raw.mode {
            settings.mode = ApprovalMode::parse(text).map_err(|why| format!("{scope} mode = {why}"))?;
        }
        if settings.page_requests_per_second > settings.page_requests_per_second_total {
            return Err(format!(
                "{scope} page_requests_per_second = {} is more than page_requests_per_second_total = {}: one \
                 principal's share is at most the whole",
                settings.page_requests_per_second, settings.page_requests_per_second_total
            ));
        }
        if settings.max_pending_per_principal > settings.max_pending {
            return Err(format!(
                "{scope} max_pending_per_principal = {} is more than max_pending = {}: one principal's share is at \
                 most the whole",
                settings.max_pending_per_principal, settings.max_pending
            ));
        }
        if let Some(text) = &raw.listen {
            settings.listen = Some(text.parse().map_err(|_| {
                format!("{scope} listen = {text:?} is not an address: accepted IP:PORT, e.g. \"127.0.0.1:8081\"")
            })?);
        }
        settings.state_dir = raw.state_dir.as_deref().map(resolve);
        settings.public_url = match raw.public_url {
            Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
                Some(url.trim_end_matches('/').to_owned())
            }
            Some(url) => {
                return Err(format!(
                    "{scope} public_url = {url:?} is not an http(s) origin: accepted e.g. \"https://approvals.bank.example\""
                ));
            }
            None => None,
        };
        if settings.client_id.is_empty()
            || settings.client_id.len() > 256
            || settings.client_id.chars().any(char::is_control)
        {
            return Err(format!(
                "{scope} client_id = {:?}: accepted 1 to 256 characters, no controls",
                settings.client_id
            ));
        }
        settings.webhook = match (raw.webhook_url, raw.webhook_secret_file) {
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(format!(
                    "{scope} webhook_url and webhook_secret_file go together: a delivery is always signed"
                ));
            }
            (Some(url), Some(file)) => {
                let https = url.starts_with("https://");
                let loopback = ["http://127.", "http://localhost", "http://[::1]"].iter().any(|p| url.starts_with(p));
                if !(https || loopback) {
                    return Err(format!(
                        "{scope} webhook_url = {url:?}: accepted an https:// URL (plain http:// only to a loopback \
                         address)"
                    ));
                }
                let secret = read_secret(&resolve(&file))
                    .map_err(|why| format!("{scope} webhook_secret_file = {:?}: {why}", file.display().to_string()))?;
                Some(webhook::WebhookSettings { url, secret, max_attempts: settings.webhook_max_attempts })
            }
        };
        Ok(settings)
    }

    /// With no `state_dir` written, the default: the directory of the audit
    /// log (`audit_file`) when there is one, so that the evidence and the
    /// state of one host are kept together (else none: approvals are kept
    /// in the process that opened them, and nobody can have a passkey).
    pub fn state_dir_with(&self, audit_file: Option<&std::path::Path>) -> Option<PathBuf> {
        let beside_audit = audit_file.and_then(std::path::Path::parent).map(|dir| match dir.as_os_str().is_empty() {
            true => PathBuf::from("."),
            false => dir.to_owned(),
        });
        self.state_dir.clone().or(beside_audit)
    }
}

/// The secret in `path`: at most [`MAX_WEBHOOK_SECRET_FILE_BYTES`], at least
/// [`MIN_WEBHOOK_SECRET_BYTES`] once trimmed.
fn read_secret(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|err| format!("cannot read it: {err}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_WEBHOOK_SECRET_FILE_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read it: {err}"))?;
    if bytes.len() as u64 > MAX_WEBHOOK_SECRET_FILE_BYTES {
        return Err(format!("it is over {MAX_WEBHOOK_SECRET_FILE_BYTES} bytes; a secret is a few dozen"));
    }
    let secret = bytes.trim_ascii().to_vec();
    if secret.len() < MIN_WEBHOOK_SECRET_BYTES {
        return Err(format!(
            "the secret has {} bytes; it needs at least {MIN_WEBHOOK_SECRET_BYTES} (e.g. `openssl rand -hex 32`)",
            secret.len()
        ));
    }
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_of_approvals_are_documented_where_they_are_declared() {
        APPROVALS.ensure_documents("book/src/operator/approvals.md").unwrap();
    }

    #[test]
    fn config_errors_name_the_key_and_what_is_accepted() {
        let parse = |text: &str| {
            let raw: RawApprovals = toml::from_str(text).unwrap();
            ApprovalSettings::from_raw(raw, &|p| p.to_owned())
        };
        for (text, says) in [
            (
                "mode = \"browser\"",
                "[approvals] mode = \"browser\" is not a mode: accepted \"client\", \"page\", \"page-when-possible\"",
            ),
            ("link_ttl_secs = 5", "link_ttl_secs"),
            (
                "max_pending = 4\nmax_pending_per_principal = 5",
                "max_pending_per_principal = 5 is more than max_pending = 4",
            ),
            ("listen = \"here\"", "listen = \"here\" is not an address"),
            ("public_url = \"ftp://x\"", "public_url = \"ftp://x\" is not an http(s) origin"),
            ("webhook_url = \"https://h\"", "webhook_url and webhook_secret_file go together"),
            ("webhook_url = \"http://hooks.example\"\nwebhook_secret_file = \"s\"", "plain http:// only to a loopback"),
            (
                "webhook_url = \"https://h\"\nwebhook_secret_file = \"/nonexistent\"",
                "webhook_secret_file = \"/nonexistent\": cannot read it",
            ),
            ("page_requests_per_second = 0", "page_requests_per_second"),
            ("nope = 1", "unknown field `nope`"),
        ] {
            let err = match toml::from_str::<RawApprovals>(text) {
                Err(err) => err.to_string(),
                Ok(_) => parse(text).unwrap_err(),
            };
            assert!(err.contains(says), "{text}: {err}");
        }
        let settings = parse("mode = \"page-when-possible\"\nlisten = \"127.0.0.1:8081\"").unwrap();
        assert_eq!(settings.mode, ApprovalMode::PageWhenPossible);
        assert_eq!(settings.listen, Some("127.0.0.1:8081".parse().unwrap()));
        assert_eq!(settings.link_ttl, DEFAULT_LINK_TTL);
    }

    #[test]
    fn the_state_is_kept_where_the_operator_says_else_beside_the_audit_log() {
        let audit = Some(std::path::Path::new("/var/log/airlock/audit.jsonl"));
        let raw: RawApprovals = toml::from_str("state_dir = \"state\"").unwrap();
        let settings = ApprovalSettings::from_raw(raw, &|p| std::path::Path::new("/etc/airlock").join(p)).unwrap();
        assert_eq!(settings.state_dir_with(audit), Some(PathBuf::from("/etc/airlock/state")), "written: kept");
        let settings = ApprovalSettings::default();
        assert_eq!(settings.state_dir_with(audit), Some(PathBuf::from("/var/log/airlock")));
        assert_eq!(settings.state_dir, None, "the default is not written into the settings a reload compares");
        assert_eq!(settings.state_dir_with(None), None, "no audit log: in the process");
        assert_eq!(settings.state_dir_with(Some(std::path::Path::new("audit.jsonl"))), Some(PathBuf::from(".")));
    }

    #[test]
    fn modes_are_named_as_the_operator_writes_them() {
        for mode in [ApprovalMode::Client, ApprovalMode::Page, ApprovalMode::PageWhenPossible] {
            assert_eq!(ApprovalMode::parse(mode.as_str()), Ok(mode));
        }
        assert!(
            ApprovalMode::parse("browser")
                .unwrap_err()
                .contains("accepted \"client\", \"page\", \"page-when-possible\"")
        );
    }
}
