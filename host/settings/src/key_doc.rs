//! What the guide says of one key, declared once: when a change to it
//! takes effect ([`Applies`]), the unit its number is written in
//! ([`Unit`]), what it accepts ([`Accepts`], with the one range error,
//! [`check_range`]), what it is when not set ([`Unset`]), what the example
//! configuration writes for it ([`Example`]), and a value as `airlock
//! config` and the generated documents show it ([`Value`]).
//!
//! These are the words both the declarations ([`section!`](crate::section!))
//! and the documents generated from them ([`generated`](crate::generated))
//! speak; neither module owns the other.

/// When a change to a key takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applies {
    /// On the next reload.
    Reload,
    /// Only when `airlock serve` restarts: what it configures is built when
    /// the host starts (the engine, listeners, the JWT verifier, the fleet's
    /// signer, the audit shipper, metrics and traces). A reload that would
    /// change it is refused, naming the key.
    Restart,
    /// Only on a restart while `[audit.postgres]` ships the log (the shipper
    /// follows the file it was started with); on a reload otherwise.
    RestartWhileShipped,
}

impl Applies {
    /// How the operator guide says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Applies::Reload => "reload",
            Applies::Restart => "restart",
            Applies::RestartWhileShipped => "restart while `[audit.postgres]` ships the log, else reload",
        }
    }
}

/// How the operator writes a number, and how the host holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count (instances, files, principals, fuel units).
    Count,
    /// Bytes.
    Bytes,
    /// Kibibytes, held as written.
    Kib,
    /// Kibibytes, held in bytes.
    KibBytes,
    /// Mebibytes, held as written.
    Mib,
    /// Mebibytes, held in bytes.
    MibBytes,
    /// A percentage.
    Percent,
    /// Seconds.
    Secs,
    /// Milliseconds.
    Millis,
}

impl Unit {
    /// What follows a number in this unit in the guide and in errors
    /// (with its leading space), empty for a count.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Bytes => " bytes",
            Unit::Kib | Unit::KibBytes => " KiB",
            Unit::Mib | Unit::MibBytes => " MiB",
            Unit::Percent => " %",
            Unit::Secs => " s",
            Unit::Millis => " ms",
        }
    }

    /// Bytes per unit written, for the units held in bytes; 1 otherwise.
    pub(crate) fn scale(self) -> u64 {
        match self {
            Unit::KibBytes => 1 << 10,
            Unit::MibBytes => 1 << 20,
            _ => 1,
        }
    }
}

/// A value as `airlock config` and the generated documents show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `true` or `false`.
    Bool(bool),
    /// A number, in the unit the operator writes.
    Int(u64),
    /// A string (a path, a URL, a name).
    Text(String),
    /// An array of strings.
    List(Vec<String>),
}

impl Value {
    /// The value as TOML text.
    pub fn toml(&self) -> String {
        match self {
            Value::Bool(value) => value.to_string(),
            Value::Int(value) => value.to_string(),
            Value::Text(text) => quoted(text),
            Value::List(items) => {
                let items: Vec<String> = items.iter().map(|item| quoted(item)).collect();
                format!("[{}]", items.join(", "))
            }
        }
    }

    /// A path as text.
    pub fn path(path: &std::path::Path) -> Value {
        Value::Text(path.display().to_string())
    }
}

/// `text` as a TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `value` if it is within `min..=max`; else the error every range check
/// gives: the key as the operator writes it (after `scope`, its section,
/// when not empty), the value set, the range accepted in `unit`, and
/// `about`, what the key is (or why the range is what it is).
///
/// # Errors
///
/// `value` is out of range.
pub fn check_range(
    scope: &str,
    key: &str,
    value: u64,
    min: u64,
    max: u64,
    unit: Unit,
    about: &str,
) -> Result<u64, String> {
    if (min..=max).contains(&value) {
        return Ok(value);
    }
    let scope = if scope.is_empty() { String::new() } else { format!("{scope} ") };
    Err(format!("{scope}{key} = {value} is out of range: accepted {} ({about})", range_text(min, max, unit)))
}

/// A range in the guide's and the errors' words: `1..=300 s`, or `at
/// least 1` for a range with no upper end but the integer's.
fn range_text(min: u64, max: u64, unit: Unit) -> String {
    if max == u64::MAX { format!("at least {min}{}", unit.suffix()) } else { format!("{min}..={max}{}", unit.suffix()) }
}

/// What a key accepts.
#[derive(Debug, Clone, Copy)]
pub enum Accepts {
    /// A number within `min..=max`, written in `unit`.
    Range {
        /// Least value accepted.
        min: u64,
        /// Most value accepted.
        max: u64,
        /// The unit it is written in.
        unit: Unit,
    },
    /// What is accepted, in words (a type, a form, a list of choices).
    Text(&'static str),
}

/// What a key is when it is not set.
#[derive(Debug, Clone, Copy)]
pub enum Unset {
    /// Its default value (`None`: no value at all).
    Value(fn() -> Option<Value>),
    /// What an unset one means, in words (a derived default, a structured
    /// value).
    Text(&'static str),
}

/// What `airlock.example.toml` writes for a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Example {
    /// Its default, commented out.
    Default,
    /// Its default, set.
    SetDefault,
    /// This value (TOML text), commented out.
    Commented(&'static str),
    /// This value (TOML text), set.
    Set(&'static str),
}

/// What the guide says of one key, declared once.
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    /// The key as the operator writes it.
    pub name: &'static str,
    /// What it does, in one line (as declared; [`KeyDoc::doc`] trims it).
    pub doc: &'static str,
    /// What it accepts.
    pub accepts: Accepts,
    /// What it is when not set.
    pub unset: Unset,
    /// When a change to it takes effect.
    pub applies: Applies,
    /// What the example configuration writes for it.
    pub example: Example,
}

impl KeyDoc {
    /// What it does, in one line.
    pub fn doc(&self) -> &'static str {
        self.doc.trim()
    }

    /// `value` (as written, in the key's unit) if the key's range accepts
    /// it; a key without a range accepts anything.
    ///
    /// # Errors
    ///
    /// The range error of [`check_range`], naming the key after `scope`.
    pub fn check(&self, scope: &str, value: u64) -> Result<u64, String> {
        match self.accepts {
            Accepts::Range { min, max, unit } => check_range(scope, self.name, value, min, max, unit, self.doc()),
            Accepts::Text(_) => Ok(value),
        }
    }

    /// The default as TOML text, if it can be written.
    pub fn default_value(&self) -> Option<String> {
        match self.unset {
            Unset::Value(default) => default().map(|value| value.toml()),
            Unset::Text(_) => None,
        }
    }

    /// What is accepted, in the guide's words.
    pub fn accepted(&self) -> String {
        match self.accepts {
            Accepts::Range { min, max, unit } => range_text(min, max, unit),
            Accepts::Text(text) => text.to_owned(),
        }
    }
}
