//! `compute_sha256`: a CPU-bound benchmark fixture. It hashes `mib` MiB of
//! data it generates itself, so the cost is pure computation: no host
//! calls, no large arguments or results.
//!
//! `make bench` compares it under each combination of fuel and epoch
//! interruption with the same code compiled natively (see
//! [`sha256`]), and copies it under 20 distinct names for the start-up
//! measurement (the bench rewrites the name below, the only occurrence of its text
//! in the component).

// A fixed-size SHA-256 workload: its block indexing is bounded by the
// algorithm, and this guest only measures the host's overhead.
#![allow(clippy::indexing_slicing)]

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod sha256;

/// The most data one call hashes.
pub const MAX_MIB: u32 = 1024;

/// Arguments of the tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// How many MiB of generated data to hash (at most 1024).
    pub mib: u32,
}

/// Result of the tool.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Hashed {
    /// Lowercase hex SHA-256 of the generated data.
    pub sha256: String,
}

/// Hash the generated data.
pub fn compute(args: Args) -> Result<Hashed, ToolError> {
    if args.mib > MAX_MIB {
        return Err(ToolError::new(format!("mib is {}; at most {MAX_MIB} is accepted", args.mib)));
    }
    Ok(Hashed { sha256: sha256::hash_generated(args.mib) })
}

export_tool!(
    name: "compute_sha256",
    description: "Hashes the given number of MiB of generated data with SHA-256 (a CPU-bound benchmark fixture).",
    handler: compute,
);
