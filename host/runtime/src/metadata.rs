//! The metadata a component declares, checked: its name, its description
//! (capped), and its parameters and output schemas (capped, parsed, checked
//! against their metaschema, then compiled in the metered validator). The
//! same checks apply to what the `metadata` export returns and to what a
//! component records in its `airlock-metadata` section (`recorded.rs`).

use crate::sandbox::RawMetadata;
use crate::tool_settings::{ToolSettings, check_name};
use crate::validator::{Bounds, MAX_REGEX_BYTES, Schema, Stopped, Validator};
use serde_json::Value;
use std::sync::Arc;

/// Largest tool description accepted.
pub const MAX_DESCRIPTION_BYTES: usize = 16 << 10;
/// Longest description, in characters, that every client converter
/// accepts: LlamaIndex's `to_openai_tool()` refuses a longer one, and
/// OpenAI-compatible endpoints have refused `tools[i].function.description`
/// above it (`string_above_max_length`). A longer one loads, with a
/// warning.
pub const PORTABLE_DESCRIPTION_CHARS: usize = 1024;

/// The warning for a description longer than
/// [`PORTABLE_DESCRIPTION_CHARS`]; `None` when it fits.
pub fn description_too_long(name: &str, description: &str) -> Option<String> {
    let chars = description.chars().count();
    (chars > PORTABLE_DESCRIPTION_CHARS).then(|| {
        format!(
            "the description of {name:?} is {chars} characters; some clients refuse more than \
             {PORTABLE_DESCRIPTION_CHARS} (LlamaIndex's to_openai_tool(), OpenAI-compatible endpoints): move detail \
             into the parameters' descriptions"
        )
    })
}

/// Largest parameters or output schema accepted.
pub const MAX_SCHEMA_BYTES: usize = 256 << 10;

pub(crate) struct CheckedMetadata {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
    pub(crate) output: Option<Value>,
}

pub(crate) fn check_metadata(raw: RawMetadata) -> Result<CheckedMetadata, String> {
    check_name(&raw.name)?;
    if raw.description.len() > MAX_DESCRIPTION_BYTES {
        return Err(format!(
            "the description of {:?} is {} bytes; at most {MAX_DESCRIPTION_BYTES} are accepted",
            raw.name,
            raw.description.len()
        ));
    }
    if raw.description.trim().is_empty() {
        return Err(format!("tool {:?} has an empty description; models need one to choose the tool", raw.name));
    }
    let parameters = check_schema(&raw.name, "parameters", &raw.parameters)?;
    if parameters.get("type") != Some(&Value::String("object".into())) {
        return Err(format!(
            "the parameters schema of {:?} must have \"type\": \"object\" (tool arguments are a JSON object)",
            raw.name
        ));
    }
    let output = match &raw.output {
        Some(text) => Some(check_schema(&raw.name, "output", text)?),
        None => None,
    };
    Ok(CheckedMetadata { name: raw.name, description: raw.description, parameters, output })
}

/// Parse a schema the component declared and check its shape: JSON, an
/// object, valid against its metaschema. (Compiling it, which runs the
/// author's patterns and references, is done under the meter:
/// [`compile_schema`].)
fn check_schema(tool: &str, which: &str, text: &str) -> Result<Value, String> {
    if text.len() > MAX_SCHEMA_BYTES {
        return Err(format!(
            "the {which} schema of {tool:?} is {} bytes; at most {MAX_SCHEMA_BYTES} are accepted",
            text.len()
        ));
    }
    let schema: Value =
        serde_json::from_str(text).map_err(|err| format!("the {which} schema of {tool:?} is not JSON: {err}"))?;
    if !schema.is_object() {
        return Err(format!("the {which} schema of {tool:?} must be a JSON object (a JSON Schema), not {schema}"));
    }
    jsonschema::meta::validate(&schema)
        .map_err(|err| format!("the {which} schema of {tool:?} is not a valid JSON Schema: {err}"))?;
    Ok(schema)
}

/// Compile a schema the component declared in the runtime's metered
/// validator, under the tool's `timeout_ms` and `validation_memory_mib`, as
/// reading its metadata was.
pub(crate) async fn compile_schema(
    validator: &Validator,
    tool: &str,
    which: &str,
    schema: &Value,
    settings: &ToolSettings,
) -> Result<Arc<Schema>, String> {
    let limits = &settings.limits;
    // The validator itself is made ready first: its own compilation (once
    // per runtime, or once per cache) is not the schema's time.
    validator.ready().await.map_err(|why| format!("the {which} schema of {tool:?}: {why}"))?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let bounds = Bounds {
        at: tokio::time::Instant::now() + limits.timeout,
        cancel: &cancel,
        memory_bytes: limits.validation_memory_bytes,
    };
    match validator.compile(schema, bounds).await {
        Ok(Ok(compiled)) => Ok(Arc::new(compiled)),
        Ok(Err(why)) => Err(format!(
            "the {which} schema of {tool:?} cannot be compiled: {why} (patterns may use neither look-around nor \
             back-references, and compile to at most {MAX_REGEX_BYTES} bytes)"
        )),
        Err(Stopped::Deadline | Stopped::Cancelled) => Err(format!(
            "compiling the {which} schema of {tool:?} took longer than the tool's timeout_ms = {}",
            limits.timeout.as_millis()
        )),
        Err(Stopped::Memory) => Err(format!(
            "compiling the {which} schema of {tool:?} needed more memory than the tool's validation_memory_mib = {}",
            limits.validation_memory_bytes >> 20
        )),
        Err(Stopped::Fault(why)) => Err(format!("the {which} schema of {tool:?} cannot be compiled: {why}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(parameters: &str, output: Option<&str>) -> RawMetadata {
        RawMetadata {
            name: "t".into(),
            description: "d".into(),
            parameters: parameters.into(),
            output: output.map(Into::into),
        }
    }

    #[test]
    fn schemas_are_checked() {
        assert!(check_metadata(raw(r#"{"type":"object"}"#, None)).is_ok());
        assert!(check_metadata(raw(r#"{"type":"object"}"#, Some(r#"{"type":"string"}"#))).is_ok());
        let err = |p: &str, o: Option<&str>| check_metadata(raw(p, o)).err().unwrap();
        assert!(err("not json", None).contains("not JSON"));
        assert!(err("[]", None).contains("must be a JSON object"));
        assert!(err(r#"{"type":"string"}"#, None).contains("\"type\": \"object\""));
        assert!(err(r#"{"type":"object","minProperties":"x"}"#, None).contains("not a valid JSON Schema"));
        assert!(err(r#"{"type":"object"}"#, Some("true")).contains("output schema"));
    }

    #[test]
    fn a_description_over_the_portable_length_is_named() {
        assert_eq!(description_too_long("t", &"é".repeat(PORTABLE_DESCRIPTION_CHARS)), None);
        let warning = description_too_long("t", &"x".repeat(PORTABLE_DESCRIPTION_CHARS + 1)).unwrap();
        assert!(warning.contains("1025 characters") && warning.contains("1024"), "{warning}");
    }

    #[test]
    fn oversized_description_is_refused() {
        let mut meta = raw(r#"{"type":"object"}"#, None);
        meta.description = "x".repeat(MAX_DESCRIPTION_BYTES + 1);
        assert!(check_metadata(meta).err().unwrap().contains("at most"));
    }
}
