//! The approval page's HTML: server-rendered, every value escaped; the
//! only script is Airlock's own `passkey.js` (the browser's half of the
//! WebAuthn ceremonies), loaded from the page's origin, never inline. The card and every other value were escaped for hidden
//! characters when the approval was opened (`airlock_policy::card`: bidi
//! controls, invisible characters, letters of a word that mixes scripts are
//! shown as `\u{…}`, with a warning); here each is HTML-escaped as well, so
//! nothing a model or a tool put in an argument can add markup, and the
//! page's own warning is repeated above the card when the card carries one.

use airlock_pipeline::Approver;
use airlock_pipeline::transport::approval::{Approval, Challenge};
use airlock_policy::card::HIDDEN_WARNING;
use std::fmt::Write as _;

/// The stylesheet, served at `/approvals/page.css` (the policy allows no
/// inline style).
pub(super) const STYLESHEET: &str = "\
body{font:16px/1.45 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}\
main{max-width:40rem;margin:2rem auto;background:#fff;border:1px solid #d9dce1;border-radius:8px;padding:1.5rem 2rem}\
h1{font-size:1.4rem;margin:0 0 1rem}\
.card{font:1.1rem/1.5 ui-monospace,monospace;white-space:pre-wrap;word-break:break-word;background:#fffbe6;\
border:2px solid #e6c200;border-radius:6px;padding:1rem;margin:0 0 1rem}\
.warning{background:#fdecea;border:1px solid #d93025;border-radius:6px;padding:.6rem 1rem;color:#a50e0e}\
dl{display:grid;grid-template-columns:max-content 1fr;gap:.3rem 1rem;margin:1rem 0}\
dt{color:#5f6368}dd{margin:0;word-break:break-all}\
form{display:flex;gap:1rem;margin-top:1.5rem}\
button{font-size:1.05rem;padding:.6rem 1.4rem;border-radius:6px;border:1px solid #888;cursor:pointer}\
button.approve{background:#137333;color:#fff;border-color:#137333}\
button.decline{background:#fff;color:#a50e0e;border-color:#a50e0e}\
.who{color:#5f6368;font-size:.9rem}\
.done{font-size:1.2rem}\
.passkey{color:#5f6368;font-size:.9rem;margin-top:1rem}";

/// The WebAuthn ceremonies' script, served at `/approvals/passkey.js`.
pub(super) const SCRIPT: &str = include_str!("passkey.js");

/// The tag that loads [`SCRIPT`] (the one script a page may run).
const SCRIPT_TAG: &str = "<script src=\"/approvals/passkey.js\"></script>";

/// Where the script says that no passkey answered.
const PASSKEY_NOTE: &str = "<p class=\"warning\" id=\"passkey-note\" hidden></p>";

/// `text` with `&`, `<`, `>`, `"` and `'` as character references.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A whole page around `body`.
pub(super) fn document(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"same-origin\">\
         <title>{} — Airlock</title><link rel=\"stylesheet\" href=\"/approvals/page.css\"></head>\
         <body><main>{body}</main></body></html>\n",
        escape(title)
    )
}

/// A page that only says something (a refusal, a result).
pub(super) fn notice(title: &str, text: &str) -> String {
    document(title, &format!("<h1>{}</h1><p class=\"done\" id=\"notice\">{}</p>", escape(title), escape(text)))
}

/// What the person is asked about, and the form that answers it.
pub(super) struct Ask<'a> {
    /// The approval.
    pub(super) approval: &'a Approval,
    /// Who is signed in (`None`: nobody signs in; the passkey says who).
    pub(super) person: Option<&'a str>,
    /// The link's MAC, repeated in the form.
    pub(super) sig: &'a str,
    /// The form's CSRF token, bound to the signed-in session.
    pub(super) csrf: Option<&'a str>,
    /// The passkey challenges that approve and decline, when a passkey
    /// must answer.
    pub(super) passkey: Option<(&'a Challenge, &'a Challenge)>,
    /// Minutes left before the approval lapses.
    pub(super) minutes_left: u64,
}

/// A hidden form field.
fn hidden(name: &str, value: &str) -> String {
    format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(name), escape(value))
}

