//! `[tools.NAME]` read through a whole config.

use crate::config::testing::{check_err, parse};
use std::path::Path;

#[test]
fn config_errors_name_the_tool_the_key_and_what_is_accepted() {
    check_err("[tools.echo]\ntimeout = 5", &["airlock.toml", "timeout"]);
    check_err("[tools.\"bad name\"]", &["bad name", "^[A-Za-z0-9_-]"]);
    check_err("[tools.echo]\nsha256 = \"abc\"", &["[tools.echo]", "sha256", "64 hex"]);
    check_err(
        "[tools.echo]\nmax_open_files = 1\ndirs = [{ host = \".\", guest = \"/w\" }]",
        &["max_open_files = 1", "granted directories", "accepted 2..="],
    );
    check_err("[tools.echo]\ndirs = 5", &["line 2", "dirs = 5", "expected a sequence"]);
    check_err(
        "[tools.echo]\nconfirm = \"Pay {amount\"",
        &["[tools.echo] confirm = \"Pay {amount\"", "character 5", "not closed"],
    );
    check_err(
        "[tools.echo]\npresent_result = \"{id|shout}\"",
        &["[tools.echo] present_result", "unknown filter \"shout\"", "accepted are last4"],
    );
    check_err("[tools.echo]\npresent_result = \"a\\nb\"", &["present_result", "line break at character 2"]);
}

#[test]
fn a_pin_is_kept_in_lowercase_and_tools_have_side_effects_unless_told() {
    let pin = "AB".repeat(32);
    let config = parse(&format!("[tools.echo]\nsha256 = \"{pin}\"\ncomponent = \"echo.wasm\"")).unwrap();
    let echo = &config.tools["echo"];
    assert_eq!(echo.settings.sha256.as_deref(), Some("ab".repeat(32).as_str()));
    assert_eq!(echo.component.as_deref(), Some(Path::new("./echo.wasm")));
    assert!(echo.settings.side_effect);
}
