//! Components from an OCI registry, against a real one: Debian's
//! `docker-registry` (the CNCF distribution server), started on a free
//! loopback port with a temporary storage directory and stopped after each
//! test. `airlock keygen`, `push`, `pull`, `tools`, `call` and `inspect` are
//! run as a user would run them.
//!
//! The registry binary is installed by `make oci-registry` (a prerequisite of
//! `make test`); without it these tests fail, naming the command.

use crate::service::{Reply, binary, request};
use crate::support::{guests, temp_dir, tool};
use serde_json::Value;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long the registry may take to start answering (a liveness bound).
const REGISTRY_START_DEADLINE: Duration = Duration::from_secs(60);
/// The media type of the manifests pushed and fetched here.
const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// A distribution server on loopback, killed when dropped.
struct Registry {
    child: Option<Child>,
    addr: String,
    storage: PathBuf,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Registry {
        let bin = std::env::var_os("AIRLOCK_OCI_REGISTRY_BIN")
            .map_or_else(|| PathBuf::from("/usr/bin/docker-registry"), PathBuf::from);
        assert!(
            bin.is_file(),
            "{} is missing: the OCI distribution tests need a real registry; run `make oci-registry` \
             (installs Debian's docker-registry) or set AIRLOCK_OCI_REGISTRY_BIN",
            bin.display()
        );
        let dir = temp_dir();
        let storage = dir.path().join("storage");
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    \
                 rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                storage.display()
            ),
        )
        .unwrap();
        let child = Command::new(&bin)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", bin.display()));
        let registry = Registry { child: Some(child), addr, storage, _dir: dir };
        let began = Instant::now();
        loop {
            if TcpStream::connect(&registry.addr).is_ok() && registry.http("GET", "/v2/", &[], "").status == 200 {
                return registry;
            }
            assert!(began.elapsed() < REGISTRY_START_DEADLINE, "the registry at {} did not start", registry.addr);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A plain HTTP/1.1 exchange with the registry.
    fn http(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        request(&self.addr, method, path, headers, body)
    }

    /// The manifest `tag` of `repository`.
    #[track_caller]
    fn manifest(&self, repository: &str, tag: &str) -> Value {
        let reply = self.http("GET", &format!("/v2/{repository}/manifests/{tag}"), &[("Accept", MANIFEST)], "");
        assert_eq!(reply.status, 200, "{}", reply.body);
        serde_json::from_str(&reply.body).unwrap()
    }

    /// Put `manifest` under `tag` of `repository`.
    #[track_caller]
    fn put_manifest(&self, repository: &str, tag: &str, manifest: &Value) {
        let path = format!("/v2/{repository}/manifests/{tag}");
        let reply = self.http("PUT", &path, &[("Content-Type", MANIFEST)], &manifest.to_string());
        assert_eq!(reply.status, 201, "{}", reply.body);
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The file holding the blob `hex` in the registry's storage.
    fn blob_file(&self, hex: &str) -> PathBuf {
        self.storage.join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Run `airlock ARGS` in `cwd`, with no credentials or config from the
/// machine.
fn airlock(cwd: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .current_dir(cwd)
        .env("AIRLOCK_TOOLS_DIR", guests())
        .env("HOME", cwd)
        .env("DOCKER_CONFIG", cwd.join("docker"))
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("AIRLOCK_CONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("airlock runs")
}

fn text(output: &Output) -> String {
    format!("stdout: {}\nstderr: {}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// `airlock ARGS` succeeds; its stdout.
#[track_caller]
fn ok(cwd: &Path, args: &[&str]) -> String {
    let output = airlock(cwd, args);
    assert_eq!(output.status.code(), Some(0), "airlock {args:?}\n{}", text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `airlock ARGS` fails with `code`; its stderr, which must contain every
/// one of `needles`.
#[track_caller]
fn refused(cwd: &Path, args: &[&str], code: i32, needles: &[&str]) -> String {
    let output = airlock(cwd, args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(code), "airlock {args:?}\n{}", text(&output));
    for needle in needles {
        assert!(stderr.contains(needle), "airlock {args:?}: {stderr:?} should contain {needle:?}");
    }
    stderr
}

/// `airlock push` and the manifest digest it printed.
#[track_caller]
fn push(cwd: &Path, file: &Path, reference: &str, key: Option<&str>) -> String {
    let mut args = vec!["push", file.to_str().unwrap(), reference];
    if let Some(key) = key {
        args.extend(["--sign", key]);
    }
    let out = ok(cwd, &args);
    let digest = out.split('@').nth(1).and_then(|s| s.split([',', '\n']).next()).unwrap_or_default().trim();
    assert!(digest.starts_with("sha256:") && digest.len() == 71, "no digest in {out:?}");
    digest.to_owned()
}

/// `airlock.toml` in `dir`: one tool `echo` from `component`, plus `extra`
/// keys of `[distribution]` and `[tools.echo]`, with a compile cache of
/// its own (`cache`).
fn write_config(dir: &Path, distribution: &str, component: &str, tool_keys: &str) {
    std::fs::write(
        dir.join("airlock.toml"),
        format!(
            "builtin_settings = false\n[engine]\ncache_dir = \"cache\"\n[distribution]\nstore = \"store\"\n\
             {distribution}\n[tools.echo]\ncomponent = \"{component}\"\nside_effect = false\n{tool_keys}\n\
             [audit]\nfile = \"audit.jsonl\"\n"
        ),
    )
    .unwrap();
}

/// The echo component with a custom section appended: another component
/// (other bytes, other digest) that declares the same tool.
fn echo_variant(dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(tool("echo")).unwrap();
    let content = b"\x01xanother build of echo";
    bytes.push(0);
    bytes.push(u8::try_from(content.len()).unwrap());
    bytes.extend_from_slice(content);
    let path = dir.join("echo2.wasm");
    std::fs::write(&path, bytes).unwrap();
    path
}

fn call_echo(dir: &Path) -> Value {
    let out = ok(dir, &["call", "echo", r#"{"text":"from the registry"}"#]);
    let value: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["content"]["text"], "from the registry", "{value}");
    value
}

fn lock_text(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("airlock.lock")).unwrap_or_default()
}

#[test]
fn push_sign_pull_by_digest_and_by_tag_then_call_and_keep_working_when_the_registry_is_down() {
    let mut registry = Registry::start();
    let dir = temp_dir();
    let dir = dir.path();
    ok(dir, &["keygen", "dev"]);
    assert!(dir.join("dev.key").is_file() && dir.join("dev.pub").is_file());
    let repo = format!("oci://{}/tools/echo", registry.addr);
    let tagged = format!("{repo}:v1");
    let first = push(dir, &tool("echo"), &tagged, Some("dev.key"));
    let pinned = format!("{repo}@{first}");

    // By digest, signature required: listed with digest and signer, called,
    // audited with both, inspected.
    write_config(dir, "keys = [\"dev.pub\"]\nrequire_signature = true", &pinned, "");
    let tools = ok(dir, &["tools"]);
    assert!(tools.contains(&pinned) && tools.contains("signed by dev.pub sha256:"), "{tools}");
    call_echo(dir);
    let audit = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    let record: Value = serde_json::from_str(audit.lines().last().unwrap()).unwrap();
    assert_eq!(record["component_ref"], pinned.as_str(), "{record}");
    assert!(record["signer"].as_str().unwrap_or_default().starts_with("dev.pub sha256:"), "{record}");
    assert!(ok(dir, &["audit", "verify", "audit.jsonl"]).contains("ok: 1 records in 1 chain(s), all intact"));
    let inspected: Value = serde_json::from_str(&ok(dir, &["inspect", &pinned])).unwrap();
    assert_eq!(inspected["accepted"], true, "{inspected}");
    assert_eq!(inspected["origin"]["manifest_digest"], first.as_str());
    assert!(inspected["origin"]["signer"].as_str().unwrap_or_default().starts_with("dev.pub"));
    // Where a component came from is host-only: no model-facing encoding
    // carries it.
    for format in ["openai", "anthropic", "mcp"] {
        let schema = ok(dir, &["schema", "--format", format]);
        assert!(schema.contains("\"echo\""), "{schema}");
        for secret in [registry.addr.as_str(), "dev.pub", &first[7..]] {
            assert!(!schema.contains(secret), "{format} schema shows {secret}: {schema}");
        }
    }

    // A tag: refused unless allowed; once allowed, refused until pinned.
    write_config(dir, "keys = [\"dev.pub\"]\nrequire_signature = true", &tagged, "");
    refused(dir, &["tools"], 2, &["names a tag", "allow_tags = true", "@sha256"]);
    write_config(dir, "keys = [\"dev.pub\"]\nrequire_signature = true", &tagged, "allow_tags = true");
    refused(dir, &["tools"], 2, &["does not pin yet", "airlock pull"]);
    let pulled = ok(dir, &["pull"]);
    assert!(pulled.contains(&first) && pulled.contains("signed by dev.pub"), "{pulled}");
    assert!(lock_text(dir).contains(&format!("\"{tagged}\" = \"{first}\"")), "{}", lock_text(dir));
    assert!(ok(dir, &["tools"]).contains(&pinned));

    // The tag moves to another component: refused until the lock is updated,
    // and the pinned one keeps serving meanwhile.
    let second = push(dir, &echo_variant(dir), &tagged, Some("dev.key"));
    assert_ne!(first, second);
    refused(dir, &["pull"], 1, &[&second, &first, "airlock pull --update", "changed tag"]);
    assert!(lock_text(dir).contains(&first));
    assert!(ok(dir, &["tools"]).contains(&pinned));
    call_echo(dir);
    let updated = ok(dir, &["pull", "--update", &tagged]);
    assert!(updated.contains(&second) && updated.contains(&format!("was {first}")), "{updated}");
    // What was pulled is compiled into the cache `airlock serve` will use, so
    // its first start compiles nothing.
    assert!(updated.contains(&format!("{repo}@{second}: compiled into")), "{updated}");
    let artifacts = || {
        std::fs::read_dir(dir.join("cache"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "cwasm"))
            .count()
    };
    let compiled = artifacts();
    let again = ok(dir, &["pull", &tagged]);
    assert!(again.contains(": already compiled in"), "{again}");
    assert_eq!(artifacts(), compiled, "nothing compiled twice");
    assert!(lock_text(dir).contains(&second));
    assert!(ok(dir, &["tools"]).contains(&format!("{repo}@{second}")));

    // The registry goes away: the pinned copy in the store keeps working; a
    // store without it says the registry cannot be reached.
    registry.stop();
    call_echo(dir);
    assert!(ok(dir, &["tools"]).contains(&second));
    write_config(dir, "keys = [\"dev.pub\"]\nrequire_signature = true", &pinned, "");
    std::fs::write(
        dir.join("airlock.toml"),
        std::fs::read_to_string(dir.join("airlock.toml")).unwrap().replace("store = \"store\"", "store = \"empty\""),
    )
    .unwrap();
    refused(dir, &["tools"], 2, &["cannot be reached", &registry.addr]);
}

#[test]
fn unsigned_wrongly_signed_oversized_and_tampered_components_are_refused() {
    let registry = Registry::start();
    let dir = temp_dir();
    let dir = dir.path();
    ok(dir, &["keygen", "dev"]);
    ok(dir, &["keygen", "other"]);
    let repo = format!("oci://{}/tools/echo", registry.addr);
    let unsigned = push(dir, &tool("echo"), &format!("{repo}:unsigned"), None);
    let by_other = push(dir, &echo_variant(dir), &format!("{repo}:other"), Some("other.key"));
    let signed = "keys = [\"dev.pub\"]\nrequire_signature = true";

    write_config(dir, signed, &format!("{repo}@{unsigned}"), "");
    refused(dir, &["tools"], 2, &["is not signed", &unsigned, "dev.pub sha256:", "airlock push --sign"]);
    write_config(dir, signed, &format!("{repo}@{by_other}"), "");
    refused(dir, &["tools"], 2, &["none verifies", &by_other, "dev.pub sha256:"]);
    // The tool's own keys take the place of the config's.
    write_config(dir, signed, &format!("{repo}@{by_other}"), "keys = [\"other.pub\"]");
    assert!(ok(dir, &["tools"]).contains("signed by other.pub"));
    // A config requiring signatures without naming a key is refused too.
    write_config(dir, "require_signature = true", &format!("{repo}@{unsigned}"), "");
    refused(dir, &["tools"], 2, &["no public keys are configured", &unsigned]);

    // A manifest over the cap: the unsigned one with a large annotation,
    // pushed under its own tag.
    let mut manifest = registry.manifest("tools/echo", "unsigned");
    manifest["annotations"] = serde_json::json!({ "padding": "x".repeat(4000) });
    registry.put_manifest("tools/echo", "big", &manifest);
    write_config(dir, "max_manifest_bytes = 2048\nallow_tags = true", &format!("{repo}:big"), "");
    refused(dir, &["pull"], 1, &["over the 2048-byte cap", "max_manifest_bytes"]);
    assert!(!lock_text(dir).contains("big"), "a refused tag is not pinned");

    // A stored component changed on disk is refused at load.
    let pinned = format!("{repo}@{unsigned}");
    write_config(dir, "", &pinned, "");
    ok(dir, &["pull", &pinned]);
    let layer = airlock::digest(&std::fs::read(tool("echo")).unwrap());
    let stored = dir.join("store/blobs/sha256").join(&layer);
    let mut bytes = std::fs::read(&stored).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&stored, &bytes).unwrap();
    refused(dir, &["tools"], 2, &[&layer, "refusing to load a component that changed"]);

    // The registry serves other bytes than the digest it names: refused.
    std::fs::write(registry.blob_file(&layer), &bytes).unwrap();
    std::fs::remove_dir_all(dir.join("store")).unwrap();
    refused(dir, &["pull", &pinned], 1, &["whose sha256 is", &format!("sha256:{layer}"), "refusing it"]);
    refused(dir, &["tools"], 2, &["whose sha256 is"]);
}

#[test]
fn unpinned_references_and_bad_keys_are_refused_before_any_network_use() {
    let dir = temp_dir();
    let dir = dir.path();
    // Nothing listens on port 9 of loopback; none of these reach it.
    write_config(dir, "", "oci://127.0.0.1:9/tools/echo", "");
    refused(dir, &["tools"], 2, &["neither a tag nor a digest"]);
    write_config(dir, "", "oci://127.0.0.1:9/tools/echo:v1", "require_signature = true");
    refused(dir, &["tools"], 2, &["names a tag", "allow_tags"]);
    std::fs::write(dir.join("airlock.toml"), "[tools.echo]\ncomponent = \"echo.wasm\"\nkeys = [\"k.pub\"]\n").unwrap();
    refused(dir, &["tools"], 2, &["apply only to a component = \"oci://"]);
    std::fs::remove_file(dir.join("airlock.toml")).unwrap();
    refused(dir, &["push", "nonexistent.wasm", "oci://127.0.0.1:9/tools/echo"], 2, &["neither a tag nor a digest"]);
    std::fs::write(dir.join("junk.key"), "not a key").unwrap();
    refused(
        dir,
        &["push", tool("echo").to_str().unwrap(), "oci://127.0.0.1:9/t/echo:1", "--sign", "junk.key"],
        1,
        &["junk.key", "PRIVATE KEY"],
    );
}

#[test]
fn signatures_and_signature_payloads_are_checked_up_to_their_caps() {
    let registry = Registry::start();
    let dir = temp_dir();
    let dir = dir.path();
    ok(dir, &["keygen", "dev"]);
    let repo = format!("oci://{}/tools/echo", registry.addr);
    let digest = push(dir, &tool("echo"), &format!("{repo}:v1"), Some("dev.key"));
    let pinned = format!("{repo}@{digest}");
    let signed = "keys = [\"dev.pub\"]\nrequire_signature = true";

    // A signature that does not verify put before the one that does: with
    // max_signatures = 1 only the first is looked at.
    let sig_tag = format!("{}.sig", digest.replace(':', "-"));
    let mut manifest = registry.manifest("tools/echo", &sig_tag);
    let good = manifest["layers"][0].clone();
    let mut junk = good.clone();
    junk["annotations"]["dev.cosignproject.cosign/signature"] = "bm90IGEgc2lnbmF0dXJl".into();
    manifest["layers"] = serde_json::json!([junk, good]);
    registry.put_manifest("tools/echo", &sig_tag, &manifest);
    write_config(dir, &format!("{signed}\nmax_signatures = 1"), &pinned, "");
    refused(
        dir,
        &["pull", &pinned],
        1,
        &["has 2 signature(s), but none verifies", "only the first 1 of its 2", "[distribution] max_signatures"],
    );
    write_config(dir, &format!("{signed}\nmax_signatures = 2"), &pinned, "");
    assert!(ok(dir, &["pull", &pinned]).contains("signed by dev.pub"));

    // A payload of exactly max_signature_payload_bytes is read; one byte
    // less is refused naming the key.
    let size = good["size"].as_u64().unwrap();
    write_config(dir, &format!("{signed}\nmax_signature_payload_bytes = {size}"), &pinned, "");
    assert!(ok(dir, &["pull", &pinned]).contains("signed by dev.pub"));
    write_config(dir, &format!("{signed}\nmax_signature_payload_bytes = {}", size - 1), &pinned, "");
    refused(
        dir,
        &["pull", &pinned],
        1,
        &[
            &format!("a payload of {size} bytes is over the {}-byte cap", size - 1),
            "[distribution] max_signature_payload_bytes",
        ],
    );
}
