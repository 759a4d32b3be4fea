//! `bad_schema`: a **hostile test fixture**, never a tool to ship.
//!
//! `metadata.parameters()` returns `not json`. The host compiles the
//! parameters schema once at load time, so it must refuse to load the
//! component with an error that says the schema is not JSON.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

struct BadSchema;

impl metadata::Guest for BadSchema {
    fn name() -> String {
        "bad_schema".to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: its parameters schema is not JSON.".to_owned()
    }

    fn parameters() -> String {
        "not json".to_owned()
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for BadSchema {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(BadSchema with_types_in airlock_guest::bindings);
