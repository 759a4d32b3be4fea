//! Directory and environment grants read through a whole config.

use crate::config::testing::{check_err, parse};
use airlock_runtime::grants::*;

#[test]
fn grants_are_parsed_and_canonicalized() {
    let dir = std::env::temp_dir();
    let text =
        format!("[tools.rf]\ndirs = [{{ host = {:?}, guest = \"/data\" }}]\nenv = {{ LANG = \"C\" }}\n", dir.display());
    let config = parse(&text).unwrap();
    let grants = config.settings_for("rf").grants;
    assert_eq!(grants.dirs[0].access, DirAccess::ReadOnly, "directories are read-only unless rw");
    assert_eq!(grants.dirs[0].host_path, dir.canonicalize().unwrap());
    assert_eq!(grants.env, vec![EnvGrant { name: "LANG".into(), value: "C".into() }]);
}

#[test]
fn config_errors_name_the_grant_and_what_is_accepted() {
    check_err(
        "[tools.echo]\ndirs = [{ host = \".\", guest = \"/w\", access = \"rwx\" }]",
        &["[tools.echo]", "access", "\"ro\" or \"rw\""],
    );
    check_err("[tools.echo]\ndirs = [{ host = \".\", guest = \"w\" }]", &["guest", "absolute"]);
    check_err("[tools.echo]\ndirs = [{ host = \"/no/such/dir\", guest = \"/w\" }]", &["/no/such/dir"]);
    check_err("[tools.echo]\ndirs = [{ host = \"/\", guest = \"/w\" }]", &["root directory"]);
    check_err("[tools.echo]\nenv_from_host = [\"AIRLOCK_SURELY_UNSET_VAR\"]", &["AIRLOCK_SURELY_UNSET_VAR"]);
}
