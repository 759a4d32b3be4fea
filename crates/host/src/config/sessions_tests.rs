//! `[tools.NAME.sessions]` read through a whole config.

use crate::config::testing::{check_err, parse};
use airlock_runtime::tool_settings::*;
use std::time::Duration;

#[test]
fn sessions_are_off_unless_configured() {
    let config = parse(
        "[tools.a]\nmemory_mib = 64\n[tools.a.sessions]\nidle_secs = 9\n[tools.b]\n[tools.c.sessions]\nenabled = false\n",
    )
    .unwrap();
    let a = config.settings_for("a").sessions.unwrap();
    assert_eq!((a.max_live, a.idle, a.memory_bytes), (DEFAULT_MAX_LIVE, Duration::from_secs(9), 64 << 20));
    assert_eq!(config.settings_for("b").sessions, None);
    assert_eq!(config.settings_for("c").sessions, None);
    assert_eq!(config.settings_for("unknown").sessions, None);
}

#[test]
fn config_errors_name_the_tool_the_key_and_the_range() {
    check_err("[tools.echo.sessions]\nmax_live = 0", &["[tools.echo]", "sessions: max_live = 0", "accepted 1..="]);
    check_err("[tools.echo.sessions]\nidle_secs = 0", &["[tools.echo]", "idle_secs", "accepted"]);
    check_err("[tools.echo.sessions]\nmemory_mib = 0", &["memory_mib", "accepted"]);
    check_err("[tools.echo.sessions]\nttl = 5", &["ttl"]);
}
