//! The path syntax of `json_query`: parsing a query into [`Step`]s and
//! evaluating them over a JSON value.
//!
//! ```text
//! query  = [ "$" ] [ name | "*" ] { step }
//! step   = "." name | "." "*" | "[" index "]" | "[" "*" "]" | "[" quoted "]"
//! name   = 1*( letter | digit | "_" | "-" )
//! index  = [ "-" ] 1*digit          ; negative counts from the end
//! quoted = a JSON string literal     ; for keys with other characters
//! ```

use serde_json::Value;
use std::fmt;

/// One step of a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object key (also an array index when it is all digits).
    Key(String),
    /// An array index; negative counts from the end.
    Index(i64),
    /// Every element of an array or value of an object.
    Wildcard,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Key(key) if !key.is_empty() && key.chars().all(is_name_char) => write!(f, ".{key}"),
            Step::Key(key) => write!(f, "[{}]", Value::String(key.clone())),
            Step::Index(index) => write!(f, "[{index}]"),
            Step::Wildcard => f.write_str("[*]"),
        }
    }
}

/// A query that does not follow the syntax: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 0-based character position of the offending character.
    pub position: usize,
    /// What the parser expected there.
    pub expected: String,
    /// The character found instead (`None` at the end of the query).
    pub found: Option<char>,
}

impl SyntaxError {
    /// The message for the model: position, expectation, and the query with
    /// a caret under the offending character.
    pub fn describe(&self, query: &str) -> String {
        let found = self.found.map_or_else(|| "the end of the query".to_owned(), |c| format!("`{c}`"));
        let caret = " ".repeat(self.position);
        format!(
            "invalid query at character {}: expected {}, found {found}\n  {query}\n  {caret}^",
            self.position + 1,
            self.expected
        )
    }
}

/// Characters allowed in an unquoted key name.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Parse `query` into its steps.
pub fn parse(query: &str) -> Result<Vec<Step>, SyntaxError> {
    let chars: Vec<char> = query.chars().collect();
    let mut parser = Parser { chars, pos: 0 };
    parser.query()
}

/// A cursor over the query's characters.
struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn error(&self, expected: &str) -> SyntaxError {
        SyntaxError { position: self.pos, expected: expected.to_owned(), found: self.peek() }
    }

    fn query(&mut self) -> Result<Vec<Step>, SyntaxError> {
        let mut steps = Vec::new();
        match self.peek() {
            None => return Err(self.error("`$` (the whole document) or a path such as `a.b[0]`")),
            Some('$') => self.pos += 1,
            Some('*') => {
                self.pos += 1;
                steps.push(Step::Wildcard);
            }
            Some(c) if is_name_char(c) => steps.push(Step::Key(self.name())),
            _ => {}
        }
        while let Some(c) = self.peek() {
            self.pos += 1;
            let step =
                match c {
                    '.' => match self.peek() {
                        Some('*') => {
                            self.pos += 1;
                            Step::Wildcard
                        }
                        Some(c) if is_name_char(c) => Step::Key(self.name()),
                        _ => return Err(self.error(
                            "a key name (letters, digits, `_`, `-`) or `*` after `.`; quote other keys as [\"key\"]",
                        )),
                    },
                    '[' => {
                        let step = self.bracket()?;
                        if self.peek() != Some(']') {
                            return Err(self.error("`]`"));
                        }
                        self.pos += 1;
                        step
                    }
                    _ => {
                        self.pos -= 1;
                        return Err(self.error("`.key`, `[index]`, `[*]` or the end of the query"));
                    }
                };
            steps.push(step);
        }
        Ok(steps)
    }

    /// The characters from `start` to the current position.
    fn since(&self, start: usize) -> String {
        self.chars.get(start..self.pos).unwrap_or_default().iter().collect()
    }

    /// A run of name characters; the caller saw at least one.
    fn name(&mut self) -> String {
        let start = self.pos;
        while self.peek().is_some_and(is_name_char) {
            self.pos += 1;
        }
        self.since(start)
    }

    /// What follows `[`: `*`, an index or a quoted key.
    fn bracket(&mut self) -> Result<Step, SyntaxError> {
        match self.peek() {
            Some('*') => {
                self.pos += 1;
                Ok(Step::Wildcard)
            }
            Some('"') => self.quoted().map(Step::Key),
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let start = self.pos;
                self.pos += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.pos += 1;
                }
                let text: String = self.since(start);
                text.parse().map(Step::Index).map_err(|_| SyntaxError {
                    position: start,
                    expected: "an index: an integer such as 0 or -1 that fits in 64 bits".to_owned(),
                    found: self.chars.get(start).copied(),
                })
            }
            _ => Err(self.error("an index (e.g. 0 or -1), `*` or a quoted key (e.g. \"a.b\") after `[`")),
        }
    }

    /// A JSON string literal starting at the current `"`.
    fn quoted(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("a closing `\"`")),
                Some('\\') => self.pos += 2,
                Some('"') => break,
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        let literal: String = self.since(start);
        serde_json::from_str(&literal).map_err(|err| SyntaxError {
            position: start,
            expected: format!("a valid JSON string literal ({err})"),
            found: Some('"'),
        })
    }
}