/// A button that sends the form once a passkey answered `challenge`
/// (`data-get`), or, with `create`, once a new passkey was made.
fn passkey_button(
    id: &str,
    class: &str,
    value: &str,
    label: &str,
    get: Option<&Challenge>,
    create: Option<&str>,
) -> String {
    let mut data = String::new();
    if let Some(challenge) = get {
        let _ =
            write!(data, " data-get=\"{}\" data-state=\"{}\"", escape(&challenge.options), escape(&challenge.sealed));
    }
    if let Some(options) = create {
        let _ = write!(data, " data-create=\"{}\"", escape(options));
    }
    format!(
        "<button class=\"{class}\" id=\"{id}\" type=\"submit\" name=\"decision\" value=\"{value}\"{data}>{}</button>",
        escape(label)
    )
}

/// The approval page.
pub(super) fn ask(ask: &Ask<'_>) -> String {
    let a = ask.approval;
    let mut body = String::from("<h1>Approve this call?</h1>");
    if let Some(person) = ask.person {
        let _ = write!(body, "<p class=\"who\">Signed in as <b id=\"person\">{}</b>.</p>", escape(person));
    }
    if a.card.contains(HIDDEN_WARNING) {
        let _ = write!(
            body,
            "<p class=\"warning\" id=\"hidden-warning\">Some characters in this request are invisible, control \
             reading direction or imitate letters of another script. They are shown as \\u{{…}} codes below: read \
             them before you approve.</p>"
        );
    }
    let _ = write!(body, "<pre class=\"card\" id=\"card\">{}</pre>", escape(&a.card));
    let approver = match &a.approver {
        Approver::Caller => escape(&a.principal),
        other => escape(&other.describe(&a.principal)),
    };
    let _ = write!(
        body,
        "<dl><dt>Acts for</dt><dd id=\"principal\">{}</dd><dt>Tool</dt><dd id=\"tool\">{}</dd>\
         <dt>Tool revision</dt><dd id=\"revision\">{}</dd><dt>Why it asks</dt><dd id=\"reason\">{}</dd>\
         <dt>Who may approve</dt><dd id=\"approver\">{approver}</dd><dt>Lapses</dt><dd>in {} minute(s)</dd></dl>\
         <p>If you approve, <b>{}</b> runs <b>once</b>, with exactly what is shown above, for the revision of the \
         tool shown. If anything here is not what you expect, decline.</p>",
        escape(&a.principal),
        escape(&a.tool),
        escape(&a.revision),
        escape(&a.reason),
        ask.minutes_left,
        escape(&a.tool),
    );
    let _ = write!(body, "<form method=\"post\" action=\"/approvals/{}\">{}", escape(&a.id), hidden("sig", ask.sig));
    if let Some(csrf) = ask.csrf {
        body.push_str(&hidden("csrf", csrf));
    }
    match ask.passkey {
        Some((approve, decline)) => {
            for name in ["decision", "state", "credential"] {
                body.push_str(&hidden(name, ""));
            }
            body.push_str(&passkey_button("approve", "approve", "approve", "Approve", Some(approve), None));
            body.push_str(&passkey_button("decline", "decline", "decline", "Decline", Some(decline), None));
            body.push_str("</form>");
            body.push_str(PASSKEY_NOTE);
            body.push_str(
                "<p class=\"passkey\">Your passkey answers: your device asks for your fingerprint, face or PIN, \
                 and only then is your answer sent.</p>",
            );
            body.push_str(SCRIPT_TAG);
        }
        None => body.push_str(
            "<button class=\"approve\" id=\"approve\" type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>\
             <button class=\"decline\" id=\"decline\" type=\"submit\" name=\"decision\" value=\"decline\">Decline</button>\
             </form>",
        ),
    }
    document("Approve this call?", &body)
}

/// What a person sees to add a passkey.
pub(super) struct Enrol<'a> {
    /// Whose passkey it is.
    pub(super) principal: &'a str,
    /// Where the form is sent.
    pub(super) action: &'a str,
    /// The registration of the new passkey.
    pub(super) registration: &'a Challenge,
    /// The challenge one of their passkeys answers first, when they have
    /// one.
    pub(super) confirm: Option<&'a Challenge>,
    /// The form's CSRF token, bound to the signed-in session.
    pub(super) csrf: Option<&'a str>,
}

