//! Layering: the built-in settings of the bundled tools are the base that
//! an operator's file overrides key by key.
//!
//! A file that only adds a grant to `read_file` keeps every other built-in
//! setting (which tools are read-only and run in parallel, the
//! interpreters' deadlines and memory, their sessions). A file whose top
//! level says `builtin_settings = false` starts from nothing instead: every
//! tool it does not configure gets the plain defaults and asks before it
//! runs.
//!
//! The merge works on TOML tables before they are read into the raw config
//! types, so it knows nothing of the keys: a table in the file is merged
//! into the built-in table of the same name, any other value replaces the
//! built-in one (an array is replaced whole, not appended to). Each leaf
//! remembers where it came from, for `airlock config`.

use std::collections::BTreeMap;
use toml::{Table, Value};

/// The top-level key that turns the built-in base off.
pub const BUILTIN_SETTINGS_KEY: &str = "builtin_settings";

/// Where a configured value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The built-in settings of the bundled tools.
    BuiltIn,
    /// The operator's file (its path as given).
    File(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::BuiltIn => f.write_str("built-in"),
            Source::File(file) => f.write_str(file),
        }
    }
}

/// A merged table and the source of each leaf, keyed by dotted path
/// (`tools.echo.side_effect`).
#[derive(Debug, Clone, Default)]
pub struct Layered {
    /// The merged configuration table.
    pub table: Table,
    /// The source of every leaf value.
    pub origins: BTreeMap<String, Source>,
}

/// Whether `file` asks for the built-in base (the default) or not.
///
/// # Errors
///
/// `builtin_settings` is not a boolean.
pub fn wants_builtin(file: &Table) -> Result<bool, String> {
    match file.get(BUILTIN_SETTINGS_KEY) {
        None => Ok(true),
        Some(Value::Boolean(wanted)) => Ok(*wanted),
        Some(other) => Err(format!(
            "{BUILTIN_SETTINGS_KEY} = {} is not accepted: use true (the built-in settings of the bundled tools are \
             the base this file overrides, the default) or false (start from nothing)",
            show(other)
        )),
    }
}

/// `file` over `base` (when given), with the origin of every leaf. The
/// `builtin_settings` key itself is consumed here.
pub fn layer(base: Option<&Table>, mut file: Table, file_name: &str) -> Layered {
    file.remove(BUILTIN_SETTINGS_KEY);
    let mut layered = Layered::default();
    if let Some(base) = base {
        merge(&mut layered, base.clone(), "", &Source::BuiltIn);
    }
    merge(&mut layered, file, "", &Source::File(file_name.to_owned()));
    layered
}

fn merge(into: &mut Layered, over: Table, prefix: &str, source: &Source) {
    let mut target = std::mem::take(&mut into.table);
    merge_table(&mut target, over, prefix, source, &mut into.origins);
    into.table = target;
}

fn merge_table(target: &mut Table, over: Table, prefix: &str, source: &Source, origins: &mut BTreeMap<String, Source>) {
    for (key, value) in over {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (target.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(table)) => merge_table(existing, table, &path, source, origins),
            (_, value) => {
                // A replaced subtree forgets the origins of what it replaced.
                origins.retain(|p, _| !(p == &path || p.starts_with(&format!("{path}."))));
                record(&value, &path, source, origins);
                target.insert(key, value);
            }
        }
    }
}

fn record(value: &Value, path: &str, source: &Source, origins: &mut BTreeMap<String, Source>) {
    match value {
        Value::Table(table) => {
            for (key, value) in table {
                record(value, &format!("{path}.{key}"), source, origins);
            }
        }
        _ => {
            origins.insert(path.to_owned(), source.clone());
        }
    }
}

/// A TOML value as TOML text (inline form), for `airlock config`.
pub fn show(value: &Value) -> String {
    match value {
        // JSON string escapes are valid in TOML basic strings.
        Value::String(text) => serde_json::Value::String(text.clone()).to_string(),
        Value::Integer(n) => n.to_string(),
        Value::Float(x) => x.to_string(),
        Value::Boolean(b) => b.to_string(),
        Value::Datetime(d) => d.to_string(),
        Value::Array(items) => format!("[{}]", items.iter().map(show).collect::<Vec<_>>().join(", ")),
        Value::Table(table) => {
            let members: Vec<String> = table.iter().map(|(k, v)| format!("{} = {}", key(k), show(v))).collect();
            if members.is_empty() { "{}".to_owned() } else { format!("{{ {} }}", members.join(", ")) }
        }
    }
}

/// A key as TOML text: bare when it can be, quoted otherwise.
pub fn key(key: &str) -> String {
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        key.to_owned()
    } else {
        serde_json::Value::String(key.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn the_file_overrides_key_by_key() {
        let base =
            table("[tools.run_js]\nside_effect = false\nmemory_mib = 256\n[tools.run_js.sessions]\nmax_live = 8\n");
        let file = table("[tools.run_js]\nmemory_mib = 64\n[tools.run_js.sessions]\nidle_secs = 5\n");
        let layered = layer(Some(&base), file, "a.toml");
        let js = layered.table["tools"]["run_js"].as_table().unwrap();
        assert_eq!(js["side_effect"].as_bool(), Some(false));
        assert_eq!(js["memory_mib"].as_integer(), Some(64));
        assert_eq!(js["sessions"]["max_live"].as_integer(), Some(8));
        assert_eq!(js["sessions"]["idle_secs"].as_integer(), Some(5));
        assert_eq!(layered.origins["tools.run_js.side_effect"], Source::BuiltIn);
        assert_eq!(layered.origins["tools.run_js.memory_mib"], Source::File("a.toml".into()));
        assert_eq!(layered.origins["tools.run_js.sessions.idle_secs"], Source::File("a.toml".into()));
    }

    #[test]
    fn a_replaced_value_forgets_what_it_replaced() {
        let base = table("[tools.a]\ndirs = [{ host = \"x\", guest = \"/x\" }]\n");
        let layered = layer(Some(&base), table("[tools.a]\ndirs = []\n"), "f");
        assert_eq!(layered.table["tools"]["a"]["dirs"].as_array().map(Vec::len), Some(0));
        assert_eq!(layered.origins["tools.a.dirs"], Source::File("f".into()));
    }

    #[test]
    fn builtin_settings_can_be_turned_off() {
        assert_eq!(wants_builtin(&table("")), Ok(true));
        assert_eq!(wants_builtin(&table("builtin_settings = false")), Ok(false));
        let err = wants_builtin(&table("builtin_settings = \"no\"")).unwrap_err();
        assert!(err.contains("use true") && err.contains("false"), "{err}");
        let layered = layer(None, table("builtin_settings = false\n[tools.a]\nfuel = 1\n"), "f");
        assert!(!layered.table.contains_key(BUILTIN_SETTINGS_KEY));
    }

    #[test]
    fn values_print_as_toml() {
        let t = table("a = \"q\\\"\"\nb = [1, true]\nc = { x = 1, \"y z\" = \"w\" }\n");
        assert_eq!(show(&t["a"]), "\"q\\\"\"");
        assert_eq!(show(&t["b"]), "[1, true]");
        assert_eq!(show(&t["c"]), "{ x = 1, \"y z\" = \"w\" }");
    }
}