/// Why a query without wildcards found nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// The query prefix that did resolve, e.g. `$.a.b`.
    pub at: String,
    /// What the value there is, and why the next step fails.
    pub reason: String,
}

/// All values `steps` reach from `root`, in document order (object values
/// under a wildcard in key order). When nothing is reached and the query has
/// no wildcard, the [`Miss`] says where and why.
pub fn evaluate<'v>(root: &'v Value, steps: &[Step]) -> Result<Vec<&'v Value>, Miss> {
    let mut current = vec![root];
    let mut at = String::from("$");
    for step in steps {
        let mut next = Vec::new();
        for value in &current {
            apply(value, step, &mut next);
        }
        if let [only] = current.as_slice()
            && next.is_empty()
            && !steps.contains(&Step::Wildcard)
        {
            return Err(Miss { reason: explain(only, step), at });
        }
        current = next;
        at.push_str(&step.to_string());
    }
    Ok(current)
}

/// Push what `step` reaches from `value` onto `out`.
fn apply<'v>(value: &'v Value, step: &Step, out: &mut Vec<&'v Value>) {
    match (value, step) {
        (Value::Object(map), Step::Key(key)) => out.extend(map.get(key)),
        (Value::Array(items), Step::Key(key)) => out.extend(key.parse::<usize>().ok().and_then(|i| items.get(i))),
        (Value::Array(items), Step::Index(index)) => {
            out.extend(resolve_index(items.len(), *index).and_then(|i| items.get(i)))
        }
        (Value::Array(items), Step::Wildcard) => out.extend(items),
        (Value::Object(map), Step::Wildcard) => {
            // Sorted so that the order does not depend on serde_json features.
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.extend(entries.into_iter().map(|(_, v)| v));
        }
        _ => {}
    }
}

/// The position `index` names in an array of `len` elements.
fn resolve_index(len: usize, index: i64) -> Option<usize> {
    if index >= 0 { usize::try_from(index).ok() } else { len.checked_sub(usize::try_from(index.unsigned_abs()).ok()?) }
}

/// Why `step` reaches nothing from `value`.
fn explain(value: &Value, step: &Step) -> String {
    match (value, step) {
        (Value::Object(map), Step::Key(key)) => {
            format!("the object has no key {} (its keys: {})", Value::String(key.clone()), keys(map))
        }
        (Value::Object(map), _) => {
            format!("the value is an object, not an array: use .key or [\"key\"] (its keys: {})", keys(map))
        }
        (Value::Array(items), _) if step_is_index(step) && items.is_empty() => "the array is empty".to_owned(),
        (Value::Array(items), _) if step_is_index(step) => {
            format!(
                "the array has {} elements: valid indexes are 0 to {} (or -1 for the last)",
                items.len(),
                items.len() - 1
            )
        }
        (Value::Array(items), _) => {
            format!("the value is an array of {} elements, not an object: use [index] or [*]", items.len())
        }
        (other, _) => format!("the value is {}, which has no keys or elements", kind(other)),
    }
}

/// Whether `step` addresses an array element.
fn step_is_index(step: &Step) -> bool {
    match step {
        Step::Index(_) => true,
        Step::Key(key) => key.parse::<usize>().is_ok(),
        Step::Wildcard => false,
    }
}

/// The first keys of `map`, sorted, for an error message.
fn keys(map: &serde_json::Map<String, Value>) -> String {
    const SHOWN: usize = 20;
    let mut names: Vec<&str> = map.keys().map(String::as_str).collect();
    if names.is_empty() {
        return "none".to_owned();
    }
    names.sort_unstable();
    let more = names.len().saturating_sub(SHOWN);
    let mut list = names.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
    if more > 0 {
        list.push_str(&format!(", and {more} more"));
    }
    list
}

/// "a string", "a number", ... for an error message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
