//! Every key `airlock config` shows for the sections other than
//! `[defaults]` (whose keys are `LIMIT_KEYS`): the key as the operator
//! writes it and its effective value as TOML, `None` when it is not set and
//! has no default. A key the parser accepts and this list lacks fails the
//! test `every_key_the_parser_accepts_is_shown`.

use super::Config;
use std::path::Path;
use std::time::Duration;

/// A value as TOML text.
type Shown = Option<String>;

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
    pub(super) fn section_keys(&self) -> Vec<(&'static str, Vec<(&'static str, Shown)>)> {
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
            ("", vec![("builtin_settings", Some("true".to_owned()))]),
            (
                "engine",
                vec![
                    ("cache", Some(engine.cache_dir.is_some().to_string())),
                    ("cache_dir", engine.cache_dir.as_deref().and_then(path)),
                    ("wasm_stack_kib", number(engine.wasm_stack_bytes >> 10)),
                    ("max_live_instances", number(engine.max_live_instances)),
                    ("compile_timeout_secs", number(engine.compile_timeout_secs)),
                    ("compile_memory_mib", number(engine.compile_memory_mib)),
                ],
            ),
            (
                "policy",
                vec![
                    ("policies", self.policy.policies.as_deref().and_then(path)),
                    ("entities", self.policy.entities.as_deref().and_then(path)),
                ],
            ),
            (
                "audit",
                vec![
                    ("file", audit.and_then(|a| path(&a.file))),
                    ("durability", audit.and_then(|a| text(a.durability.as_str()))),
                    ("record_arguments", audit.map(|a| a.record_arguments.to_string())),
                    ("redact_keys", audit.and_then(|a| list(&a.redact_keys))),
                ],
            ),
            (
                "audit.postgres",
                vec![
                    ("url", None),
                    ("url_file", None),
                    ("replica", postgres.and_then(|p| text(&p.replica))),
                    ("batch_rows", postgres.and_then(|p| number(p.batch_rows))),
                    ("poll_interval_ms", postgres.and_then(|p| millis(p.poll_interval))),
                    ("max_backoff_secs", postgres.and_then(|p| secs(p.max_backoff))),
                    ("connect_timeout_secs", postgres.and_then(|p| secs(p.connect_timeout))),
                    ("statement_timeout_secs", postgres.and_then(|p| secs(p.statement_timeout))),
                    ("allow_plaintext", postgres.map(|p| p.allow_plaintext.to_string())),
                ],
            ),
            (
                "http",
                vec![
                    ("tokens", None),
                    ("allowed_origins", list(&self.http.allowed_origins)),
                    ("header_timeout_secs", secs(http.header_timeout)),
                    ("body_timeout_secs", secs(http.body_timeout)),
                    ("max_connections", number(http.max_connections)),
                    ("max_connections_per_peer", number(http.max_connections_per_peer)),
                    ("max_unauthenticated_connections", number(http.max_unauthenticated_connections)),
                    ("unauthenticated_timeout_secs", secs(http.unauthenticated_timeout)),
                    (
                        "trusted_proxies",
                        list(&self.http.trusted_proxies.iter().map(ToString::to_string).collect::<Vec<_>>()),
                    ),
                    ("max_body_bytes", number(http.max_body_bytes)),
                    ("max_sessions", number(http.max_sessions)),
                    ("max_pending_confirmations", number(http.max_pending_confirmations)),
                ],
            ),
            (
                "http.jwt",
                vec![
                    ("issuer", jwt.and_then(|j| text(&j.issuer))),
                    ("audience", jwt.and_then(|j| text(&j.audience))),
                    ("jwks_file", None),
                    ("jwks_url", None),
                    ("principal_claim", jwt.and_then(|j| text(&j.principal_claim))),
                    ("algorithms", jwt.and_then(|j| list(&j.algorithms))),
                    ("authorization_servers", jwt.and_then(|j| list(&j.authorization_servers))),
                    ("resource", jwt.and_then(|j| text(&j.resource))),
                    ("jwks_refresh_seconds", jwt.and_then(|j| secs(j.jwks_refresh))),
                    ("jwks_min_refresh_seconds", jwt.and_then(|j| secs(j.jwks_min_refresh))),
                    ("attribute_claims", None),
                    ("max_token_bytes", number(jwt_caps.max_token_bytes)),
                    ("leeway_secs", secs(jwt_caps.leeway)),
                    ("max_principal_bytes", number(jwt_caps.max_principal_bytes)),
                    ("max_jwks_bytes", number(jwt_caps.max_jwks_bytes)),
                    ("max_jwks_keys", number(jwt_caps.max_jwks_keys)),
                    ("jwks_fetch_timeout_secs", secs(jwt_caps.jwks_fetch_timeout)),
                    ("max_claim_list_items", number(jwt_caps.max_claim_list_items)),
                ],
            ),
            (
                "quotas",
                vec![
                    ("calls_in_flight", number(quota.calls_in_flight)),
                    ("http_sessions", number(quota.http_sessions)),
                    ("sessions_per_tool", number(quota.sessions_per_tool)),
                    ("calls_per_minute", number(quota.calls_per_minute)),
                    ("principals", None),
                ],
            ),
            (
                "fleet",
                vec![
                    ("state_key_file", fleet.and_then(|f| path(&f.state_key_file))),
                    ("redis_url", None),
                    ("state_ttl_secs", fleet.and_then(|f| secs(f.state_ttl))),
                    ("max_clock_skew_secs", fleet.and_then(|f| secs(f.max_clock_skew))),
                    ("redis_connect_timeout_ms", fleet.and_then(|f| millis(f.redis_connect_timeout))),
                    ("redis_response_timeout_ms", fleet.and_then(|f| millis(f.redis_response_timeout))),
                    ("max_pending_redemptions", fleet.and_then(|f| number(f.max_pending_redemptions))),
                    ("allow_plaintext", fleet.map(|f| f.allow_plaintext.to_string())),
                ],
            ),
            (
                "distribution",
                vec![
                    ("store", distribution.store.as_deref().and_then(path)),
                    ("lock_file", path(&distribution.lock_file)),
                    ("allow_tags", Some(distribution.allow_tags.to_string())),
                    ("require_signature", Some(distribution.require_signature.to_string())),
                    ("keys", list(&distribution.keys.iter().map(|k| k.display().to_string()).collect::<Vec<_>>())),
                    ("insecure_registries", list(&distribution.insecure_registries)),
                    ("max_manifest_bytes", number(distribution.max_manifest_bytes)),
                    ("max_component_bytes", number(distribution.max_component_bytes)),
                    ("connect_timeout_secs", secs(distribution.connect_timeout)),
                    ("read_timeout_secs", secs(distribution.read_timeout)),
                    ("request_timeout_secs", secs(distribution.request_timeout)),
                    ("max_signature_payload_bytes", number(distribution.max_signature_payload_bytes)),
                    ("max_signatures", number(distribution.max_signatures)),
                    ("max_redirects", number(distribution.max_redirects)),
                    ("max_token_response_bytes", number(distribution.max_token_response_bytes)),
                    ("max_lock_bytes", number(distribution.max_lock_bytes)),
                    ("max_auth_file_bytes", number(distribution.max_auth_file_bytes)),
                    ("max_layers", number(distribution.max_layers)),
                    ("auth_file", distribution.auth_file.as_deref().and_then(path)),
                    ("credentials", None),
                ],
            ),
            (
                "metrics",
                vec![
                    ("listen", metrics.listen.and_then(|listen| text(&listen.to_string()))),
                    ("public", Some(metrics.public.to_string())),
                    ("max_principals", number(metrics.max_principals)),
                    ("max_tool_labels", number(metrics.max_tool_labels)),
                    ("readers", list(&metrics.readers)),
                ],
            ),
            (
                "traces",
                vec![
                    ("endpoint", traces.and_then(|t| text(&t.endpoint))),
                    ("principal", traces.and_then(|t| text(t.principal.as_str()))),
                    ("service_name", traces.and_then(|t| text(&t.service_name))),
                    ("max_queued_spans", traces.and_then(|t| number(t.max_queued_spans))),
                    ("export_timeout_secs", traces.and_then(|t| secs(t.export_timeout))),
                ],
            ),
            (
                "serve",
                vec![
                    ("shutdown_grace_secs", secs(self.serve.shutdown_grace)),
                    ("cancel_grace_secs", secs(self.serve.cancel_grace)),
                ],
            ),
            (
                "log",
                vec![
                    ("max_client_bytes", number(self.log.max_client_bytes)),
                    ("client_error_interval_secs", secs(self.log.client_error_interval)),
                ],
            ),
            (
                "cards",
                vec![
                    ("max_card_bytes", number(self.cards.max_card_bytes)),
                    ("max_presented_bytes", number(self.cards.max_presented_bytes)),
                    ("max_value_bytes", number(self.cards.max_value_bytes)),
                ],
            ),
        ]
    }
}
