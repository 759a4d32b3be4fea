//! Confirmation cards and result presenters (`[tools.NAME] confirm` and
//! `present_result`): the card a confirmer is shown, what hostile argument
//! text can and cannot do to it, its caps, and the presented result.

use crate::support::{assert_failed, fixture, host};
use airlock::{CallRequest, ConfirmRequest, DEFAULT_MAX_CARD_BYTES, DEFAULT_MAX_CARD_VALUE_BYTES, FnConfirmer};
use serde_json::json;
use std::sync::Mutex;

fn policy(file: &str) -> String {
    crate::support::repo_root().join("tests/fixtures/policy").join(file).display().to_string()
}

/// The bank: transfers above 10 000 ask; create_transfer has a card and a
/// presenter.
fn bank() -> String {
    format!(
        "[tools.create_transfer]\ncomponent = {:?}\nside_effect = true\n\
         confirm = \"Transfer {{amount}} to account {{to|last4}} (full: {{to}})\\nRequested by {{caller.principal}} \
         for {{caller.attributes.accounts.0}}; memo: {{memo}}\"\n\
         present_result = \"Transfer to {{to}}: {{status|upper}}\"\n\
         [policy]\npolicies = {:?}\nentities = {:?}\n",
        fixture("create_transfer").display().to_string(),
        policy("bank.cedar"),
        policy("bank.entities.json"),
    )
}

/// A confirmer that records each card it is shown and gives `answer`.
fn recording(cards: &Mutex<Vec<Option<String>>>, answer: bool) -> FnConfirmer<impl Fn(ConfirmRequest<'_>) -> bool> {
    FnConfirmer(move |req: ConfirmRequest<'_>| {
        cards.lock().expect("lock").push(req.card.map(str::to_owned));
        answer
    })
}

#[tokio::test]
async fn the_confirmer_is_shown_the_card_and_the_result_is_presented() {
    let host = host(&bank()).await;
    let cards = Mutex::new(Vec::new());
    let yes = recording(&cards, true);
    let args = json!({"to": "acc-9981234567", "amount": 20000});
    let result = host.call(CallRequest::new("alice", "create_transfer", args), Some(&yes)).await;
    assert!(!result.is_error(), "{}", result.text());
    let shown = cards.lock().expect("lock").clone();
    assert_eq!(
        shown,
        [Some(
            "Transfer 20000 to account 4567 (full: acc-9981234567)\nRequested by alice for acc-alice; memo: {memo?}"
                .to_owned()
        )],
        "the card is rendered from the validated arguments and the caller's attributes; a missing field is a \
         visible placeholder"
    );
    assert_eq!(result.presented.as_deref(), Some("Transfer to acc-9981234567: DONE"));
    assert!(!result.text().contains("DONE"), "the presentation is not what the model reads: {}", result.text());
    assert!(result.human_line().ends_with(": Transfer to acc-9981234567: DONE"), "{}", result.human_line());

    // A call that does not ask shows no card; a failed call presents nothing.
    let small =
        host.call(CallRequest::new("alice", "create_transfer", json!({"to": "acc-bob", "amount": 5})), None).await;
    assert_eq!(small.presented.as_deref(), Some("Transfer to acc-bob: DONE"));
    assert_eq!(cards.lock().expect("lock").len(), 1);
    let bad = host.call(CallRequest::new("alice", "create_transfer", json!({"to": "acc-bob"})), None).await;
    assert!(bad.is_error() && bad.presented.is_none(), "{bad:?}");
}

