//! `[metrics]`, `[traces]`, `[serve]` and `[log]`: what is accepted, what
//! is refused and how the error says it, and the generated documents.

use super::*;
use serde::Deserialize;

/// A file with only the service sections.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    metrics: RawMetrics,
    #[serde(default)]
    traces: RawTraces,
    #[serde(default)]
    serve: RawServe,
    #[serde(default)]
    log: RawLog,
}

/// The service sections of one file, checked.
struct Service {
    metrics: MetricsSettings,
    traces: Option<TraceSettings>,
    serve: ServeSettings,
    log: LogSettings,
}

fn parse(text: &str) -> Result<Service, String> {
    let file: File = toml::from_str(text).map_err(|err| err.to_string())?;
    Ok(Service {
        metrics: MetricsSettings::from_raw(file.metrics)?,
        traces: TraceSettings::from_raw(file.traces)?,
        serve: ServeSettings::from_raw(file.serve)?,
        log: LogSettings::from_raw(file.log)?,
    })
}

/// `text` is refused with a message containing every one of `expect`.
#[track_caller]
fn check_err(text: &str, expect: &[&str]) {
    let err = parse(text).err().unwrap_or_else(|| panic!("accepted: {text}"));
    for needle in expect {
        assert!(err.contains(needle), "{err:?} should contain {needle:?}");
    }
}

#[test]
fn generated_docs_are_current() {
    crate::generated::all([
        METRICS.ensure_documents("book/src/operator/service/metrics.md"),
        TRACES.ensure_documents("book/src/operator/service/traces.md"),
        SERVE.ensure_documents("book/src/operator/service/shutdown.md"),
        LOG.ensure_documents("book/src/operator/service/logs.md"),
    ])
    .unwrap();
}

