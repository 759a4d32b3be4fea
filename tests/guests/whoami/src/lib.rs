//! Test fixture for caller identity (contract 0.2.0): `whoami` returns what
//! the host says about the caller, unchanged. Its `principal` argument is a
//! decoy a model could fill in: the tool echoes it separately, so a test can
//! show it changes nothing the host reports.

use airlock_guest::{Caller, ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Arguments of `whoami`.
#[derive(Deserialize, JsonSchema)]
struct Args {
    /// Who the model claims to be; never used as the caller.
    #[serde(default)]
    principal: Option<String>,
}

/// The caller as the host reported it.
#[derive(Serialize, JsonSchema)]
struct Whoami {
    principal: String,
    attributes: BTreeMap<String, serde_json::Value>,
    parents: Vec<(String, String)>,
    call_id: String,
    session_id: Option<String>,
    claimed: Option<String>,
}

fn whoami(args: Args, caller: Caller) -> Result<Whoami, ToolError> {
    Ok(Whoami {
        principal: caller.principal,
        attributes: caller.attributes,
        parents: caller.parents,
        call_id: caller.call_id,
        session_id: caller.session_id,
        claimed: args.principal,
    })
}

export_tool!(name: "whoami", description: "Says who the host says the caller is.", handler: whoami);
