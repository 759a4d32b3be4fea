//! The settings table of every section other than `[defaults]` (whose
//! keys are `LIMIT_KEYS`) and `[tools.NAME]`: each key as the operator
//! writes it, whether a reload applies it or it is fixed until a restart,
//! and its effective value as TOML (`None` when it is not set and has no
//! default, or is secret). `airlock config` shows the keys nobody set from
//! it, and a reload is refused, naming each key, when it would change one
//! that is fixed ([`Config::restarts`]). A key the parser accepts and this
//! table lacks fails the test `every_key_the_parser_accepts_is_shown`.

use super::{Config, JwksSource};
use airlock_runtime::engine::digest;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// A value as TOML text.
type Shown = Option<String>;

/// When a change to a key takes effect.
#[derive(Clone, Copy)]
pub(super) enum Applies {
    /// On the next reload.
    Reload,
    /// Only when `airlock serve` restarts: what it configures is built when
    /// the host starts (the engine, listeners, the JWT verifier, the fleet's
    /// signer, the audit shipper, metrics and traces).
    Restart,
    /// Only on a restart while `[audit.postgres]` ships the log (the shipper
    /// follows the file it was started with); on a reload otherwise.
    RestartWhileShipped,
}

/// One key of a section.
pub(super) struct Key {
    /// The key as the operator writes it.
    pub(super) name: &'static str,
    /// When a change to it takes effect.
    applies: Applies,
    /// Its effective value.
    pub(super) shown: Shown,
    /// What a restart check compares besides `shown` when that cannot tell
    /// a change (a secret, a key file's contents): its SHA-256
    /// (`engine::digest`), never shown.
    identity: Option<String>,
}

impl Key {
    /// Compare `identity` too when deciding whether the key changed.
    fn compared_by(mut self, identity: Option<String>) -> Self {
        self.identity = identity;
        self
    }
}

fn reload(name: &'static str, shown: Shown) -> Key {
    Key { name, applies: Applies::Reload, shown, identity: None }
}

fn restart(name: &'static str, shown: Shown) -> Key {
    Key { name, applies: Applies::Restart, shown, identity: None }
}

fn restart_while_shipped(name: &'static str, shown: Shown) -> Key {
    Key { name, applies: Applies::RestartWhileShipped, shown, identity: None }
}

/// A key fixed while `airlock serve` runs that a new configuration would
/// change: a reload is refused with one of these per key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// The key with its section, as the operator writes it
    /// (`engine.max_live_instances`).
    pub key: String,
    /// Its value in force, as TOML; `None` when it is not set, or is a
    /// secret.
    pub from: Option<String>,
    /// Its value in the new configuration, likewise.
    pub to: Option<String>,
    /// The condition that fixes it, for a key fixed only in some
    /// configurations.
    pub while_: Option<&'static str>,
}

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} changed", self.key)?;
        if self.from != self.to {
            let shown = |value: &Option<String>| value.clone().unwrap_or_else(|| "not set".to_owned());
            write!(f, " from {} to {}", shown(&self.from), shown(&self.to))?;
        }
        if let Some(condition) = self.while_ {
            write!(f, " while {condition}")?;
        }
        f.write_str("; restart airlock serve to apply it")
    }
}

fn text(value: &str) -> Shown {
    Some(super::layer::show(&toml::Value::String(value.to_owned())))
}

fn path(value: &Path) -> Shown {
    text(&value.display().to_string())
}

fn number(value: impl std::fmt::Display) -> Shown {
    Some(value.to_string())
}

fn secs(value: Duration) -> Shown {
    number(value.as_secs())
}

fn millis(value: Duration) -> Shown {
    number(value.as_millis())
}

fn list<T: AsRef<str>>(items: &[T]) -> Shown {
    let items: Vec<String> =
        items.iter().map(|item| super::layer::show(&toml::Value::String(item.as_ref().to_owned()))).collect();
    Some(format!("[{}]", items.join(", ")))
}

/// The keys of `[tools.NAME]` besides the limits, `side_effect` and
/// `concurrency_safe`, and what an unset one means.
pub(super) const TOOL_KEYS: [(&str, &str); 13] = [
    ("component", "not set: found by its declared name in tool_dirs"),
    ("sha256", "not set: any digest"),
    ("allow_tags", "not set: [distribution] allow_tags"),
    ("require_signature", "not set: [distribution] require_signature"),
    ("keys", "not set: [distribution] keys"),
    ("defer_loading", "false"),
    ("dirs", "[]"),
    ("env", "{}"),
    ("env_from_host", "[]"),
    ("network", "not set: no network"),
    ("sessions", "not set: no sessions"),
    ("confirm", "not set: the generic question"),
    ("present_result", "not set"),
];

