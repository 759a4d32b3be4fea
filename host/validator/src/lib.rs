//! The JSON Schema validator that the Airlock host runs as a WebAssembly
//! component inside its own engine.
//!
//! A tool's schemas are the tool author's, and the instances checked
//! against them are a model's arguments or a guest's result: none of it is
//! trusted, and some schemas cost far more to evaluate than their size
//! suggests (regexes, `uniqueItems`, combinators that copy subschemas into
//! every error). Compiled to `wasm32-wasip2`, the validator runs under the
//! same kind of meter as a tool: the host's epoch deadline stops it at the
//! call's deadline and the store's limiter caps its memory, so a schema can
//! make this component trap, never the host allocate or spin.
//!
//! One instance holds one compiled schema (`compile`), then checks any
//! number of instances against it (`validate`).

use exports::airlock::validator::schema::{Guest, Violation, Violations};
use std::cell::RefCell;

wit_bindgen::generate!({
    path: "../../wit/validator",
    world: "validator",
});

thread_local! {
    /// The schema this instance checks against.
    static COMPILED: RefCell<Option<jsonschema::Validator>> = const { RefCell::new(None) };
}

struct Validator;

impl Guest for Validator {
    fn compile(schema: String, regex_size_limit: u32, regex_dfa_size_limit: u32) -> Result<(), String> {
        let schema: serde_json::Value =
            serde_json::from_str(&schema).map_err(|err| format!("the schema is not JSON: {err}"))?;
        // The linear-time `regex` engine with size caps (the default,
        // fancy-regex, backtracks); look-around and back-references are
        // refused here.
        let patterns = jsonschema::PatternOptions::regex()
            .size_limit(regex_size_limit as usize)
            .dfa_size_limit(regex_dfa_size_limit as usize);
        let validator =
            jsonschema::options().with_pattern_options(patterns).build(&schema).map_err(|err| err.to_string())?;
        COMPILED.with(|compiled| *compiled.borrow_mut() = Some(validator));
        Ok(())
    }

    fn validate(
        instance: String,
        max_listed: u32,
        max_counted: u32,
        max_message_bytes: u32,
    ) -> Result<Option<Violations>, String> {
        let instance: serde_json::Value =
            serde_json::from_str(&instance).map_err(|err| format!("the instance is not JSON: {err}"))?;
        COMPILED.with(|compiled| {
            let compiled = compiled.borrow();
            let validator = compiled.as_ref().ok_or("no schema was compiled")?;
            // The common case first: `is_valid` stops at the first violation
            // and builds no error values.
            if validator.is_valid(&instance) {
                return Ok(None);
            }
            let mut listed = Vec::new();
            let mut counted = 0u32;
            for error in validator.iter_errors(&instance).take(max_counted as usize) {
                counted += 1;
                if listed.len() < max_listed as usize {
                    let mut message = error.to_string();
                    if message.len() > max_message_bytes as usize {
                        let end = message.floor_char_boundary(max_message_bytes as usize);
                        message.truncate(end);
                    }
                    listed.push(Violation { pointer: error.instance_path().to_string(), message });
                }
            }
            Ok((counted > 0).then_some(Violations { listed, counted }))
        })
    }
}

export!(Validator);
