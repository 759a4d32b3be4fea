//! Parse: the arguments as proposed (a JSON value, or text that should be
//! one) become a JSON object within the host's caps
//! (`airlock_core::arguments`: size, depth, exact integers). A `null` for
//! an optional property means "absent": strict mode makes every property
//! required and the optional ones nullable, so such nulls are dropped
//! before the schema sees them. The deprecated name of the session
//! argument (`session`) becomes `session_id` here, before validation
//! (`session::rename_deprecated`).

use super::{Call, Pipeline, Stop};
use crate::session;
use airlock_core::arguments::{self, Parsed, RawArguments};
use airlock_core::optional_null;
use airlock_core::outcome::Failure;
use airlock_core::timeline::Stage;
use airlock_runtime::loader::LoadedTool;

impl Pipeline {
    /// Parse the arguments the call proposes for its tool.
    pub(super) fn parse(&self, call: &mut Call<'_>) -> Result<(), Stop> {
        let tool = call.tool()?;
        let parsed = parse_arguments(&tool, &call.request.arguments);
        call.timeline.lap(Stage::Parse);
        call.arguments = parsed.map_err(Stop::not_reached)?;
        Ok(())
    }
}

/// The arguments of a call to `tool`, parsed.
///
/// # Errors
///
/// An [`ErrorKind::InvalidArguments`](airlock_core::outcome::ErrorKind)
/// failure saying what was wrong with them.
fn parse_arguments(tool: &LoadedTool, raw: &RawArguments) -> Result<Parsed, Failure> {
    let mut parsed = arguments::parse(raw)?;
    session::rename_deprecated(tool, &mut parsed)?;
    optional_null::drop_absent_nulls(tool.parameters.json(), &mut parsed);
    Ok(parsed)
}
