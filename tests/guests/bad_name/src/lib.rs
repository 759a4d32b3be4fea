//! `bad_name`: a **hostile test fixture**, never a tool to ship.
//!
//! Declares the tool name `bad name!`, which breaks the contract's
//! `^[A-Za-z0-9_-]{1,64}$`. Providers reject such names, so the host must
//! refuse to load the component with an error that names the rule.

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

struct BadName;

impl metadata::Guest for BadName {
    fn name() -> String {
        "bad name!".to_owned()
    }

    fn description() -> String {
        "Hostile test fixture: its name is not a valid tool name.".to_owned()
    }

    fn parameters() -> String {
        r#"{"type":"object"}"#.to_owned()
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for BadName {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(BadName with_types_in airlock_guest::bindings);
