//! Inspect: describe a component file without trusting it — what it is,
//! what it imports and exports, its metadata, and if it would be refused,
//! why.

use crate::bindings::Contract;
use crate::compile_cache::digest;
use crate::engine::Runtime;
use crate::loader;
use crate::tool_settings::ToolSettings;
use serde::Serialize;
use serde_json::{Value, json};
use std::path::Path;

/// What `airlock inspect` reports about a file.
#[derive(Debug, Serialize)]
pub struct Inspection {
    /// The file.
    pub file: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256 of the bytes.
    pub sha256: String,
    /// `component`, or what it is instead.
    pub kind: String,
    /// Imported interfaces (components only).
    pub imports: Vec<String>,
    /// Exported interfaces (components only).
    pub exports: Vec<String>,
    /// The world the component targets, e.g. `airlock:tool/tool@0.2.0`,
    /// when its exports match a version of the tool world.
    pub world: Option<String>,
    /// The contract version it targets, e.g. `0.2.0`, when Airlock would
    /// load it.
    pub contract: Option<String>,
    /// Declared metadata, when it could be read.
    pub metadata: Option<Value>,
    /// The tool's revision (`sha256:HEX` over the component digest and the
    /// definition digest), when its metadata could be read: what `[tools.NAME]
    /// pin` takes.
    pub revision: Option<String>,
    /// The digest of the tool's definition (name, description, schemas), the
    /// second part of the revision.
    pub definition_digest: Option<String>,
    /// Whether Airlock would load it.
    pub accepted: bool,
    /// Why not.
    pub rejected_because: Option<String>,
    /// For `airlock inspect oci://…`: the registry reference, manifest
    /// digest and verified signer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<crate::distribution::Origin>,
}

/// Inspect the component at `path` with `runtime` (metadata is read under
/// default limits with no grants).
pub async fn inspect(runtime: &Runtime, path: &Path) -> Inspection {
    let mut report = Inspection {
        file: path.display().to_string(),
        size: 0,
        sha256: String::new(),
        kind: "unknown".into(),
        imports: vec![],
        exports: vec![],
        world: None,
        contract: None,
        metadata: None,
        revision: None,
        definition_digest: None,
        accepted: false,
        rejected_because: None,
        origin: None,
    };
    // The size cap holds before anything is read or compiled.
    match std::fs::metadata(path) {
        Ok(meta) if meta.len() > crate::compiler::MAX_COMPONENT_BYTES => {
            report.size = meta.len();
            let error = loader::LoadError::TooLarge { path: path.to_owned(), size: meta.len() };
            report.rejected_because = Some(error.to_string());
            return report;
        }
        Ok(_) => {}
        Err(err) => {
            report.rejected_because = Some(format!("cannot read: {err}"));
            return report;
        }
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::open(path).and_then(|file| {
        std::io::Read::read_to_end(&mut std::io::Read::take(file, crate::compiler::MAX_COMPONENT_BYTES + 1), &mut bytes)
    });
    if let Err(err) = read {
        report.rejected_because = Some(format!("cannot read: {err}"));
        return report;
    }
    report.size = bytes.len() as u64;
    if report.size > crate::compiler::MAX_COMPONENT_BYTES {
        let error = loader::LoadError::TooLarge { path: path.to_owned(), size: report.size };
        report.rejected_because = Some(error.to_string());
        return report;
    }
    report.sha256 = digest(&bytes);
    if let Err(why) = crate::compiler::check_header(&bytes) {
        report.kind = match why {
            crate::compiler::NotAComponent::CoreModule => "core module".into(),
            crate::compiler::NotAComponent::UnsupportedVersion | crate::compiler::NotAComponent::NotWasm => {
                "not WebAssembly".into()
            }
        };
        report.rejected_because = Some(why.to_string());
        return report;
    }
    report.kind = "component".into();
    // Compiled in the metered child process like any load (never in this
    // process), then described from the same compilation.
    let settings = ToolSettings::default();
    let built = match loader::compile_bytes(runtime, path, &bytes, &settings).await {
        Ok(built) => built,
        Err(err) => {
            report.rejected_because = Some(err.to_string());
            return report;
        }
    };
    let ty = built.component().component_type();
    let engine = built.component().engine();
    report.imports = ty.imports(engine).map(|(name, _)| name.to_owned()).collect();
    report.exports = ty.exports(engine).map(|(name, _)| name.to_owned()).collect();
    // Each export names its version (`airlock:tool/handler@0.2.0`); the
    // newest version whose interfaces are all exported is the world the
    // component targets.
    report.world = Contract::ALL
        .into_iter()
        .find(|contract| {
            ["airlock:tool/metadata", "airlock:tool/handler"].iter().all(|interface| {
                let want = format!("{interface}@{}", contract.version());
                report.exports.contains(&want)
            })
        })
        .map(|contract| contract.world().to_owned());
    match loader::describe(runtime, path.to_owned(), built, settings).await {
        Ok(tool) => {
            report.metadata = Some(json!({
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters.json(),
                "output": tool.output.as_ref().map(|schema| schema.json()),
            }));
            report.contract = Some(tool.contract().version().to_owned());
            report.revision = Some(tool.revision.clone());
            report.definition_digest = Some(tool.definition_digest.clone());
            report.accepted = true;
        }
        Err(err) => report.rejected_because = Some(err.to_string()),
    }
    report
}
