//! Test fixture for the bank scenario: `get_balance(account_id)` returns a
//! fixed balance of one of the caller's accounts. The host's policy decides
//! first which accounts a principal may read; the tool checks again from
//! what the host says about the caller (contract 0.2.0: the `accounts`
//! attribute of the principal in the operator's entities file), never from
//! an argument, so a permissive policy still cannot hand out another
//! customer's balance.

use airlock_guest::{Caller, ToolError, export_tool};
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
    /// Who it was read for.
    owner: String,
    /// Balance in cents.
    balance_cents: u64,
}

fn get_balance(args: Args, caller: Caller) -> Result<Balance, ToolError> {
    if !caller.strings("accounts").any(|own| own == args.account_id) {
        return Err(ToolError::with_code(
            "not_your_account",
            format!(
                "account {:?} is not one of {:?}'s accounts; ask for the balance of an account the user holds",
                args.account_id, caller.principal
            ),
        ));
    }
    Ok(Balance {
        balance_cents: 12_345 + args.account_id.len() as u64,
        account_id: args.account_id,
        owner: caller.principal,
    })
}

export_tool!(name: "get_balance", description: "Returns the balance of one of the caller's bank accounts.", handler: get_balance);
