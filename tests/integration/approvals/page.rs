//! What a person's browser does at the approval page, for the tests: read
//! the form, run the page script's ceremonies with a soft passkey
//! (`softkey.rs`) and post what the script posts; and what an MCP client
//! without a passkey can post at best (everything the form holds).

use crate::service::{Reply, binary, fetch};
use crate::softkey::SoftKey;
use serde_json::Value;
use std::path::Path;

/// `text` with the page's character references undone.
fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"").replace("&#39;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// The value of attribute `name` in `tag`.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let marker = format!(" {name}=\"");
    let start = tag.find(&marker)? + marker.len();
    Some(unescape(tag[start..].split('"').next()?))
}

/// Every `<input>` of the page's form: (name, value).
pub(crate) fn fields(html: &str) -> Vec<(String, String)> {
    html.split("<input ")
        .skip(1)
        .filter_map(|rest| rest.split('>').next())
        .filter_map(|tag| Some((attribute(tag, "name")?, attribute(tag, "value").unwrap_or_default())))
        .collect()
}

/// The `<button>` tag with id `id`.
pub(crate) fn button(html: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\"");
    let at = html.find(&marker).unwrap_or_else(|| panic!("no button {id} in {html}"));
    let start = html[..at].rfind("<button").expect("a button");
    html[start..].split('>').next().unwrap_or_default().to_owned()
}

/// `fields` as a form body.
pub(crate) fn body(fields: &[(String, String)]) -> String {
    let encode = |text: &str| {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => (b as char).to_string(),
                b' ' => "+".to_owned(),
                b => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}

fn set(fields: &mut Vec<(String, String)>, name: &str, value: &str) {
    fields.retain(|(k, _)| k != name);
    fields.push((name.to_owned(), value.to_owned()));
}

/// The origin of `link`.
pub(crate) fn origin(link: &str) -> String {
    let rest = link.strip_prefix("http://").expect("an http link");
    format!("http://{}", rest.split('/').next().unwrap_or_default())
}

/// The form the page's script posts when `decision` is pressed and `key`
/// answers its challenge; without a key, what a client that fetched the
/// page can post: every field, and the challenge's state, but no
/// assertion.
pub(crate) fn answer_form(html: &str, decision: &str, key: Option<&mut SoftKey>, origin: &str) -> String {
    let mut form = fields(html);
    let tag = button(html, decision);
    set(&mut form, "decision", decision);
    set(&mut form, "state", &attribute(&tag, "data-state").unwrap_or_default());
    if let (Some(key), Some(options)) = (key, attribute(&tag, "data-get")) {
        let options: Value = serde_json::from_str(&options).expect("options");
        set(&mut form, "credential", &key.get(&options, origin));
    }
    body(&form)
}

/// Post `form` to `link`'s approval, from the page's origin.
pub(crate) fn post(link: &str, form: &str) -> Reply {
    let action = link.split('?').next().unwrap_or_default();
    let origin = origin(link);
    let headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", origin.as_str())];
    fetch(action, "POST", &headers, form)
}

/// Open `link`, press `decision` and answer with `key`.
pub(crate) fn answer(link: &str, decision: &str, key: &mut SoftKey) -> Reply {
    let page = fetch(link, "GET", &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    post(link, &answer_form(&page.body, decision, Some(key), &origin(link)))
}

/// The link `airlock approvals enroll PRINCIPAL` prints with `config`.
pub(crate) fn enrolment_link(config: &Path, base: &str, principal: &str) -> String {
    let out = std::process::Command::new(binary())
        .arg("--config")
        .arg(config)
        .args(["approvals", "enroll", principal, "--url", base])
        .env_remove("AIRLOCK_CONFIG")
        .output()
        .expect("airlock approvals enroll");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    text.split_whitespace().find(|w| w.contains("/approvals/enroll/")).expect("a link").to_owned()
}

/// Add a passkey through the enrolment `link`, confirmed by `confirm` when
/// the page asks for an existing one: the new passkey, and the reply.
pub(crate) fn enrol_at(link: &str, confirm: Option<&mut SoftKey>) -> (SoftKey, Reply) {
    let page = fetch(link, "GET", &[], "");
    assert_eq!(page.status, 200, "{}", page.body);
    let origin = origin(link);
    let tag = button(&page.body, "enrol");
    let mut form = fields(&page.body);
    if let (Some(key), Some(options)) = (confirm, attribute(&tag, "data-get")) {
        let options: Value = serde_json::from_str(&options).expect("options");
        set(&mut form, "state", &attribute(&tag, "data-state").unwrap_or_default());
        set(&mut form, "credential", &key.get(&options, &origin));
    }
    let create: Value = serde_json::from_str(&attribute(&tag, "data-create").expect("data-create")).expect("options");
    let (key, credential) = SoftKey::create(&create, &origin);
    set(&mut form, "registration", &credential);
    let headers = [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", origin.as_str())];
    let reply = fetch(link, "POST", &headers, &body(&form));
    (key, reply)
}

/// Enrol `principal`'s first passkey, as the operator and the person do.
pub(crate) fn enrol(config: &Path, base: &str, principal: &str) -> SoftKey {
    let (key, reply) = enrol_at(&enrolment_link(config, base, principal), None);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(reply.body.contains("Passkey added"), "{}", reply.body);
    key
}
