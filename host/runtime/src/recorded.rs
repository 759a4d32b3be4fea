//! Recorded metadata: what a component's `metadata` export returns, written
//! into the component itself at build time (`airlock tool stamp`), as one
//! JSON document in a top-level custom section named [`SECTION`].
//!
//! On a compile-cache miss the loader lists a tool from its recorded
//! metadata at once, checked as the export's would be (the same caps,
//! name, schema checks and compilation), while its component compiles in
//! the background; once compiled, the host reads the real `metadata` export
//! and refuses the component if the two differ, naming the field. The
//! revision is computed from the file's bytes, which include the section,
//! and from the definition, which is the same either way.
//!
//! The section is the tool author's, as untrusted as the rest of the file:
//! its size is capped at [`MAX_RECORDED_BYTES`] before it is parsed, and
//! every problem is a message, never a panic.

use crate::bindings::Contract;
use crate::metadata::{MAX_DESCRIPTION_BYTES, MAX_SCHEMA_BYTES};
use crate::sandbox::RawMetadata;
use serde::{Deserialize, Serialize};
use wasmparser::{BinaryReader, ComponentExportSectionReader};

/// The name of the custom section that holds the recorded metadata.
pub const SECTION: &str = "airlock-metadata";

/// Largest recorded-metadata section accepted: room for the largest
/// description and two of the largest schemas, each escaped as a JSON
/// string (at most twice as long), and the document around them.
pub const MAX_RECORDED_BYTES: usize = 2 * (MAX_DESCRIPTION_BYTES + 2 * MAX_SCHEMA_BYTES) + 4096;

/// The custom section's id in a component (and a module).
const CUSTOM: u8 = 0;
/// The export section's id in a component.
const COMPONENT_EXPORT: u8 = 11;

/// The section's JSON document: the fields of the `metadata` export's
/// record, the schemas as the JSON text the export returns.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    name: String,
    description: String,
    parameters: String,
    #[serde(default)]
    output: Option<String>,
}

/// Metadata recorded in a component, and the contract its exports name.
pub(crate) struct Recorded {
    /// What the section says the `metadata` export returns (unchecked).
    pub(crate) raw: RawMetadata,
    /// The newest contract whose interfaces the component exports, by
    /// name; `None` when it exports none completely (the compiler then says
    /// what is missing).
    pub(crate) contract: Option<Contract>,
}

/// One top-level section of a component: its id, where it begins (its id
/// byte) and ends, and its contents.
struct Section<'a> {
    id: u8,
    start: usize,
    end: usize,
    contents: &'a [u8],
}

/// The top-level sections of a component whose header was checked
/// (`check_header`): nested modules and components are inside their
/// sections and not walked.
fn sections(bytes: &[u8]) -> Result<Vec<Section<'_>>, String> {
    let body = bytes.get(8..).ok_or("the file ends inside its header")?;
    let mut reader = BinaryReader::new(body, 8);
    let mut found = Vec::new();
    while !reader.eof() {
        let start = reader.original_position();
        let (id, contents) =
            read_section(&mut reader).map_err(|err| format!("the component's sections are malformed: {err}"))?;
        found.push(Section { id, start, end: reader.original_position(), contents });
    }
    Ok(found)
}

/// One section's id and contents.
fn read_section<'a>(reader: &mut BinaryReader<'a>) -> wasmparser::Result<(u8, &'a [u8])> {
    let id = reader.read_u8()?;
    let size = reader.read_var_u32()?;
    Ok((id, reader.read_bytes(size as usize)?))
}

/// The name and payload of a custom section.
fn custom(contents: &[u8], offset: usize) -> Result<(&str, &[u8]), String> {
    let mut reader = BinaryReader::new(contents, offset);
    let name = reader.read_string().map_err(|err| format!("a custom section's name is malformed: {err}"))?;
    let rest = reader.bytes_remaining();
    let payload = reader.read_bytes(rest).map_err(|err| format!("a custom section is malformed: {err}"))?;
    Ok((name, payload))
}

