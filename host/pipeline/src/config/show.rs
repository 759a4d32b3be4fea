//! `airlock config`: the effective configuration, each value with where it
//! came from — the operator's file, the built-in settings of the bundled
//! tools, `[defaults]`, or Airlock's own default.
//!
//! # Security
//!
//! Secrets never appear: a member named `token`, `value`, `password` or
//! `secret` is printed as `"<redacted>"` (bearer tokens and secret headers
//! are named by the environment variable or file they are read from, which
//! is shown).

use super::layer::{self, Source};
use super::{Config, ToolConfig};
use airlock_settings::key_doc::Unset;
use airlock_settings::limits::{DEFAULTS, Limits};
use std::fmt::Write as _;
use toml::{Table, Value};

/// Members whose values are never printed (`url` and `redis_url`, of
/// `[audit.postgres]` and `[fleet]`, may carry a password).
const SECRET_KEYS: [&str; 6] = ["token", "value", "password", "secret", "url", "redis_url"];
/// Column at which the source comment starts.
const COMMENT_COLUMN: usize = 44;

impl Config {
    /// The effective configuration as TOML text, every value followed by
    /// a comment naming where it came from. Values nobody set are shown
    /// with their defaults.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let file = self.file.as_ref().map_or_else(|| "<built-in>".to_owned(), |f| f.display().to_string());
        let _ = writeln!(out, "# The effective configuration of {file}.");
        let _ = writeln!(
            out,
            "# After each value: the file that set it, `built-in` (the bundled tools' built-in settings),\n\
             # `[defaults]` (the file's defaults for every tool) or `default` (Airlock's own)."
        );
        let top: Vec<(&String, &Value)> = self.layers.table.iter().filter(|(_, v)| !v.is_table()).collect();
        for (key, value) in top {
            self.line(&mut out, key, key, value);
        }
        // The top-level keys nobody set (the top level is the first
        // section, under the empty name), at their effective values: the
        // bundled tools' directories, whether the built-in settings are
        // the base.
        let keys = self.section_keys();
        for key in keys.iter().take(1).flat_map(|(_, keys)| keys) {
            if !self.layers.table.contains_key(key.name) {
                unset_line(&mut out, key.name, key.shown.as_deref());
            }
        }