impl Config {
    /// Each section's keys with their effective values, in the order
    /// `airlock config` shows the sections nobody wrote.
    pub(super) fn section_keys(&self) -> Vec<(&'static str, Vec<Key>)> {
        let engine = &self.engine;
        let http = &self.http.caps;
        let jwt = self.http.jwt.as_ref();
        let jwt_caps = jwt.map_or_else(Default::default, |jwt| jwt.caps);
        let audit = self.audit.as_ref();
        let postgres = audit.and_then(|audit| audit.postgres.as_ref());
        let fleet = self.fleet.as_ref();
        let distribution = &self.distribution;
        let quota = self.quotas.defaults();
        let metrics = &self.metrics;
        let traces = self.traces.as_ref();
        vec![
            ("", vec![reload("builtin_settings", Some("true".to_owned()))]),
            (
                "engine",
                vec![
                    restart("cache", Some(engine.cache_dir.is_some().to_string())),
                    restart("cache_dir", engine.cache_dir.as_deref().and_then(path)),
                    restart("wasm_stack_kib", number(engine.wasm_stack_bytes >> 10)),
                    restart("max_live_instances", number(engine.max_live_instances)),
                    restart("compile_timeout_secs", number(engine.compile_timeout_secs)),
                    restart("compile_secs_per_mib", number(engine.compile_secs_per_mib)),
                    restart("compile_memory_mib", number(engine.compile_memory_mib)),
                    // Unset, it is derived from the machine when the host starts.
                    restart("memory_budget_mib", engine.memory_budget_mib.map(|mib| mib.to_string())),
                    restart("memory_share_percent", number(engine.memory_share_percent)),
                ],
            ),
            (
                "policy",
                vec![
                    reload("policies", self.policy.policies.as_deref().and_then(path)),
                    reload("entities", self.policy.entities.as_deref().and_then(path)),
                ],
            ),
            (
                "audit",
                vec![
                    restart_while_shipped("file", audit.and_then(|a| path(&a.file))),
                    reload("durability", audit.and_then(|a| text(a.durability.as_str()))),
                    reload("record_arguments", audit.map(|a| a.record_arguments.to_string())),
                    reload("redact_keys", audit.and_then(|a| list(&a.redact_keys))),
                ],
            ),
            (
                "audit.postgres",
                vec![
                    restart("url", None).compared_by(postgres.map(|p| digest(p.url.as_bytes()))),
                    restart("url_file", None),
                    restart("replica", postgres.and_then(|p| text(&p.replica))),
                    restart("batch_rows", postgres.and_then(|p| number(p.batch_rows))),
                    restart("poll_interval_ms", postgres.and_then(|p| millis(p.poll_interval))),
                    restart("max_backoff_secs", postgres.and_then(|p| secs(p.max_backoff))),
                    restart("connect_timeout_secs", postgres.and_then(|p| secs(p.connect_timeout))),
                    restart("statement_timeout_secs", postgres.and_then(|p| secs(p.statement_timeout))),
                    restart("allow_plaintext", postgres.map(|p| p.allow_plaintext.to_string())),
                ],
            ),
            (
                "http",
                vec![
                    reload("tokens", None),
                    reload("allowed_origins", list(&self.http.allowed_origins)),
                    restart("header_timeout_secs", secs(http.header_timeout)),
                    restart("body_timeout_secs", secs(http.body_timeout)),
                    restart("max_connections", number(http.max_connections)),
                    restart("max_connections_per_peer", number(http.max_connections_per_peer)),
                    restart("max_unauthenticated_connections", number(http.max_unauthenticated_connections)),
                    restart("unauthenticated_timeout_secs", secs(http.unauthenticated_timeout)),
                    restart(
                        "trusted_proxies",
                        list(&self.http.trusted_proxies.iter().map(ToString::to_string).collect::<Vec<_>>()),
                    ),
                    restart("max_body_bytes", number(http.max_body_bytes)),
                    restart("max_sessions", number(http.max_sessions)),
                    restart("max_pending_confirmations", number(http.max_pending_confirmations)),
                ],
            ),
            (
                "http.jwt",
                vec![
                    restart("issuer", jwt.and_then(|j| text(&j.issuer))),
                    restart("audience", jwt.and_then(|j| text(&j.audience))),
                    restart(
                        "jwks_file",
                        jwt.and_then(|j| match &j.jwks {
                            JwksSource::File(file) => path(file),
                            JwksSource::Url(_) => None,
                        }),
                    ),
                    restart(
                        "jwks_url",
                        jwt.and_then(|j| match &j.jwks {
                            JwksSource::Url(url) => text(url),
                            JwksSource::File(_) => None,
                        }),
                    ),
                    restart("principal_claim", jwt.and_then(|j| text(&j.principal_claim))),
                    restart("shared_principals", jwt.map(|j| j.shared_principals.to_string())),
                    restart("algorithms", jwt.and_then(|j| list(&j.algorithms))),
                    restart("authorization_servers", jwt.and_then(|j| list(&j.authorization_servers))),
                    restart("resource", jwt.and_then(|j| text(&j.resource))),
                    restart("jwks_refresh_seconds", jwt.and_then(|j| secs(j.jwks_refresh))),
                    restart("jwks_min_refresh_seconds", jwt.and_then(|j| secs(j.jwks_min_refresh))),
                    restart("attribute_claims", None).compared_by(jwt.map(|j| format!("{:?}", j.attribute_claims))),
                    restart("max_token_bytes", number(jwt_caps.max_token_bytes)),
                    restart("leeway_secs", secs(jwt_caps.leeway)),
                    restart("max_principal_bytes", number(jwt_caps.max_principal_bytes)),
                    restart("max_jwks_bytes", number(jwt_caps.max_jwks_bytes)),
                    restart("max_jwks_keys", number(jwt_caps.max_jwks_keys)),
                    restart("jwks_fetch_timeout_secs", secs(jwt_caps.jwks_fetch_timeout)),
                    restart("max_claim_list_items", number(jwt_caps.max_claim_list_items)),
                ],
            ),
            (
                "quotas",
                vec![
                    reload("calls_in_flight", number(quota.calls_in_flight)),
                    reload("http_sessions", number(quota.http_sessions)),
                    reload("sessions_per_tool", number(quota.sessions_per_tool)),
                    reload("calls_per_minute", number(quota.calls_per_minute)),
                    reload("principals", None),
                ],
            ),
            (
                "fleet",
                vec![
                    restart("state_key_file", fleet.and_then(|f| path(&f.state_key_file)))
                        .compared_by(fleet.map(|f| digest(f.state_key.bytes()))),
                    restart("redis_url", None).compared_by(fleet.map(|f| digest(f.redis_url.as_bytes()))),
                    restart("state_ttl_secs", fleet.and_then(|f| secs(f.state_ttl))),
                    restart("max_clock_skew_secs", fleet.and_then(|f| secs(f.max_clock_skew))),
                    restart("redis_connect_timeout_ms", fleet.and_then(|f| millis(f.redis_connect_timeout))),
                    restart("redis_response_timeout_ms", fleet.and_then(|f| millis(f.redis_response_timeout))),
                    restart("max_pending_redemptions", fleet.and_then(|f| number(f.max_pending_redemptions))),
                    restart("allow_plaintext", fleet.map(|f| f.allow_plaintext.to_string())),
                ],
            ),
            (
                "distribution",
                vec![
                    reload("store", distribution.store.as_deref().and_then(path)),
                    reload("lock_file", path(&distribution.lock_file)),
                    reload("allow_tags", Some(distribution.allow_tags.to_string())),
                    reload("require_signature", Some(distribution.require_signature.to_string())),
                    reload(
                        "keys",
                        list(&distribution.keys.iter().map(|k| k.display().to_string()).collect::<Vec<_>>()),
                    ),
                    reload("insecure_registries", list(&distribution.insecure_registries)),
                    reload("max_manifest_bytes", number(distribution.max_manifest_bytes)),
                    reload("max_component_bytes", number(distribution.max_component_bytes)),
                    reload("connect_timeout_secs", secs(distribution.connect_timeout)),
                    reload("read_timeout_secs", secs(distribution.read_timeout)),
                    reload("request_timeout_secs", secs(distribution.request_timeout)),
                    reload("max_signature_payload_bytes", number(distribution.max_signature_payload_bytes)),
                    reload("max_signatures", number(distribution.max_signatures)),
                    reload("max_redirects", number(distribution.max_redirects)),
                    reload("max_token_response_bytes", number(distribution.max_token_response_bytes)),
                    reload("max_lock_bytes", number(distribution.max_lock_bytes)),
                    reload("max_auth_file_bytes", number(distribution.max_auth_file_bytes)),
                    reload("max_layers", number(distribution.max_layers)),
                    reload("auth_file", distribution.auth_file.as_deref().and_then(path)),
                    reload("credentials", None),
                ],
            ),
            (
                "metrics",
                vec![
                    restart("listen", metrics.listen.and_then(|listen| text(&listen.to_string()))),
                    restart("public", Some(metrics.public.to_string())),
                    restart("max_principals", number(metrics.max_principals)),
                    restart("max_tool_labels", number(metrics.max_tool_labels)),
                    restart("readers", list(&metrics.readers)),
                ],
            ),
            (
                "traces",
                vec![
                    restart("endpoint", traces.and_then(|t| text(&t.endpoint))),
                    restart("principal", traces.and_then(|t| text(t.principal.as_str()))),
                    restart("service_name", traces.and_then(|t| text(&t.service_name))),
                    restart("max_queued_spans", traces.and_then(|t| number(t.max_queued_spans))),
                    restart("export_timeout_secs", traces.and_then(|t| secs(t.export_timeout))),
                ],
            ),
            (
                "serve",
                vec![
                    reload("shutdown_grace_secs", secs(self.serve.shutdown_grace)),
                    reload("cancel_grace_secs", secs(self.serve.cancel_grace)),
                    reload("startup_list_wait_secs", secs(self.serve.startup_list_wait)),
                ],
            ),
            (
                "log",
                vec![
                    reload("max_client_bytes", number(self.log.max_client_bytes)),
                    reload("client_error_interval_secs", secs(self.log.client_error_interval)),
                ],
            ),
            (
                "cards",
                vec![
                    reload("max_card_bytes", number(self.cards.max_card_bytes)),
                    reload("max_presented_bytes", number(self.cards.max_presented_bytes)),
                    reload("max_value_bytes", number(self.cards.max_value_bytes)),
                ],
            ),
        ]
    }

