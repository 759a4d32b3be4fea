//! The WebAssembly OCI artifact layout (CNCF TAG Runtime's "Wasm OCI
//! Artifact", as `wkg`/wasm-pkg-tools write it): an OCI image manifest whose
//! config has media type `application/vnd.wasm.config.v0+json` and whose one
//! layer, `application/wasm`, is the component's bytes.
//!
//! A manifest from a registry is untrusted: it is parsed only after its size
//! was capped and its digest checked, and it only ever yields a layer digest
//! and size, which are checked again when the layer is read.

use super::error::{Capped, DistributionError, ManifestProblem};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The OCI image manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The Wasm artifact's config media type.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The Wasm artifact's layer media type.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// Layer media types of older Wasm-to-OCI tools, accepted when pulling.
const LEGACY_WASM_LAYER_MEDIA_TYPES: &[&str] = &["application/vnd.wasm.content.layer.v1+wasm"];

/// A content descriptor.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// What the blob is.
    pub media_type: String,
    /// `sha256:HEX` of the blob.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Annotations (a cosign signature is one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// An OCI image manifest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// The manifest's own media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl Manifest {
    /// Parse manifest bytes (already capped and checked against their
    /// digest) with at most `max_layers` layers.
    ///
    /// # Errors
    ///
    /// Not an OCI image manifest, or more than `max_layers` layers (naming
    /// the key that raises it).
    pub fn parse(bytes: &[u8], what: &str, max_layers: usize) -> Result<Manifest, DistributionError> {
        let bad = |problem| DistributionError::BadManifest { subject: what.to_owned(), problem };
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|err| bad(ManifestProblem::NotAManifest(err.to_string())))?;
        if manifest.schema_version != 2 {
            return Err(bad(ManifestProblem::SchemaVersion(manifest.schema_version)));
        }
        if manifest.layers.len() > max_layers {
            return Err(DistributionError::OverCap {
                subject: what.to_owned(),
                what: Capped::Layers,
                size: manifest.layers.len() as u64,
                cap: max_layers as u64,
            });
        }
        for descriptor in std::iter::once(&manifest.config).chain(&manifest.layers) {
            super::reference::check_digest(&descriptor.digest).map_err(|d| bad(ManifestProblem::Digest(d)))?;
        }
        Ok(manifest)
    }

    /// The component layer: the one `application/wasm` layer.
    ///
    /// # Errors
    ///
    /// No such layer or more than one, naming the media types found.
    pub fn component_layer(&self, what: &str) -> Result<&Descriptor, DistributionError> {
        let wasm = |d: &&Descriptor| {
            d.media_type == WASM_LAYER_MEDIA_TYPE || LEGACY_WASM_LAYER_MEDIA_TYPES.contains(&d.media_type.as_str())
        };
        let mut found = self.layers.iter().filter(wasm);
        match (found.next(), found.next()) {
            (Some(layer), None) => Ok(layer),
            _ => Err(DistributionError::BadManifest {
                subject: what.to_owned(),
                problem: ManifestProblem::NotAComponent(self.layers.iter().map(|d| d.media_type.clone()).collect()),
            }),
        }
    }
}

/// The config blob of a component artifact as wasm-pkg-tools writes it.
pub fn wasm_config(layer_digest: &str) -> Vec<u8> {
    let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let config = serde_json::json!({
        "created": created,
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer_digest],
        "component": { "exports": [], "imports": [] },
    });
    serde_json::to_vec(&config).unwrap_or_default()
}

/// A manifest with one config and its layers, serialized.
pub fn build(config: Descriptor, layers: Vec<Descriptor>) -> Vec<u8> {
    let manifest = Manifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        config,
        layers,
        annotations: None,
    };
    serde_json::to_vec(&manifest).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(media_type: &str) -> Descriptor {
        Descriptor {
            media_type: media_type.into(),
            digest: format!("sha256:{}", "0".repeat(64)),
            size: 1,
            annotations: None,
        }
    }

    #[test]
    fn the_component_layer_is_the_one_wasm_layer() {
        let bytes = build(d(WASM_CONFIG_MEDIA_TYPE), vec![d(WASM_LAYER_MEDIA_TYPE)]);
        let manifest = Manifest::parse(&bytes, "m", 1).unwrap();
        assert_eq!(manifest.component_layer("m").unwrap().media_type, WASM_LAYER_MEDIA_TYPE);
        let bytes = build(d(WASM_CONFIG_MEDIA_TYPE), vec![d("application/vnd.oci.image.layer.v1.tar+gzip")]);
        let err = Manifest::parse(&bytes, "m", 1).unwrap().component_layer("m").unwrap_err().to_string();
        assert!(err.contains("exactly one application/wasm") && err.contains("tar+gzip"), "{err}");
        assert!(Manifest::parse(b"[]", "m", 1).unwrap_err().to_string().contains("not an OCI image manifest"));
    }

    #[test]
    fn a_manifest_of_exactly_max_layers_layers_parses_and_one_more_is_refused_by_key() {
        let layers = |n: usize| (0..n).map(|_| d(WASM_LAYER_MEDIA_TYPE)).collect::<Vec<_>>();
        let max = 5;
        let manifest = Manifest::parse(&build(d(WASM_CONFIG_MEDIA_TYPE), layers(max)), "m", max).unwrap();
        assert_eq!(manifest.layers.len(), max);
        let err = Manifest::parse(&build(d(WASM_CONFIG_MEDIA_TYPE), layers(max + 1)), "m", max).unwrap_err();
        assert!(matches!(err, DistributionError::OverCap { what: Capped::Layers, size: 6, cap: 5, .. }), "{err}");
        let err = err.to_string();
        assert!(err.contains("has 6 layers: at most 5") && err.contains("[distribution] max_layers"), "{err}");
    }
}
