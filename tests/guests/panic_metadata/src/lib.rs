//! `panic_metadata`: a **hostile test fixture**, never a tool to ship.
//!
//! `metadata.parameters()` panics (a trap). The host must refuse to load the
//! component with an error that carries the panic message, and keep serving
//! the other tools.

// This guest exists to panic in `metadata`.
#![allow(clippy::panic)]

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

struct PanicMetadata;

impl metadata::Guest for PanicMetadata {
    fn name() -> String {
        "panic_metadata".to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: metadata.parameters() panics.".to_owned()
    }

    fn parameters() -> String {
        panic!("hostile guest panicked on purpose in metadata.parameters()")
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for PanicMetadata {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(PanicMetadata with_types_in airlock_guest::bindings);
