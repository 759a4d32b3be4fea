//! `[cards]` read through a whole config.

use airlock_policy::card::CardSettings;

#[test]
fn card_caps_are_ranged() {
    use crate::config::testing::{check_err, parse};
    let config = parse("[cards]\nmax_card_bytes = 64\nmax_presented_bytes = 8192\nmax_value_bytes = 16").unwrap();
    assert_eq!(config.cards, CardSettings { max_card_bytes: 64, max_presented_bytes: 8192, max_value_bytes: 16 });
    assert_eq!(parse("").unwrap().cards, CardSettings::default());
    for (key, below, top) in
        [("max_card_bytes", 63, 65_536), ("max_presented_bytes", 63, 8192), ("max_value_bytes", 15, 8192)]
    {
        for value in [below, top + 1] {
            check_err(
                &format!("[cards]\n{key} = {value}"),
                &[&format!("[cards] {key} = {value} is out of range: accepted {}..={top}", below + 1)],
            );
        }
    }
    check_err("[cards]\nbogus = 1", &["bogus", "max_card_bytes"]);
}