/// The metadata recorded in `bytes` (a component whose header was
/// checked), if it carries the section.
///
/// # Errors
///
/// The section is malformed, repeated, larger than [`MAX_RECORDED_BYTES`],
/// or not the JSON document `airlock tool stamp` writes. Its contents are
/// checked later, as the `metadata` export's would be.
pub(crate) fn find(bytes: &[u8]) -> Result<Option<Recorded>, String> {
    let mut payload = None;
    let mut exports = Vec::new();
    for section in sections(bytes)? {
        match section.id {
            CUSTOM => {
                let (name, contents) = custom(section.contents, section.start)?;
                if name != SECTION {
                    continue;
                }
                if payload.is_some() {
                    return Err(format!(
                        "the component carries more than one {SECTION:?} section; stamp it again (airlock tool stamp)"
                    ));
                }
                payload = Some(contents);
            }
            COMPONENT_EXPORT => exports.extend(export_names(section.contents, section.start)),
            _ => {}
        }
    }
    let Some(payload) = payload else { return Ok(None) };
    if payload.len() > MAX_RECORDED_BYTES {
        return Err(format!(
            "its {SECTION:?} section is {} bytes; at most {MAX_RECORDED_BYTES} are accepted",
            payload.len()
        ));
    }
    let document: Document = serde_json::from_slice(payload).map_err(|err| {
        format!(
            "its {SECTION:?} section is not the JSON document airlock tool stamp writes (an object with the string \
             fields name, description, parameters and, optionally, output): {err}"
        )
    })?;
    let contract = Contract::ALL.into_iter().find(|contract| {
        ["airlock:tool/metadata", "airlock:tool/handler"]
            .iter()
            .all(|interface| exports.contains(&format!("{interface}@{}", contract.version())))
    });
    let Document { name, description, parameters, output } = document;
    Ok(Some(Recorded { raw: RawMetadata { name, description, parameters, output }, contract }))
}

/// The names a component export section exports; a malformed one names
/// none (the compiler refuses it with the reason).
fn export_names(contents: &[u8], offset: usize) -> Vec<String> {
    let Ok(reader) = ComponentExportSectionReader::new(BinaryReader::new(contents, offset)) else {
        return Vec::new();
    };
    reader.into_iter().map_while(Result::ok).map(|export| export.name.name.to_owned()).collect()
}

/// `bytes` (a component whose header was checked) with `raw` recorded in
/// it: any section of that name removed, one appended at the end.
///
/// # Errors
///
/// The component's sections are malformed, or the document would be over
/// [`MAX_RECORDED_BYTES`].
pub fn stamp(bytes: &[u8], raw: &RawMetadata) -> Result<Vec<u8>, String> {
    let document = Document {
        name: raw.name.clone(),
        description: raw.description.clone(),
        parameters: raw.parameters.clone(),
        output: raw.output.clone(),
    };
    let payload = serde_json::to_vec(&document).map_err(|err| format!("the metadata cannot be written: {err}"))?;
    if payload.len() > MAX_RECORDED_BYTES {
        return Err(format!(
            "the metadata is {} bytes as JSON; at most {MAX_RECORDED_BYTES} are accepted",
            payload.len()
        ));
    }
    let mut out = bytes.get(..8).ok_or("the file ends inside its header")?.to_vec();
    for section in sections(bytes)? {
        let ours = section.id == CUSTOM && custom(section.contents, section.start)?.0 == SECTION;
        if !ours {
            out.extend_from_slice(bytes.get(section.start..section.end).ok_or("a section ends past the file")?);
        }
    }
    let section = wasm_encoder::CustomSection { name: SECTION.into(), data: payload.into() };
    out.push(wasm_encoder::Section::id(&section));
    wasm_encoder::Encode::encode(&section, &mut out);
    Ok(out)
}

/// Whether the metadata a compiled component returns is the one recorded
/// in it.
///
/// # Errors
///
/// Which fields differ, and how to record the right metadata.
pub(crate) fn compare(recorded: &RawMetadata, returned: &RawMetadata) -> Result<(), String> {
    let differ: Vec<&str> = [
        ("name", recorded.name == returned.name),
        ("description", recorded.description == returned.description),
        ("parameters", recorded.parameters == returned.parameters),
        ("output", recorded.output == returned.output),
    ]
    .into_iter()
    .filter_map(|(field, same)| (!same).then_some(field))
    .collect();
    if differ.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the metadata recorded in its {SECTION:?} section does not match what its metadata export returns (the {} \
         differ{}); record it again with `airlock tool stamp FILE` after building the component",
        differ.join(", "),
        if differ.len() == 1 { "s" } else { "" }
    ))
}

#[cfg(test)]
mod tests;
