//! `slow_metadata`: a **hostile test fixture**, never a tool to ship.
//!
//! `metadata.name()` spins forever. Reading metadata runs untrusted code,
//! so the host must read it under a deadline and fuel budget and refuse to
//! load the component (a load error caused by a timeout / out of fuel),
//! instead of hanging at startup.

use std::hint::black_box;

use airlock_guest::bindings::exports::airlock::tool::{handler, metadata};

struct SlowMetadata;

impl metadata::Guest for SlowMetadata {
    fn name() -> String {
        // `black_box` keeps the loop from being optimized away.
        let mut counter = 0_u64;
        loop {
            counter = black_box(counter.wrapping_add(1));
        }
    }

    fn description() -> String {
        "Hostile test fixture: metadata.name() never returns.".to_owned()
    }

    fn parameters() -> String {
        r#"{"type":"object"}"#.to_owned()
    }

    fn output() -> Option<String> {
        None
    }
}

impl handler::Guest for SlowMetadata {
    fn call(_arguments: String) -> Result<String, handler::ToolError> {
        Ok("{}".to_owned())
    }
}

airlock_guest::bindings::__export_tool_world!(SlowMetadata with_types_in airlock_guest::bindings);
