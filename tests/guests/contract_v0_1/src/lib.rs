//! Test fixture: a tool built for the frozen contract `airlock:tool@0.1.0`
//! (`wit/0.1.0`), as components built before 0.2.0 are. `legacy_echo`
//! returns its arguments; the host must keep loading and running it.

wit_bindgen::generate!({
    path: "../../../wit/0.1.0",
    world: "tool",
});

use exports::airlock::tool::{handler, metadata};

struct LegacyEcho;

impl metadata::Guest for LegacyEcho {
    fn name() -> String {
        "legacy_echo".to_owned()
    }
    fn description() -> String {
        "Returns its arguments (a tool built for airlock:tool@0.1.0).".to_owned()
    }
    fn parameters() -> String {
        r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned()
    }
    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for LegacyEcho {
    fn call(arguments: String) -> Result<String, handler::ToolError> {
        Ok(arguments)
    }
}

export!(LegacyEcho);