        let _ = writeln!(out, "\n[defaults]");
        self.limits(&mut out, "defaults", &self.defaults, None);
        for (name, tool) in &self.tools {
            let _ = writeln!(out, "\n[tools.{}]", layer::key(name));
            self.tool(&mut out, name, tool);
        }
        for (section, value) in &self.layers.table {
            if matches!(section.as_str(), "defaults" | "tools") {
                continue;
            }
            if let Value::Table(table) = value {
                self.section(&mut out, section, table);
            }
        }
        // The sections nobody wrote, every key at its effective value, as
        // comments (the output stays valid TOML that sets what was set).
        for (section, keys) in &keys {
            let written = self.layers.table.contains_key(*section)
                || section
                    .split_once('.')
                    .is_some_and(|(parent, child)| self.layers.table.get(parent).and_then(|t| t.get(child)).is_some());
            if section.is_empty() || written {
                continue;
            }
            let _ = writeln!(out, "\n# [{section}]");
            for key in keys {
                unset_line(&mut out, key.name, key.shown.as_deref());
            }
        }
        out
    }

    fn tool(&self, out: &mut String, name: &str, tool: &ToolConfig) {
        let prefix = format!("tools.{name}");
        // The keys with a value of their own (the flags) first, each with
        // its source, then the limits.
        let keys = crate::tool_settings::values(tool);
        let valued: Vec<(&str, String)> =
            keys.iter().filter_map(|(key, value)| value.as_ref().map(|value| (key.name, value.toml()))).collect();
        for (key, value) in &valued {
            let source = self.source(&format!("{prefix}.{key}")).unwrap_or_else(|| "default".to_owned());
            line(out, key, value, &source);
        }
        self.limits(out, &prefix, &tool.runtime.settings.limits, Some(&self.defaults));
        let table = self.layers.table.get("tools").and_then(|t| t.get(name)).and_then(Value::as_table);
        let rest: Table = table
            .into_iter()
            .flatten()
            .filter(|(key, _)| DEFAULTS.key(key).is_none() && !valued.iter().any(|(name, _)| name == &key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        self.members(out, &prefix, &rest);
        for (key, _) in keys.iter().filter(|(key, _)| !rest.contains_key(key.name)) {
            if let Unset::Text(meaning) = key.unset
                && !valued.iter().any(|(name, _)| *name == key.name)
            {
                // The guide's Markdown quotes are noise in a TOML comment.
                let _ = writeln!(out, "# {}: {}", key.name, meaning.replace('`', ""));
            }
        }
    }

    /// The effective limits, each with its source; `defaults` is given for
    /// a tool (whose unset limits come from `[defaults]`).
    fn limits(&self, out: &mut String, prefix: &str, limits: &Limits, defaults: Option<&Limits>) {
        let values = limit_values(limits);
        for (key, value) in values {
            let source = match self.source(&format!("{prefix}.{key}")) {
                Some(source) => source,
                None if defaults.is_some() && self.source(&format!("defaults.{key}")).is_some() => {
                    "[defaults]".to_owned()
                }
                None if key == "fuel" && limits.fuel == Limits::fuel_for(limits.timeout) => {
                    "default: follows timeout_ms".to_owned()
                }
                None => "default".to_owned(),
            };
            line(out, key, &value, &source);
        }
    }

    fn section(&self, out: &mut String, name: &str, table: &Table) {
        let _ = writeln!(out, "\n[{}]", layer::key(name));
        self.members(out, name, table);
    }

    fn subtable(&self, out: &mut String, path: &str, table: &Table) {
        let _ = writeln!(out, "\n[{path}]");
        self.members(out, path, table);
    }

    /// The values of the table at `path`, then its subtables: a value
    /// printed after a subtable's header would read as the subtable's.
    fn members(&self, out: &mut String, path: &str, table: &Table) {
        for (key, value) in table.iter().filter(|(_, v)| !v.is_table()) {
            self.line(out, key, &format!("{path}.{key}"), value);
        }
        // The section's other keys (a subtable such as `[http.jwt]` is a
        // section of its own in `section_keys`, not a key of its parent).
        let keys = self.section_keys().into_iter().find(|(section, _)| *section == path);
        for key in keys.iter().flat_map(|(_, keys)| keys).filter(|key| !table.contains_key(key.name)) {
            unset_line(out, key.name, key.shown.as_deref());
        }
        for (key, value) in table {
            if let Value::Table(sub) = value {
                self.subtable(out, &format!("{path}.{key}"), sub);
            }
        }
    }

    fn line(&self, out: &mut String, key: &str, path: &str, value: &Value) {
        let source = self.source(path).unwrap_or_else(|| "default".to_owned());
        line(out, key, &layer::show(&redacted(key, value)), &source);
    }

    fn source(&self, path: &str) -> Option<String> {
        self.layers.origins.get(path).map(|source| match source {
            Source::BuiltIn => "built-in".to_owned(),
            Source::File(file) => file.clone(),
        })
    }
}

/// The per-tool limit keys, as written in `airlock.toml`.
fn limit_values(limits: &Limits) -> impl Iterator<Item = (&'static str, String)> + '_ {
    DEFAULTS.keys.iter().filter_map(|key| (key.show)(limits).map(|value| (key.doc.name, value.toml())))
}

/// A key nobody set, as a comment: its effective value (`default`), or
/// that it is not set.
fn unset_line(out: &mut String, key: &str, value: Option<&str>) {
    match value {
        Some(value) => commented(out, &format!("# {} = {value}", layer::key(key)), "default"),
        None => {
            let _ = writeln!(out, "# {} is not set", layer::key(key));
        }
    }
}

fn line(out: &mut String, key: &str, value: &str, source: &str) {
    commented(out, &format!("{} = {value}", layer::key(key)), source);
}

/// `text`, then `# comment` at [`COMMENT_COLUMN`].
fn commented(out: &mut String, text: &str, comment: &str) {
    let pad = COMMENT_COLUMN.saturating_sub(text.chars().count()).max(1);
    let _ = writeln!(out, "{text}{:pad$}# {comment}", "");
}

/// `value` with every secret member replaced.
fn redacted(key: &str, value: &Value) -> Value {
    if SECRET_KEYS.contains(&key) {
        return Value::String("<redacted>".to_owned());
    }
    match value {
        Value::Array(items) => Value::Array(items.iter().map(|v| redacted("", v)).collect()),
        Value::Table(table) => Value::Table(table.iter().map(|(k, v)| (k.clone(), redacted(k, v))).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use airlock_settings::limits::DEFAULTS;
    use std::path::Path;

    /// The keys the parser accepts in `section`, as its error for an
    /// unknown key lists them.
    fn accepted(section: &str) -> Vec<String> {
        let text = match section {
            "" => "__probe = 1\n".to_owned(),
            "audit.postgres" => "[audit]\nfile = \"a.jsonl\"\n[audit.postgres]\n__probe = 1\n".to_owned(),
            _ => format!("[{section}]\n__probe = 1\n"),
        };
        let err = Config::layered(&text, "my.toml", Path::new(".")).map(drop).unwrap_err().to_string();
        let expected = err.split("expected").nth(1).unwrap_or_else(|| panic!("[{section}]: no key list in {err}"));
        expected.split('`').skip(1).step_by(2).map(str::to_owned).collect()
    }

    #[test]
    fn every_key_the_parser_accepts_is_shown() {
        let shown = describe("");
        let shows = |key: &str| {
            shown.lines().any(|line| {
                let line = line.strip_prefix("# ").unwrap_or(line);
                line.starts_with(&format!("{key} =")) || line.starts_with(&format!("{key} is not set"))
            })
        };
        let mut sections = vec![String::new()];
        let mut checked = 0;
        while let Some(section) = sections.pop() {
            for key in accepted(&section) {
                let path = if section.is_empty() { key.clone() } else { format!("{section}.{key}") };
                match path.as_str() {
                    // Limits and tools are shown by their own tables, checked below.
                    "defaults" | "tools" => continue,
                    // Tables: their keys are checked in turn.
                    "engine" | "policy" | "audit" | "audit.postgres" | "http" | "http.jwt" | "quotas" | "fleet"
                    | "distribution" | "metrics" | "traces" | "serve" | "log" | "cards" | "approvals" | "tasks" => {
                        assert!(shown.contains(&format!("[{path}]")), "[{path}] is not shown:\n{shown}");
                        sections.push(path);
                    }
                    _ => assert!(shows(&key), "{path} is accepted but `airlock config` does not show it:\n{shown}"),
                }
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked} keys checked");
        for key in accepted("defaults") {
            assert!(DEFAULTS.key(&key).is_some(), "[defaults] {key} is not declared");
        }
        // A tool's table: the limits, and every key of [tools.NAME].
        let tool = describe("[tools.t]\ncomponent = \"t.wasm\"\n");
        let section = &tool[tool.find("[tools.t]").expect("the tool")..];
        for key in DEFAULTS.keys.iter().map(|limit| limit.doc.name).chain(["side_effect", "concurrency_safe"]) {
            assert!(section.lines().any(|line| line.starts_with(&format!("{key} = "))), "{key}:\n{section}");
        }
        for key in crate::tool_settings::keys().iter().map(|key| key.name) {
            let line = section
                .lines()
                .find(|line| line.starts_with(&format!("{key} = ")) || line.starts_with(&format!("# {key}: ")));
            assert!(line.is_some(), "{key}:\n{section}");
        }
    }

    fn describe(text: &str) -> String {
        Config::layered(text, "my.toml", Path::new(".")).unwrap().describe()
    }

    fn line_of<'a>(text: &'a str, section: &str, key: &str) -> &'a str {
        let start = text.find(&format!("\n[{section}]\n")).unwrap_or_else(|| panic!("no [{section}] in\n{text}"));
        let rest = &text[start + section.len() + 4..];
        let rest = &rest[..rest.find("\n[").unwrap_or(rest.len())];
        rest.lines().find(|l| l.starts_with(&format!("{key} = "))).unwrap_or_else(|| panic!("no {key} in [{section}]"))
    }

    #[test]
    fn each_value_says_where_it_came_from() {
        let text = describe("[defaults]\nmemory_mib = 64\n[tools.run_js]\ntimeout_ms = 5000\n");
        let js = |key| line_of(&text, "tools.run_js", key);
        assert!(js("timeout_ms").contains("= 5000") && js("timeout_ms").ends_with("# my.toml"), "{text}");
        assert!(js("memory_mib").contains("= 256") && js("memory_mib").ends_with("# built-in"), "{text}");
        assert!(js("side_effect").ends_with("# built-in"), "{text}");
        assert!(js("fuel").ends_with("# default: follows timeout_ms"), "{text}");
        let echo = |key| line_of(&text, "tools.echo", key);
        assert!(echo("memory_mib").contains("= 64") && echo("memory_mib").ends_with("# [defaults]"), "{text}");
        assert!(echo("max_output_bytes").ends_with("# default"), "{text}");
        assert!(line_of(&text, "tools.run_js.sessions", "max_live").ends_with("# built-in"), "{text}");
    }

    #[test]
    fn caps_set_in_the_file_are_shown() {
        let text = describe(
            "[http]\nmax_connections_per_peer = 2\n[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\n\
             jwks_file = \"k.json\"\nmax_token_bytes = 1024\n[cards]\nmax_card_bytes = 100\n",
        );
        assert!(line_of(&text, "http", "max_connections_per_peer").contains("= 2"), "{text}");
        assert!(line_of(&text, "http.jwt", "max_token_bytes").contains("= 1024"), "{text}");
        assert!(line_of(&text, "cards", "max_card_bytes").contains("= 100"), "{text}");
        // A tool's values come before its subtables too.
        let text =
            describe("[tools.http_fetch]\npresent_result = \"{status}\"\n[tools.http_fetch.network]\nallow = []\n");
        assert!(line_of(&text, "tools.http_fetch", "present_result").contains("{status}"), "{text}");
    }

    #[test]
    fn secrets_are_never_shown() {
        let text = describe("[http]\ntokens = [{ token = \"0123456789abcdef-secret\", principal = \"alice\" }]\n");
        assert!(!text.contains("0123456789abcdef-secret"), "{text}");
        assert!(text.contains("<redacted>") && text.contains("alice"), "{text}");
        let text = describe(
            "[audit]\nfile = \"a.jsonl\"\n[audit.postgres]\nurl = \"postgresql://u:pw-secret@127.0.0.1/db\"\nreplica = \"r1\"\n",
        );
        assert!(!text.contains("pw-secret") && text.contains("r1"), "{text}");
    }
}
