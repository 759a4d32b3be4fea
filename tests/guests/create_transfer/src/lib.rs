//! Test fixture for the bank scenario: `create_transfer(to, amount)`
//! pretends to move money and says so. Whether a transfer may run (and
//! whether it needs confirmation) is decided by the host's policy.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `create_transfer`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Destination account.
    to: String,
    /// Amount in whole currency units.
    amount: u64,
}

/// A completed transfer.
#[derive(Serialize, JsonSchema)]
struct Transfer {
    /// Destination account.
    to: String,
    /// Amount moved.
    amount: u64,
    /// Always `done`.
    status: String,
}

fn create_transfer(args: Args) -> Result<Transfer, ToolError> {
    Ok(Transfer { to: args.to, amount: args.amount, status: "done".into() })
}

export_tool!(name: "create_transfer", description: "Moves money to another account.", handler: create_transfer);
