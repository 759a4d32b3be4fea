//! The bodies of the commands that print: `tools`, `schema`, `call`,
//! `dispatch`, `inspect FILE` and `audit`. Each returns the exit code, or
//! the stdout write error that `output::finish` turns into one.

use super::confirm::{Who, confirmer};
use super::output::{Out, usage_error};
use crate::AuditCommand;
use airlock::content::{self, Block, Content};
use airlock::{CallRequest, Format, Host, RawArguments, StrictProblem, StrictReport, ToolResult};
use serde_json::{Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `airlock tools`: one line per tool, one with its revision (what `[tools.NAME]
/// pin` takes) and one for where a pulled one came from.
pub fn tools(host: &Host) -> std::io::Result<ExitCode> {
    let registry = host.tools();
    let mut out = Out::new();
    out.line(format_args!(
        "{:<16} {:<12} {:<8} {:<5} {:<8} {:<28} GRANTS",
        "NAME", "DIGEST", "CONTRACT", "SIDE", "CARD", "LIMITS"
    ))?;
    for tool in registry.iter() {
        let s = &tool.settings;
        let limits = format!(
            "{}ms {}MiB {}Gfuel",
            s.limits.timeout.as_millis(),
            s.limits.memory_bytes >> 20,
            s.limits.fuel / 1_000_000_000
        );
        let pipeline = &tool.pipeline;
        let side = if pipeline.side_effect { "yes" } else { "no" };
        // Which templates the operator wrote: a confirmation card, a result
        // presenter, both or neither.
        let card = match (pipeline.confirm.is_some(), pipeline.present_result.is_some()) {
            (true, true) => "both",
            (true, false) => "confirm",
            (false, true) => "result",
            (false, false) => "-",
        };
        let digest = tool.digest.get(..12).unwrap_or(&tool.digest);
        let contract = tool.contract().version();
        out.line(format_args!(
            "{:<16} {digest:<12} {contract:<8} {side:<5} {card:<8} {limits:<28} {}",
            tool.name,
            s.grants.summary()
        ))?;
        out.line(format_args!("{:<16} revision {}", "", tool.revision))?;
        if let Some(origin) = &tool.origin {
            let signer = origin.signer.as_deref().map_or_else(|| "unsigned".to_owned(), |s| format!("signed by {s}"));
            out.line(format_args!("{:<16} from {}, {signer}", "", origin.reference))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `airlock lock`: pin every loaded tool's revision and definition in the
/// lock file (beside the OCI tag pins, which stay as they are), and say
/// which pins changed. Tools no longer loaded lose their pins. Exit 2 when
/// the lock file cannot be read or written.
pub fn lock(host: &Host) -> std::io::Result<ExitCode> {
    let config = host.config();
    let settings = &config.distribution;
    let mut lock = match airlock::distribution::Lock::read(&settings.lock_file, settings.max_lock_bytes) {
        Ok(lock) => lock,
        Err(err) => return Ok(usage_error(err)),
    };
    let before = std::mem::take(&mut lock.tools);
    let registry = host.tools();
    lock.tools = registry.iter().map(|tool| (tool.name.clone(), tool.pinned())).collect();
    if let Err(err) = lock.write(&settings.lock_file, settings.max_lock_bytes) {
        return Ok(usage_error(err));
    }
    let mut out = Out::new();
    for tool in registry.iter() {
        let was = match before.get(&tool.name) {
            None => " (newly pinned)".to_owned(),
            Some(old) if old.revision == tool.revision => String::new(),
            Some(old) => format!(" (was {})", old.revision),
        };
        out.line(format_args!("{:<16} {}{was}", tool.name, tool.revision))?;
    }
    for name in before.keys().filter(|name| registry.get(name).is_none()) {
        out.line(format_args!("{name:<16} unpinned: no longer loaded"))?;
    }
    out.line(format_args!("pinned {} tool(s) in {}", registry.len(), settings.lock_file.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// `airlock schema`: the model-facing list on stdout; on stderr, for a
/// provider format, a report of which tools have a strict form and why the
/// others have none. Not having one is a fact about a tool's arguments, not
/// an error: the exit code stays 0.
pub fn schema(host: &Host, format: Format, strict: bool) -> std::io::Result<ExitCode> {
    if let Some(provider) = airlock::provider_of(format) {
        let reports: Vec<StrictReport> =
            host.strict_report().into_iter().filter(|report| report.provider == provider).collect();
        let how = if strict { "each tool with a strict form is marked strict" } else { "--strict marks them strict" };
        eprintln!("{} strict mode, per tool ({how}):", provider.as_str());
        let width = reports.iter().map(|r| r.tool.len()).max().unwrap_or(0);
        for report in &reports {
            eprintln!("  {:<width$}  {}", report.tool, strict_verdict(report, strict));
        }
    }
    if matches!(format, Format::OpenAi | Format::OpenAiResponses) {
        for tool in host.tools().iter() {
            if let Some(problem) = airlock::description_too_long(&tool.name, &tool.description) {
                eprintln!("warning: {problem}");
            }
        }
    }
    Out::new().json(&Value::Array(host.schemas(format, strict)))?;
    Ok(ExitCode::SUCCESS)
}

/// One tool's line of the strict report: `strict: yes` (saying when the
/// strict form is not the schema as it is) or `strict: no — why`.
fn strict_verdict(report: &StrictReport, strict: bool) -> String {
    if !report.no_strict_form.is_empty() {
        let reasons: Vec<String> = report.no_strict_form.iter().map(plain_reason).collect();
        return format!("strict: no — {}", reasons.join("; "));
    }
    match (report.problems.is_empty(), strict) {
        (true, _) => "strict: yes".to_owned(),
        (false, true) => "strict: yes (strict form emitted)".to_owned(),
        (false, false) => "strict: yes (with --strict)".to_owned(),
    }
}

/// A strict-mode problem in words: the argument it is in, then what is
/// wrong (`` `headers`: an object with arbitrary keys… ``).
fn plain_reason(problem: &StrictProblem) -> String {
    match problem.member() {
        Some(member) => format!("`{member}`: {}", problem.what),
        None => problem.what.clone(),
    }
}

/// `airlock completions SHELL`: the completion script, from the CLI's own
/// definition.
pub fn completions(shell: clap_complete::Shell, command: &mut clap::Command) -> std::io::Result<ExitCode> {
    // Generated into memory first: `generate` panics when its writer fails
    // (a closed pipe), which the house rules forbid on stdout.
    let mut script = Vec::new();
    clap_complete::generate(shell, command, "airlock", &mut script);
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, &script)?;
    std::io::Write::flush(&mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// `airlock man`: the manual page (roff), from the CLI's own definition;
/// hidden subcommands are left out.
pub fn man(command: clap::Command) -> std::io::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    clap_mangen::Man::new(command).render(&mut out)?;
    std::io::Write::flush(&mut out)?;
    Ok(ExitCode::SUCCESS)
}

/// `airlock call`'s answer: the tool's JSON result, or the error text the
/// model would read with who has to act and whether the same call can
/// succeed; with the content blocks of a successful call (and the files
/// they were written to), when it returned any.
fn result_json(result: &ToolResult, files: &[Option<PathBuf>]) -> Value {
    let content = match result.result() {
        Ok(success) => success.value.clone(),
        Err(_) => Value::String(result.text()),
    };
    let mut answer = Map::new();
    answer.insert("is_error".into(), Value::Bool(result.is_error()));
    answer.insert("kind".into(), Value::from(result.outcome_name()));
    if let Err(failure) = result.result() {
        answer.insert("blame".into(), Value::from(failure.blame.as_str()));
        answer.insert("retry".into(), Value::from(failure.retry.as_str()));
    }
    answer.insert("content".into(), content);
    let blocks = result.result().map(|success| success.blocks.as_slice()).unwrap_or_default();
    if !blocks.is_empty() {
        let blocks: Vec<Value> = blocks
            .iter()
            .enumerate()
            .map(|(index, block)| {
                let mut entry = block_json(block);
                entry.insert("summary".into(), Value::String(block_summary(index, block)));
                if let Some(Some(file)) = files.get(index) {
                    entry.insert("file".into(), Value::String(file.display().to_string()));
                }
                Value::Object(entry)
            })
            .collect();
        answer.insert("blocks".into(), Value::Array(blocks));
    }
    Value::Object(answer)
}

/// What the JSON answer says of a block: its kind, media type, size and
/// digest, and what can be read without its bytes (a text block's text,
/// a link's URI and name, an embedded resource's URI).
fn block_json(block: &Block) -> Map<String, Value> {
    let summary = block.summary();
    let mut entry = Map::new();
    entry.insert("kind".into(), Value::from(summary.kind.as_str()));
    entry.insert("media_type".into(), summary.media_type.map_or(Value::Null, Value::String));
    entry.insert("size".into(), Value::from(summary.size));
    entry.insert("sha256".into(), Value::String(summary.sha256));
    match block.content() {
        Content::Text(text) => {
            entry.insert("text".into(), Value::String(text.clone()));
        }
        Content::Link(link) => {
            entry.insert("uri".into(), Value::String(link.uri.clone()));
            entry.insert("name".into(), Value::String(link.name.clone()));
        }
        Content::Embedded(embedded) => {
            entry.insert("uri".into(), Value::String(embedded.uri.clone()));
        }
        Content::Image(_) | Content::Audio(_) => {}
    }
    entry
}

/// One line about the block numbered `index` (from 0), e.g. `block 1:
/// image image/png, 1234 bytes, sha256:…`.
fn block_summary(index: usize, block: &Block) -> String {
    let summary = block.summary();
    let media =
        summary.media_type.as_deref().map(|media| format!(" {}", content::clean_line(media))).unwrap_or_default();
    let target = match block.content() {
        Content::Link(link) => format!(" → {}", content::clean_line(&link.uri)),
        Content::Embedded(embedded) => format!(" {}", content::clean_line(&embedded.uri)),
        _ => String::new(),
    };
    format!("block {}: {}{media}{target}, {} bytes, {}", index + 1, summary.kind, summary.size, summary.sha256)
}

/// The file a block is written to in `dir`: its number and kind, and an
/// extension from its media type. The name is the host's, never the
/// tool's.
fn block_file(dir: &Path, index: usize, block: &Block) -> Option<PathBuf> {
    // A link has no bytes of its own: its URI is in the answer.
    if matches!(block.content(), Content::Link(_)) {
        return None;
    }
    let extension = match block.content().media_type().map(str::to_ascii_lowercase).as_deref() {
        Some("image/png") => "png",
        Some("image/jpeg") => "jpg",
        Some("image/gif") => "gif",
        Some("image/webp") => "webp",
        Some("audio/wav" | "audio/x-wav" | "audio/wave") => "wav",
        Some("audio/mpeg" | "audio/mp3") => "mp3",
        Some("audio/ogg") => "ogg",
        Some("audio/flac" | "audio/x-flac") => "flac",
        Some("image/svg+xml") => "svg",
        Some("application/json") => "json",
        Some("application/pdf") => "pdf",
        Some(media) if media.starts_with("text/") => "txt",
        _ => "bin",
    };
    Some(dir.join(format!("{}-{}.{extension}", index + 1, block.kind())))
}

/// Write each block of a successful `result` that has bytes into `dir`
/// (made if missing); the files, by block.
fn write_blocks(dir: &Path, result: &ToolResult) -> Result<Vec<Option<PathBuf>>, String> {
    let Ok(success) = result.result() else { return Ok(Vec::new()) };
    if success.blocks.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(dir).map_err(|err| format!("cannot make {}: {err}", dir.display()))?;
    let mut files = Vec::with_capacity(success.blocks.len());
    for (index, block) in success.blocks.iter().enumerate() {
        let file = block_file(dir, index, block);
        if let Some(file) = &file {
            std::fs::write(file, block.content().payload())
                .map_err(|err| format!("cannot write {}: {err}", file.display()))?;
        }
        files.push(file);
    }
    Ok(files)
}

/// `airlock call TOOL ARGS`: one call through the pipeline; with
/// `content_dir`, its content blocks written there.
pub async fn call(
    host: &Host,
    tool: String,
    args: String,
    content_dir: Option<&Path>,
    who: &Who,
) -> std::io::Result<ExitCode> {
    let request = CallRequest {
        call_id: "cli".into(),
        tool,
        arguments: RawArguments::Text(args),
        principal: who.principal.clone(),
        attributes: Default::default(),
        trace_parent: None,
        progress: None,
        log: None,
        task: None,
    };
    let confirmer = confirmer(who);
    let result = host.call(request, confirmer.as_deref()).await;
    tracing::info!("{}", result.human_line());
    if let Ok(success) = result.result() {
        for (index, block) in success.blocks.iter().enumerate() {
            tracing::info!("{}", block_summary(index, block));
        }
    }
    if !result.stderr.text.is_empty() {
        tracing::info!("guest stderr: {}", result.stderr.text.trim_end());
    }
    let files = match content_dir.map(|dir| write_blocks(dir, &result)).transpose() {
        Ok(files) => files.unwrap_or_default(),
        Err(err) => return Ok(usage_error(err)),
    };
    Out::new().json(&result_json(&result, &files))?;
    Ok(if result.is_error() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Largest message `dispatch` reads from stdin.
const MAX_MESSAGE_BYTES: u64 = 8 << 20;

/// `airlock dispatch`: an assistant message on stdin, its calls as one batch.
pub async fn dispatch(host: &Host, format: Format, who: &Who) -> std::io::Result<ExitCode> {
    let mut text = String::new();
    if let Err(err) = std::io::stdin().take(MAX_MESSAGE_BYTES + 1).read_to_string(&mut text) {
        return Ok(usage_error(format!("cannot read the message from stdin: {err}")));
    }
    if text.len() as u64 > MAX_MESSAGE_BYTES {
        return Ok(usage_error(format!("the message on stdin is larger than {MAX_MESSAGE_BYTES} bytes")));
    }
    let message: Value = match serde_json::from_str(&text) {
        Ok(message) => message,
        Err(err) => return Ok(usage_error(format!("stdin is not a JSON message: {err}"))),
    };
    let requests = match airlock::read_calls(format, &message, &who.principal) {
        Ok(requests) => requests,
        Err(err) => return Ok(usage_error(err)),
    };
    let confirmer = confirmer(who);
    let results = host.dispatch(requests, confirmer.as_deref(), &airlock::CancellationToken::new()).await;
    for result in &results {
        tracing::info!("{}", result.human_line());
    }
    Out::new().json(&airlock::write_results(format, &results))?;
    Ok(if results.iter().any(ToolResult::is_error) { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// `airlock inspect FILE`: the report on a local component file.
pub async fn inspect(file: &Path) -> std::io::Result<ExitCode> {
    let settings = airlock::EngineSettings { compiler: crate::compiler_exe(), ..airlock::EngineSettings::default() };
    let runtime = match airlock::Runtime::new(&settings) {
        Ok(runtime) => runtime,
        Err(err) => return Ok(usage_error(format!("{err:#}"))),
    };
    let report = airlock::inspect(&runtime, file).await;
    let accepted = report.accepted;
    match serde_json::to_value(&report) {
        Ok(value) => Out::new().json(&value)?,
        Err(err) => return Ok(usage_error(err)),
    }
    Ok(if accepted { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `audit verify --postgres URL`: one line per replica; exit 1 if any
/// replica's chain has gaps or breaks, 2 if the database cannot be read.
pub async fn verify_postgres(url: &str) -> std::io::Result<ExitCode> {
    let reports = match airlock::audit_verify_postgres(url).await {
        Ok(reports) => reports,
        Err(err) => return Ok(usage_error(err)),
    };
    let mut out = Out::new();
    if reports.is_empty() {
        out.line(format_args!("ok: no records in the database"))?;
    }
    for report in &reports {
        out.line(format_args!("{report}"))?;
    }
    Ok(if reports.iter().all(airlock::ReplicaReport::is_intact) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `airlock audit verify FILE` / `audit tail FILE`.
pub fn audit(command: AuditCommand) -> std::io::Result<ExitCode> {
    let mut out = Out::new();
    Ok(match command {
        AuditCommand::Verify { file: None, .. } => usage_error("audit verify needs a log file or --postgres URL"),
        AuditCommand::Verify { file: Some(file), .. } => match airlock::audit_verify_all(&file) {
            Ok(report) => {
                // One line per chain: the configured file and each sibling
                // `<file>.<n>` another process wrote (book: "Several
                // processes on one config").
                let mut unrecovered = 0;
                for (path, chain) in &report.chains {
                    let head = chain.last_hash.as_deref().unwrap_or("(empty)");
                    // Not tampering: what a crash left, which the next
                    // start recovers (book: "After a crash"). Refused
                    // until then, saying so.
                    if let Some(recovery) = &chain.recoverable {
                        unrecovered += 1;
                        out.line(format_args!(
                            "NOT RECOVERED: {}: {} records, chain intact, left by a crash: {recovery}; this is not \
                             tampering: the next start of Airlock on this log recovers it and records what it did",
                            path.display(),
                            chain.records
                        ))?;
                        continue;
                    }
                    out.line(format_args!(
                        "ok: {}: {} records, chain intact; head {head}",
                        path.display(),
                        chain.records
                    ))?;
                    if chain.recoveries > 0 {
                        out.line(format_args!(
                            "recovered: {}: Airlock recovered this chain after a crash {} time(s); its \"recovered\" \
                             records say what it did",
                            path.display(),
                            chain.recoveries
                        ))?;
                    }
                }
                if unrecovered > 0 {
                    out.line(format_args!(
                        "NOT RECOVERED: {unrecovered} of {} chain(s) are as a crash left them, not tampered with; \
                         start Airlock on this log, then verify again",
                        report.chains.len()
                    ))?;
                    return Ok(ExitCode::from(3));
                }
                out.line(format_args!(
                    "ok: {} records in {} chain(s), all intact",
                    report.records,
                    report.chains.len()
                ))?;
                if report.unfinished > 0 {
                    // Not damage: the write-ahead record of a call that
                    // never got its outcome record.
                    out.line(format_args!(
                        "note: {} call(s) have a \"started\" record and no outcome record (Airlock stopped while \
                         they ran, or they are still running); `airlock audit tail` shows them",
                        report.unfinished
                    ))?;
                }
                ExitCode::SUCCESS
            }
            Err(err) => {
                out.line(format_args!("TAMPERED: {err}"))?;
                ExitCode::from(1)
            }
        },
        AuditCommand::Tail { file, n } => match airlock::audit_tail(&file, n) {
            Ok(records) => {
                for record in records {
                    out.line(format_args!("{record}"))?;
                }
                // Each chain is tailed by its own name; the others are named
                // on stderr, so that stdout stays one record a line.
                let siblings = airlock::audit_siblings(&file);
                if !siblings.is_empty() {
                    let names: Vec<String> = siblings.iter().map(|s| s.display().to_string()).collect();
                    eprintln!(
                        "note: other processes wrote chains of their own beside this one; tail them by name: {}",
                        names.join(", ")
                    );
                }
                ExitCode::SUCCESS
            }
            Err(err) => usage_error(err),
        },
    })
}
