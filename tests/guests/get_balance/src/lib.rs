//! Test fixture for the bank scenario: `get_balance(account_id)` returns a
//! fixed balance. Which accounts a principal may read is decided by the
//! host's policy, never by this tool.

use airlock_guest::{ToolError, export_tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `get_balance`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// The account to read, e.g. `acc-alice`.
    account_id: String,
}

/// A balance.
#[derive(Serialize, JsonSchema)]
struct Balance {
    /// The account.
    account_id: String,
    /// Balance in cents.
    balance_cents: u64,
}

fn get_balance(args: Args) -> Result<Balance, ToolError> {
    Ok(Balance { balance_cents: 12_345 + args.account_id.len() as u64, account_id: args.account_id })
}

export_tool!(name: "get_balance", description: "Returns the balance of one bank account.", handler: get_balance);