#[test]
fn defaults_serve_metrics_on_the_mcp_server_and_send_no_spans() {
    let config = parse("").unwrap();
    assert_eq!(config.metrics, MetricsSettings::default());
    assert_eq!(config.traces, None);
    assert_eq!(config.serve.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
    assert_eq!(config.serve.cancel_grace, DEFAULT_CANCEL_GRACE);
    assert_eq!(config.serve.startup_list_wait, DEFAULT_STARTUP_LIST_WAIT);
    assert_eq!(config.log, LogSettings::default());
    assert_eq!(config.metrics.max_tool_labels, DEFAULT_MAX_TOOL_LABELS);
    assert_eq!(config.metrics.max_principals, DEFAULT_METRICS_MAX_PRINCIPALS);
    let traces = parse("[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"").unwrap().traces.unwrap();
    assert_eq!(
        (traces.max_queued_spans, traces.export_timeout),
        (DEFAULT_MAX_QUEUED_SPANS, DEFAULT_OTLP_EXPORT_TIMEOUT)
    );
}

#[test]
fn metrics_readers_are_capped_in_count_and_length() {
    let list = |names: Vec<String>| {
        let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        format!("[metrics]\nreaders = [{}]", quoted.join(", "))
    };
    let at_cap: Vec<String> = (0..MAX_METRICS_READERS).map(|i| format!("scraper{i}")).collect();
    assert_eq!(parse(&list(at_cap.clone())).unwrap().metrics.readers, at_cap);
    let mut over = at_cap;
    over.push("one-more".into());
    check_err(&list(over), &["[metrics] readers names 65 principals", "64 accepted"]);
    let longest = "p".repeat(MAX_METRICS_READER_BYTES);
    assert_eq!(parse(&list(vec![longest.clone()])).unwrap().metrics.readers, std::slice::from_ref(&longest));
    check_err(&list(vec![format!("{longest}p")]), &["[metrics] readers", "1 to 256 bytes"]);
    check_err(&list(vec![String::new()]), &["[metrics] readers", "1 to 256 bytes"]);
}

#[test]
fn caps_are_accepted_up_to_their_range_and_refused_past_it_by_name() {
    let config = parse(
        "[metrics]\nmax_tool_labels = 10000\n[traces]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\n\
         max_queued_spans = 1\nexport_timeout_secs = 300\n[serve]\ncancel_grace_secs = 600\n[log]\n\
         max_client_bytes = 16\nclient_error_interval_secs = 86400\n",
    )
    .unwrap();
    assert_eq!(config.metrics.max_tool_labels, MAX_TOOL_LABELS_CEILING);
    let traces = config.traces.unwrap();
    assert_eq!((traces.max_queued_spans, traces.export_timeout), (1, MAX_OTLP_EXPORT_TIMEOUT));
    assert_eq!(config.serve.cancel_grace, MAX_CANCEL_GRACE);
    assert_eq!(config.log.max_client_bytes, MIN_LOGGED_CLIENT_BYTES);
    assert_eq!(config.log.client_error_interval, MAX_CLIENT_ERROR_LOG_INTERVAL);
    let config = parse("[metrics]\nmax_tool_labels = 0\n[serve]\ncancel_grace_secs = 0\n").unwrap();
    assert_eq!((config.metrics.max_tool_labels, config.serve.cancel_grace), (0, Duration::ZERO));
    for (text, expect) in [
        ("[metrics]\nmax_tool_labels = 10001", "[metrics] max_tool_labels = 10001 is out of range: accepted 0..=10000"),
        ("[metrics]\nmax_principals = 100000", "[metrics] max_principals = 100000 is out of range: accepted 0..=10000"),
        ("[traces]\nmax_queued_spans = 0", "[traces] max_queued_spans = 0 is out of range: accepted 1..=131072"),
        ("[traces]\nexport_timeout_secs = 0", "[traces] export_timeout_secs = 0 is out of range: accepted 1..=300 s"),
        ("[traces]\nexport_timeout_secs = 301", "export_timeout_secs = 301"),
        ("[serve]\ncancel_grace_secs = 601", "[serve] cancel_grace_secs = 601 is out of range: accepted 0..=600 s"),
        (
            "[serve]\nshutdown_grace_secs = 3601",
            "[serve] shutdown_grace_secs = 3601 is out of range: accepted 0..=3600",
        ),
        ("[serve]\nstartup_list_wait_secs = 601", "[serve] startup_list_wait_secs = 601 is out of range"),
        ("[log]\nmax_client_bytes = 15", "[log] max_client_bytes = 15 is out of range: accepted 16..=65536 bytes"),
        (
            "[log]\nclient_error_interval_secs = 0",
            "[log] client_error_interval_secs = 0 is out of range: accepted 1..=86400 s",
        ),
        ("[log]\nbogus = 1", "bogus"),
    ] {
        check_err(text, &[expect]);
    }
}

#[test]
fn settings_are_read_and_checked() {
    let config = parse(
        "[metrics]\nlisten = \"127.0.0.1:9464\"\npublic = true\nmax_principals = 5\n[traces]\nendpoint = \
         \"http://127.0.0.1:4318/v1/traces\"\nprincipal = \"omit\"\n[serve]\nshutdown_grace_secs = 3",
    )
    .unwrap();
    assert_eq!(config.metrics.listen, Some("127.0.0.1:9464".parse().unwrap()));
    assert!(config.metrics.public);
    assert_eq!(config.metrics.max_principals, 5);
    let traces = config.traces.unwrap();
    assert_eq!(traces.principal, PrincipalInSpans::Omit);
    assert_eq!(traces.service_name, "airlock");
    assert_eq!(config.serve.shutdown_grace, Duration::from_secs(3));
    check_err("[metrics]\nlisten = \"0.0.0.0:9464\"\npublic = true", &["public", "loopback"]);
    check_err("[metrics]\npublic = true", &["public", "loopback"]);
    check_err("[metrics]\nlisten = \"nowhere\"", &["listen", "IP:PORT"]);
    check_err("[traces]\nendpoint = \"https://collector:4318\"", &["endpoint", "http://"]);
    check_err("[traces]\nendpoint = \"http://c/v1/traces\"\nprincipal = \"x\"", &["principal", "hash", "omit"]);
    check_err("[traces]\nservice_name = \"\"", &["[traces] service_name", "1 to 128 bytes"]);
    check_err("[metrics]\nbogus = 1", &["bogus", "max_tool_labels"]);
}

#[test]
fn every_key_shows_its_value() {
    let config = parse("[metrics]\nlisten = \"127.0.0.1:9464\"\nreaders = [\"prom\"]\n").unwrap();
    let shown: Vec<(&str, Option<String>)> =
        METRICS.values(Some(&config.metrics)).into_iter().map(|key| (key.name, key.value.map(|v| v.toml()))).collect();
    assert_eq!(
        shown,
        [
            ("listen", Some("\"127.0.0.1:9464\"".to_owned())),
            ("readers", Some("[\"prom\"]".to_owned())),
            ("public", Some("false".to_owned())),
            ("max_principals", Some("50".to_owned())),
            ("max_tool_labels", Some("1024".to_owned())),
        ]
    );
    let serve: Vec<Option<Value>> =
        SERVE.values(Some(&ServeSettings::default())).into_iter().map(|k| k.value).collect();
    assert_eq!(serve, [Some(Value::Int(30)), Some(Value::Int(5)), Some(Value::Int(60))]);
}
