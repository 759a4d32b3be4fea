//! The settings table: every section's keys as their owners declare them
//! (`airlock_settings::section!`), with their effective values in a
//! [`Config`]. `airlock config` shows the keys nobody set from it, and a
//! reload is refused, naming each key, when it would change one that is
//! fixed ([`Config::restarts`]). No key is named here: each row comes from
//! its section's declaration, so a key added there is shown and compared
//! at once.

use super::{Config, TOP};
use airlock_runtime::compile_cache::digest;
#[cfg(test)]
use airlock_settings::key_doc::KeyDoc;
use airlock_settings::key_doc::{Applies, Value};
use airlock_settings::section::{Section, Shown};
use std::fmt;

/// One key of a section, as `airlock config` shows it and a reload
/// compares it.
pub(super) struct Key {
    /// The key as the operator writes it.
    pub(super) name: &'static str,
    /// When a change to it takes effect.
    applies: Applies,
    /// Its effective value as TOML (`None` when it is not set and has no
    /// default, or is secret).
    pub(super) shown: Option<String>,
    /// What a restart check compares besides `shown` when that cannot tell
    /// a change (a secret, a key file's contents): its SHA-256
    /// (`compile_cache::digest`), never shown.
    identity: Option<String>,
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

/// A value as `airlock config` writes it (TOML, as the layered file's own
/// values are written).
fn toml_text(value: &Value) -> String {
    let toml = match value {
        Value::Bool(value) => toml::Value::Boolean(*value),
        Value::Int(value) => match i64::try_from(*value) {
            Ok(value) => toml::Value::Integer(value),
            // Past what TOML holds: shown as the number it is.
            Err(_) => return value.to_string(),
        },
        Value::Text(text) => toml::Value::String(text.clone()),
        Value::List(items) => toml::Value::Array(items.iter().cloned().map(toml::Value::String).collect()),
    };
    super::layer::show(&toml)
}

/// The rows of `section` for `settings` (`None`: the section is absent).
fn rows<S>(section: &Section<S>, settings: Option<&S>) -> (&'static str, Vec<Key>) {
    let keys = section
        .values(settings)
        .into_iter()
        .map(|Shown { name, applies, value, identity }| Key {
            name,
            applies,
            shown: value.as_ref().map(toml_text),
            identity: identity.map(|secret| digest(secret.as_bytes())),
        })
        .collect();
    (section.name, keys)
}

/// What the guide says of every key outside `[defaults]` and
/// `[tools.NAME]`, by section, in the order `airlock config` shows them.
#[cfg(test)]
fn declared() -> Vec<(&'static str, Vec<KeyDoc>)> {
    use airlock_policy::audit::{AUDIT, POSTGRES};
    use airlock_settings::http::{HTTP, JWT};
    use airlock_settings::service::{LOG, METRICS, SERVE, TRACES};
    vec![
        (TOP.name, TOP.docs()),
        (airlock_settings::engine::ENGINE.name, airlock_settings::engine::ENGINE.docs()),
        (airlock_policy::authorize::POLICY.name, airlock_policy::authorize::POLICY.docs()),
        (AUDIT.name, AUDIT.docs()),
        (POSTGRES.name, POSTGRES.docs()),
        (HTTP.name, HTTP.docs()),
        (JWT.name, JWT.docs()),
        (crate::quota::QUOTAS.name, crate::quota::QUOTAS.docs()),
        (crate::fleet::FLEET.name, crate::fleet::FLEET.docs()),
        (airlock_runtime::distribution::DISTRIBUTION.name, airlock_runtime::distribution::DISTRIBUTION.docs()),
        (METRICS.name, METRICS.docs()),
        (TRACES.name, TRACES.docs()),
        (SERVE.name, SERVE.docs()),
        (LOG.name, LOG.docs()),
        (airlock_policy::card::CARDS.name, airlock_policy::card::CARDS.docs()),
        (crate::approval::APPROVALS.name, crate::approval::APPROVALS.docs()),
        (crate::tasks::TASKS.name, crate::tasks::TASKS.docs()),
    ]
}

impl Config {
    /// Each section's keys with their effective values, in the order
    /// `airlock config` shows the sections nobody wrote (the top level
    /// first, under the empty name).
    pub(super) fn section_keys(&self) -> Vec<(&'static str, Vec<Key>)> {
        let audit = self.audit.as_ref();
        vec![
            rows(&TOP, Some(self)),
            rows(&airlock_settings::engine::ENGINE, Some(&self.engine)),
            rows(&airlock_policy::authorize::POLICY, Some(&self.policy)),
            rows(&airlock_policy::audit::AUDIT, audit),
            rows(&airlock_policy::audit::POSTGRES, audit.and_then(|audit| audit.postgres.as_ref())),
            rows(&airlock_settings::http::HTTP, Some(&self.http)),
            rows(&airlock_settings::http::JWT, self.http.jwt.as_ref()),
            rows(&crate::quota::QUOTAS, Some(&*self.quotas)),
            rows(&crate::fleet::FLEET, self.fleet.as_ref()),
            rows(&airlock_runtime::distribution::DISTRIBUTION, Some(&*self.distribution)),
            rows(&airlock_settings::service::METRICS, Some(&self.metrics)),
            rows(&airlock_settings::service::TRACES, self.traces.as_ref()),
            rows(&airlock_settings::service::SERVE, Some(&self.serve)),
            rows(&airlock_settings::service::LOG, Some(&self.log)),
            rows(&airlock_policy::card::CARDS, Some(&self.cards)),
            rows(&crate::approval::APPROVALS, Some(&self.approvals)),
            rows(&crate::tasks::TASKS, Some(&self.tasks)),
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
}

/// The keys fixed until a restart, for the operator guide: one line per
/// section that has any.
#[cfg(test)]
fn fixed_keys() -> String {
    let mut out = String::new();
    for (section, keys) in declared() {
        let fixed: Vec<&KeyDoc> = keys.iter().filter(|key| key.applies != Applies::Reload).collect();
        if fixed.is_empty() {
            continue;
        }
        let names = if fixed.len() == keys.len() {
            "every key".to_owned()
        } else {
            let names: Vec<String> = fixed
                .iter()
                .map(|key| match key.applies {
                    Applies::RestartWhileShipped => format!("`{}` while `[audit.postgres]` ships the log", key.name),
                    _ => format!("`{}`", key.name),
                })
                .collect();
            names.join(", ")
        };
        out.push_str(&format!("- `[{section}]`: {names}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_guide_lists_the_keys_fixed_until_a_restart() {
        airlock_settings::generated::ensure(
            "book/src/operator/loading.md",
            "<!-- generated from the settings table",
            "<!-- end of generated -->",
            &super::fixed_keys(),
            "the sections' declarations (host/pipeline/src/config/keys.rs)",
        )
        .unwrap();
    }

    #[test]
    fn the_top_level_is_documented() {
        super::TOP.ensure_documents("book/src/operator/configuration.md").unwrap();
    }

    #[test]
    fn every_section_shows_every_key_it_declares() {
        let config = super::super::testing::parse("").unwrap();
        let shown = config.section_keys();
        let declared = super::declared();
        assert_eq!(shown.len(), declared.len());
        for ((section, keys), (named, docs)) in shown.iter().zip(&declared) {
            assert_eq!(section, named);
            let names: Vec<&str> = keys.iter().map(|key| key.name).collect();
            let declared: Vec<&str> = docs.iter().map(|doc| doc.name).collect();
            assert_eq!(names, declared, "[{section}]");
        }
    }
}