    /// Each key fixed while `airlock serve` runs that `next` would change;
    /// empty when a reload can apply `next`.
    pub fn restarts(&self, next: &Config) -> Vec<Restart> {
        let shipped = self.audit.as_ref().is_some_and(|audit| audit.postgres.is_some());
        let mut changed = Vec::new();
        for ((section, now), (_, new)) in self.section_keys().into_iter().zip(next.section_keys()) {
            for (now, new) in now.into_iter().zip(new) {
                let while_ = match now.applies {
                    Applies::Reload => continue,
                    Applies::Restart => None,
                    // The shipper follows the file it was started with: a
                    // new file would be written but never shipped.
                    Applies::RestartWhileShipped if shipped => Some("[audit.postgres] ships it"),
                    Applies::RestartWhileShipped => continue,
                };
                if (&now.shown, &now.identity) != (&new.shown, &new.identity) {
                    let key = if section.is_empty() { now.name.to_owned() } else { format!("{section}.{}", now.name) };
                    changed.push(Restart { key, from: now.shown, to: new.shown, while_ });
                }
            }
        }
        changed
    }

    /// The keys fixed until a restart, for the operator guide: one line
    /// per section that has any.
    #[cfg(test)]
    pub(super) fn fixed_keys(&self) -> String {
        let mut out = String::new();
        for (section, keys) in self.section_keys() {
            let fixed: Vec<&Key> = keys.iter().filter(|key| !matches!(key.applies, Applies::Reload)).collect();
            if fixed.is_empty() {
                continue;
            }
            let names = if fixed.len() == keys.len() {
                "every key".to_owned()
            } else {
                let names: Vec<String> = fixed
                    .iter()
                    .map(|key| match key.applies {
                        Applies::RestartWhileShipped => {
                            format!("`{}` while `[audit.postgres]` ships the log", key.name)
                        }
                        _ => format!("`{}`", key.name),
                    })
                    .collect();
                names.join(", ")
            };
            out.push_str(&format!("- `[{section}]`: {names}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_guide_lists_the_keys_fixed_until_a_restart() {
        let config = super::super::testing::parse("").unwrap();
        airlock_settings::generated::ensure(
            "book/src/operator/loading.md",
            "<!-- generated from the settings table",
            "<!-- end of generated -->",
            &config.fixed_keys(),
            "the settings table (crates/host/src/config/keys.rs)",
        )
        .unwrap();
    }
}
