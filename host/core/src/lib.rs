//! Airlock's vocabulary, shared by every layer above it: a call as a front
//! end hands it to the host ([`call::CallRequest`]) and as it comes back
//! ([`call::ToolResult`]), its outcome ([`outcome`]), who it acts for
//! ([`caller`]), its arguments as proposed and parsed ([`arguments`]), the
//! content blocks it returns beside its result ([`content`]), how far it
//! has come ([`progress`]), its log lines for a client ([`tool_log`]), the
//! stages it went through ([`timeline`]), the caller's trace context
//! ([`trace_parent`]), how text is cut and cleaned ([`text`]) and the forms
//! of the text a model reads ([`render`]), and the canonical JSON a value
//! is digested as ([`canonical_json`]).
//!
//! Nothing here runs a tool, reads a setting or touches the network: these
//! are values and the pure functions that check and render them.

#![deny(missing_docs)]

pub mod arguments;
pub mod call;
pub mod caller;
pub mod canonical_json;
pub mod content;
pub mod integers;
pub mod optional_null;
pub mod outcome;
pub mod plaintext;
pub mod progress;
pub mod render;
pub mod text;
pub mod timeline;
pub mod tool_log;
pub mod trace_parent;