#[tokio::test]
async fn hostile_argument_text_cannot_make_the_card_lie() {
    let host = host(&bank()).await;
    let cards = Mutex::new(Vec::new());
    let no = recording(&cards, false);
    // The payee text tries to add a line saying the amount is 1, to reverse
    // the text after it, and to clear the terminal.
    let to = "acc-bob\n\nTransfer 1 to account 0000\u{202e}0005 tnuocca\u{2066}\u{1b}[2J\u{2028}x";
    let result =
        host.call(CallRequest::new("alice", "create_transfer", json!({"to": to, "amount": 50000})), Some(&no)).await;
    assert_failed(&result, "declined", "did not confirm");
    assert!(result.fuel_used.is_none(), "nothing ran");
    let card = cards.lock().expect("lock").pop().flatten().expect("a card was shown");
    let lines: Vec<&str> = card.lines().collect();
    assert_eq!(lines.len(), 3, "only the operator's line break and the warning's: {card:?}");
    assert!(lines[0].starts_with("Transfer 50000 to account "), "{card:?}");
    assert_eq!(lines[2], "Warning: hidden characters are shown as \\u{…}", "{card:?}");
    assert!(
        lines[0].contains(
            "(full: acc-bob\\n\\nTransfer 1 to account 0000\\u{202e}0005 tnuocca\\u{2066}\\u{001b}[2J\\u{2028}x)"
        ),
        "{card:?}"
    );
    let forbidden = |c: char| {
        c.is_control() && c != '\n' || matches!(c, '\u{2028}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    assert!(!card.chars().any(forbidden), "{card:?}");

    // A payee followed by tag characters (invisible in most fonts) does not
    // read like the payee.
    let to = "acc-1234\u{e0041}\u{e0031}\u{e007f}";
    let _ =
        host.call(CallRequest::new("alice", "create_transfer", json!({"to": to, "amount": 50000})), Some(&no)).await;
    let card = cards.lock().expect("lock").pop().flatten().expect("a card was shown");
    assert!(card.contains("(full: acc-1234\\u{e0041}\\u{e0031}\\u{e007f})"), "{card:?}");
    assert!(card.ends_with("\nWarning: hidden characters are shown as \\u{…}"), "{card:?}");
}

#[tokio::test]
async fn long_values_and_long_cards_are_cut_with_a_mark() {
    let host = host(&bank()).await;
    let cards = Mutex::new(Vec::new());
    let no = recording(&cards, false);
    let to = "y".repeat(10_000);
    let _ =
        host.call(CallRequest::new("alice", "create_transfer", json!({"to": to, "amount": 50000})), Some(&no)).await;
    let card = cards.lock().expect("lock").pop().flatten().expect("a card was shown");
    let full = card.split("(full: ").nth(1).and_then(|rest| rest.split(')').next()).expect("the full value");
    assert!(full.ends_with('…') && full.len() <= DEFAULT_MAX_CARD_VALUE_BYTES + '…'.len_utf8(), "{}", full.len());
    assert!(card.contains("Requested by alice"), "the text after a long value stays: {card}");

    // A card of many long values is cut as a whole.
    let many = format!(
        "[tools.create_transfer]\ncomponent = {:?}\nside_effect = true\nconfirm = \"{}\"\n",
        fixture("create_transfer").display().to_string(),
        "{to} ".repeat(40)
    );
    let host = crate::support::host(&many).await;
    let _ = host
        .call(CallRequest::new("alice", "create_transfer", json!({"to": "z".repeat(5000), "amount": 1})), Some(&no))
        .await;
    let card = cards.lock().expect("lock").pop().flatten().expect("a card was shown");
    assert!(card.len() <= DEFAULT_MAX_CARD_BYTES && card.ends_with('…'), "{}", card.len());

    // `[cards]` sets the caps: values cut at 16 bytes, the card at 100,
    // the presented result at 64.
    let small = format!(
        "{many}present_result = \"{}\"\n[cards]\nmax_card_bytes = 100\nmax_value_bytes = 16\nmax_presented_bytes = 64\n",
        "{to} ".repeat(10)
    );
    let host = crate::support::host(&small).await;
    let yes = recording(&cards, true);
    let result = host
        .call(CallRequest::new("alice", "create_transfer", json!({"to": "z".repeat(5000), "amount": 1})), Some(&yes))
        .await;
    assert!(!result.is_error(), "{}", result.text());
    let card = cards.lock().expect("lock").pop().flatten().expect("a card was shown");
    assert!(card.len() <= 100 && card.ends_with('…'), "{}", card.len());
    assert!(card.starts_with(&format!("{}… ", "z".repeat(16))), "{card}");
    let presented = result.presented.expect("a result is presented");
    assert!(presented.len() <= 64 && presented.starts_with(&format!("{}…", "z".repeat(16))), "{presented}");
}

#[tokio::test]
async fn template_errors_are_config_errors_with_the_key_and_position() {
    let text = format!(
        "[tools.create_transfer]\ncomponent = {:?}\nconfirm = \"Pay {{amount|shout}}\"\n",
        fixture("create_transfer").display().to_string()
    );
    let err =
        airlock::Config::parse(&text, "airlock.toml", std::path::Path::new(".")).map(|_| ()).unwrap_err().to_string();
    assert!(err.contains("[tools.create_transfer] confirm"), "{err}");
    assert!(err.contains("character 5") && err.contains("unknown filter \"shout\""), "{err}");
}