/// The page that adds a passkey.
pub(super) fn enrol(enrol: &Enrol<'_>) -> String {
    let mut body = format!(
        "<h1>Add a passkey</h1><p>For <b id=\"principal\">{}</b>: approvals of calls that act for them (or that \
         they are named to approve) are answered with it, on this page.</p>",
        escape(enrol.principal)
    );
    if enrol.confirm.is_some() {
        body.push_str(
            "<p class=\"warning\" id=\"confirm-first\">This person has a passkey already: one of them confirms \
             first, then the new one is made.</p>",
        );
    }
    let _ = write!(body, "<form method=\"post\" action=\"{}\">", escape(enrol.action));
    if let Some(csrf) = enrol.csrf {
        body.push_str(&hidden("csrf", csrf));
    }
    body.push_str(&hidden("registration_state", &enrol.registration.sealed));
    for name in ["decision", "state", "credential", "registration"] {
        body.push_str(&hidden(name, ""));
    }
    body.push_str(&passkey_button(
        "enrol",
        "approve",
        "enrol",
        "Add a passkey",
        enrol.confirm,
        Some(&enrol.registration.options),
    ));
    body.push_str("</form>");
    body.push_str(PASSKEY_NOTE);
    body.push_str(SCRIPT_TAG);
    document("Add a passkey", &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(card: &str) -> Approval {
        Approval {
            id: "0123456789abcdef0123456789abcdef".into(),
            principal: "alice<script>".into(),
            tool: "create_transfer".into(),
            revision: "sha256:r".into(),
            argument_digest: "sha256:a".into(),
            call_id: "c".into(),
            card: card.into(),
            reason: "transfers \"above\" 10,000".into(),
            approver: Approver::Caller,
            created_ms: 0,
            expires_ms: 1,
            answer: None,
            used: false,
        }
    }

    #[test]
    fn every_value_is_escaped_and_the_form_carries_its_tokens() {
        let a = approval("Transfer 20000 to <b>acc-bob</b> & 'co'");
        let html = ask(&Ask {
            approval: &a,
            person: Some("alice"),
            sig: "S\"x",
            csrf: Some("C"),
            passkey: None,
            minutes_left: 9,
        });
        assert!(html.contains("Transfer 20000 to &lt;b&gt;acc-bob&lt;/b&gt; &amp; &#39;co&#39;"), "{html}");
        assert!(html.contains("alice&lt;script&gt;") && !html.contains("<script"), "{html}");
        assert!(html.contains("name=\"sig\" value=\"S&quot;x\""), "{html}");
        assert!(html.contains("name=\"csrf\" value=\"C\""));
        assert!(html.contains("transfers &quot;above&quot; 10,000"));
        assert!(!html.contains("hidden-warning"));
        assert!(!html.contains("<script"), "no script without passkeys");
    }

    #[test]
    fn a_passkey_answers_each_choice_with_a_challenge_of_its_own() {
        let a = approval("card");
        let approve = Challenge { options: "{\"challenge\":\"A\"}".into(), sealed: "SA".into() };
        let decline = Challenge { options: "{\"challenge\":\"D\"}".into(), sealed: "SD".into() };
        let html = ask(&Ask {
            approval: &a,
            person: None,
            sig: "S",
            csrf: None,
            passkey: Some((&approve, &decline)),
            minutes_left: 1,
        });
        assert!(html.contains("id=\"approve\" type=\"submit\" name=\"decision\" value=\"approve\" data-get=\"{&quot;challenge&quot;:&quot;A&quot;}\" data-state=\"SA\""), "{html}");
        assert!(html.contains("data-state=\"SD\""), "{html}");
        assert!(html.contains("<script src=\"/approvals/passkey.js\"></script>"), "{html}");
        assert_eq!(html.matches("<script").count(), 1, "one script, from the page's origin: {html}");
    }

    #[test]
    fn a_card_with_hidden_characters_is_flagged_above_it() {
        let a = approval(&format!("Pay \\u{{0430}}cc-1234\n{HIDDEN_WARNING}"));
        let html = ask(&Ask { approval: &a, person: None, sig: "S", csrf: None, passkey: None, minutes_left: 1 });
        assert!(html.contains("id=\"hidden-warning\""), "{html}");
        assert!(html.contains("Pay \\u{0430}cc-1234"), "{html}");
    }
}
