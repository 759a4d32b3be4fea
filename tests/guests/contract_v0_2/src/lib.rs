//! Test fixture: a tool built for the frozen contract `airlock:tool@0.2.0`
//! (`wit/0.2.0`), as components built before 0.3.0 are. `legacy_whoami`
//! returns its arguments and the principal it reads from the 0.2.0
//! `caller` import; the host must keep loading and running it.

wit_bindgen::generate!({
    path: "../../../wit/0.2.0",
    world: "tool",
});

use airlock::tool::caller;
use exports::airlock::tool::{handler, metadata};

struct LegacyWhoami;

impl metadata::Guest for LegacyWhoami {
    fn name() -> String {
        "legacy_whoami".to_owned()
    }
    fn description() -> String {
        "Returns its arguments and who called it (a tool built for airlock:tool@0.2.0).".to_owned()
    }
    fn parameters() -> String {
        r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.to_owned()
    }
    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for LegacyWhoami {
    fn call(arguments: String) -> Result<String, handler::ToolError> {
        let who = caller::get();
        // The principal is JSON-escaped by hand: this fixture has no serde.
        let principal: String = who
            .principal
            .chars()
            .flat_map(|c| match c {
                '"' | '\\' => vec!['\\', c],
                c if c.is_control() => format!("\\u{:04x}", u32::from(c)).chars().collect(),
                c => vec![c],
            })
            .collect();
        Ok(format!(r#"{{"arguments":{arguments},"principal":"{principal}"}}"#))
    }
}

export!(LegacyWhoami);
