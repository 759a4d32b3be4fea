use super::*;
use std::collections::VecDeque;

/// Answers from a script and records what was sent.
#[derive(Default)]
struct Fake {
    answers: VecDeque<Result<Response, TransportError>>,
    sent: Vec<Request>,
}

impl Transport for Fake {
    fn send(&mut self, request: &Request) -> Result<Response, TransportError> {
        self.sent.push(request.clone());
        self.answers.pop_front().unwrap_or(Err(TransportError::Failed("no more answers".into())))
    }
}

fn fake(answers: Vec<Result<Response, TransportError>>) -> Fake {
    Fake { answers: answers.into(), sent: Vec::new() }
}

fn ok(status: u16, headers: &[(&str, &str)], body: &str) -> Result<Response, TransportError> {
    Ok(Response {
        status,
        headers: headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect(),
        body: body.as_bytes().to_vec(),
        cut: None,
    })
}

fn args(json: &str) -> Args {
    serde_json::from_str(json).unwrap()
}

#[test]
fn get_returns_status_selected_headers_and_body() {
    let mut t = fake(vec![ok(200, &[("content-type", "text/plain"), ("set-cookie", "a=b")], "hello")]);
    let out = fetch(args(r#"{"url":"https://example.com/a?b=1"}"#), &mut t).unwrap();
    assert_eq!(out.status, 200);
    assert_eq!(out.body, "hello");
    assert_eq!(out.headers.get("content-type").map(String::as_str), Some("text/plain"));
    assert!(!out.headers.contains_key("set-cookie"), "only selected headers are shown");
    assert!(!out.truncated && out.note.is_none());
    assert_eq!(t.sent[0].method, Method::GET);
    assert_eq!(t.sent[0].max_body, DEFAULT_MAX_BYTES as usize);
}

#[test]
fn redirects_are_followed_each_as_a_new_request() {
    let mut t = fake(vec![
        ok(302, &[("location", "/next")], ""),
        ok(301, &[("location", "https://other.example/final")], ""),
        ok(200, &[], "done"),
    ]);
    let out = fetch(args(r#"{"url":"https://example.com/start","method":"POST","body":"x"}"#), &mut t).unwrap();
    assert_eq!(out.url, "https://other.example/final");
    assert_eq!(out.redirects, ["https://example.com/next", "https://other.example/final"]);
    assert_eq!(t.sent.len(), 3);
    assert_eq!(t.sent[0].headers, [("content-length".to_owned(), "1".to_owned())], "a body has its length");
    assert_eq!(t.sent[1].method, Method::GET, "302 turns POST into GET");
    assert_eq!(t.sent[1].body, None);
    assert!(t.sent[1].headers.is_empty(), "the length goes with the body");
}

#[test]
fn a_refused_redirect_names_the_origin_and_the_hops() {
    let mut t = fake(vec![
        ok(307, &[("location", "http://127.0.0.1:9/secret")], ""),
        Err(TransportError::Refused("http://127.0.0.1:9 was refused: not granted".into())),
    ]);
    let err = fetch(args(r#"{"url":"https://example.com/"}"#), &mut t).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("network_refused"));
    assert!(err.message.contains("http://127.0.0.1:9"), "{}", err.message);
    assert!(err.message.contains("after redirects"), "{}", err.message);
}

#[test]
fn redirect_loops_stop() {
    let answers = (0..=MAX_REDIRECTS).map(|_| ok(302, &[("location", "/again")], "")).collect();
    let mut t = fake(answers);
    let err = fetch(args(r#"{"url":"https://example.com/"}"#), &mut t).unwrap_err();
    assert_eq!(err.code.as_deref(), Some("too_many_redirects"));
    assert_eq!(t.sent.len(), MAX_REDIRECTS + 1);
}

#[test]
fn redirects_can_be_turned_off() {
    let mut t = fake(vec![ok(302, &[("location", "/next")], "")]);
    let out = fetch(args(r#"{"url":"https://example.com/","follow_redirects":false}"#), &mut t).unwrap();
    assert_eq!(out.status, 302);
    assert_eq!(out.headers.get("location").map(String::as_str), Some("/next"));
}

#[test]
fn a_cut_body_has_a_note_and_no_partial_character() {
    let mut body = "é".repeat(3).into_bytes();
    body.pop();
    let mut t = fake(vec![Ok(Response { status: 200, headers: vec![], body, cut: Some("max_bytes is 5".into()) })]);
    let out = fetch(args(r#"{"url":"http://example.com/","max_bytes":5}"#), &mut t).unwrap();
    assert!(out.truncated);
    assert_eq!(out.body, "éé");
    assert!(out.note.unwrap().contains("max_bytes is 5"));
}

#[test]
fn binary_bodies_are_replaced_with_a_note() {
    let mut t = fake(vec![Ok(Response { status: 200, headers: vec![], body: vec![0xff, b'a'], cut: None })]);
    let out = fetch(args(r#"{"url":"http://example.com/"}"#), &mut t).unwrap();
    assert_eq!(out.body, "\u{fffd}a");
    assert!(out.note.unwrap().contains("not valid UTF-8"));
}

#[test]
fn bad_arguments_are_refused_before_any_request() {
    for (json, code, says) in [
        (r#"{"url":"example.com"}"#, "invalid_url", "absolute http://"),
        (r#"{"url":"ftp://example.com/"}"#, "invalid_url", "not http or https"),
        (r#"{"url":"https://user:pw@example.com/"}"#, "invalid_url", "user name"),
        (r#"{"url":"https://example.com/","max_bytes":0}"#, "invalid_argument", "1..=1048576"),
        (r#"{"url":"https://example.com/","body":"x"}"#, "invalid_argument", "use method POST"),
    ] {
        let mut t = fake(vec![]);
        let err = fetch(args(json), &mut t).unwrap_err();
        assert_eq!(err.code.as_deref(), Some(code), "{json}");
        assert!(err.message.contains(says), "{json}: {}", err.message);
        assert!(t.sent.is_empty());
    }
}

#[test]
fn schema_is_written_for_a_model() {
    let schema = airlock_guest::schema::parameters::<Args>();
    let props = schema["properties"].as_object().unwrap();
    for key in ["url", "method", "headers", "body", "max_bytes", "follow_redirects"] {
        assert!(props[key]["description"].is_string() || key == "method", "{key} has no description");
    }
    assert_eq!(schema["required"], serde_json::json!(["url"]));
    // The method is written in place; every optional member accepts null
    // and carries no `default`.
    assert!(schema.get("$defs").is_none(), "{schema:#}");
    assert_eq!(props["method"]["enum"], serde_json::json!(["GET", "POST", null]));
    for (key, kind) in
        [("method", "string"), ("headers", "object"), ("follow_redirects", "boolean"), ("body", "string")]
    {
        assert_eq!(props[key]["type"], serde_json::json!([kind, "null"]), "{key}");
        assert!(props[key].get("default").is_none(), "{key}");
    }
}

#[test]
fn output_schema_requires_only_what_is_always_there() {
    let schema = airlock_guest::schema::output::<Fetched>();
    let required: Vec<&str> = schema["required"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert!(!required.contains(&"redirects") && !required.contains(&"note"), "{required:?}");
}
