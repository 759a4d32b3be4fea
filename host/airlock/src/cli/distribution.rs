//! The subcommands `airlock pull`, `airlock push` and `airlock keygen`, and
//! `airlock inspect oci://…`: flags, what they print, exit codes (0 done,
//! 1 refused by the registry or a check, 2 usage). The exit code of a
//! refusal is decided by its kind ([`DistributionError::blame`]), whichever
//! step it came from.
//!
//! They act only on what the operator names: the config (for the store,
//! lock file, keys, credentials and caps) and the arguments.

use airlock::Config;
use airlock::distribution::{self as oci, Blame, DistributionError, OciRef, OciSource, Pulled};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `airlock pull`.
#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The reference (oci://REGISTRY/REPOSITORY:TAG or …@sha256:…); without one, every oci:// component of the config.
    pub reference: Option<String>,
    /// Accept a tag that now names another digest than airlock.lock pins, and pin the new one.
    #[arg(long)]
    pub update: bool,
}

/// `airlock push`.
#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The component file.
    pub file: PathBuf,
    /// Where to: oci://REGISTRY/REPOSITORY:TAG.
    pub reference: String,
    /// Sign it (cosign format) with this private key (PKCS#8 PEM, ECDSA P-256; see `airlock keygen`).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
}

/// `airlock keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Writes NAME.key (private, mode 0600) and NAME.pub (public, for `keys = [...]` and cosign).
    #[arg(default_value = "airlock")]
    pub name: PathBuf,
}

/// Print a line; `false` if stdout failed (a reader that went away is
/// not a failure).
fn print(line: &str) -> bool {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Ok(()) => true,
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => true,
        Err(err) => {
            eprintln!("airlock: cannot write to stdout: {err}");
            false
        }
    }
}

fn done(printed: bool) -> ExitCode {
    if printed { ExitCode::SUCCESS } else { ExitCode::from(2) }
}

fn refused(message: &str) -> ExitCode {
    eprintln!("airlock: {message}");
    ExitCode::from(1)
}

/// Report `err` and give the exit code of its kind: 2 for a reference
/// that is not one (usage), 1 for everything else (the settings, the
/// registry, a check or a local file refused it), wherever it came from.
fn failed(err: &DistributionError) -> ExitCode {
    match err.blame() {
        Blame::Usage => usage(&err.to_string()),
        Blame::Settings | Blame::Registry | Blame::Check | Blame::Local => refused(&err.to_string()),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("airlock: {message}");
    ExitCode::from(2)
}

/// The tool settings for `reference`: those of the tool whose component it
/// is, else the config's.
fn source_for(config: &Config, reference: OciRef) -> OciSource {
    let same = |s: &&OciSource| s.reference == reference;
    match config.tools.values().filter_map(|t| t.runtime.oci.as_ref()).find(same) {
        Some(source) => source.clone(),
        None => OciSource { reference, allow_tags: None, require_signature: None, keys: None },
    }
}

fn describe(pulled: &Pulled) -> String {
    let signer = pulled.origin.signer.as_deref().map_or_else(|| "unsigned".to_owned(), |s| format!("signed by {s}"));
    format!("{} component {} ({} bytes), {signer}", pulled.origin.reference, pulled.layer_digest, pulled.size)
}

/// `airlock pull [REF] [--update]`.
pub async fn pull(config: &Config, args: &PullArgs) -> ExitCode {
    let settings = &config.distribution;
    let sources: Vec<OciSource> = match &args.reference {
        Some(text) => match OciRef::parse(text, false) {
            Ok(reference) => vec![source_for(config, reference)],
            Err(err) => return failed(&err),
        },
        None => config.tools.values().filter_map(|t| t.runtime.oci.clone()).collect(),
    };
    if sources.is_empty() {
        return usage(
            "the config has no component = \"oci://…\"; name a reference: airlock pull oci://REGISTRY/REPOSITORY:TAG",
        );
    }
    let mut code = ExitCode::SUCCESS;
    let mut pulled = Vec::new();
    for source in &sources {
        match oci::pull(settings, source, args.update).await {
            Ok(report) => {
                let mut line = describe(&report.pulled);
                if let Some(tag) = source.reference.tag_key().filter(|_| source.reference.digest.is_none()) {
                    line = format!("{tag} -> {line}; pinned in {}", settings.lock_file.display());
                }
                if let Some(old) = &report.replaced {
                    line.push_str(&format!(" (was {old})"));
                }
                if !print(&line) {
                    return ExitCode::from(2);
                }
                pulled.push(report.pulled);
            }
            Err(err) => code = failed(&err),
        }
    }
    if !pulled.is_empty() && !warm(config, &pulled).await {
        code = ExitCode::from(1);
    }
    code
}

/// Compile what was pulled into the config's compile cache, where `airlock
/// serve` looks for it, so that the first start after a pull serves the
/// tool at once instead of compiling it (seconds, minutes for an
/// interpreter). Under the config's engine settings and meter, like any
/// load. A component the compiler refuses is reported (exit 1): the pull
/// stands, but the tool would not load either. With the cache off
/// (`[engine] cache = false`) there is nothing to warm.
async fn warm(config: &Config, pulled: &[Pulled]) -> bool {
    let Some(cache) = config.engine.cache_dir.clone() else { return true };
    let runtime = match airlock::Runtime::new(&config.engine) {
        Ok(runtime) => std::sync::Arc::new(runtime),
        Err(err) => {
            eprintln!("airlock: cannot compile into the cache {}: {err:#}", cache.display());
            return false;
        }
    };
    let mut ok = true;
    for component in pulled {
        let runtime = runtime.clone();
        let path = component.path.clone();
        let compiled = tokio::task::spawn_blocking(move || -> Result<bool, String> {
            let bytes = std::fs::read(&path).map_err(|err| format!("{}: {err}", path.display()))?;
            let digest = airlock::digest(&bytes);
            runtime.compile(&bytes, &digest).map(|(_, cached)| cached).map_err(|err| format!("{err:#}"))
        })
        .await
        .unwrap_or_else(|err| Err(format!("the compilation stopped: {err}")));
        let line = match compiled {
            Ok(true) => format!("{}: already compiled in {}", component.origin.reference, cache.display()),
            Ok(false) => format!("{}: compiled into {}", component.origin.reference, cache.display()),
            Err(err) => {
                ok = false;
                eprintln!("airlock: {}: not compiled: {err}", component.origin.reference);
                continue;
            }
        };
        if !print(&line) {
            return false;
        }
    }
    ok
}

/// `airlock push FILE REF [--sign KEY]`.
pub async fn push(config: &Config, args: &PushArgs) -> ExitCode {
    let reference = match OciRef::parse(&args.reference, false) {
        Ok(reference) => reference,
        Err(err) => return failed(&err),
    };
    match oci::push(&config.distribution, &args.file, &reference, args.sign.as_deref()).await {
        Ok(report) => {
            let signed = report.signed_by.map_or_else(String::new, |key| format!(", signed with {key}"));
            done(print(&format!("pushed {} as {}{signed}", args.file.display(), report.pinned)))
        }
        Err(err) => failed(&err),
    }
}

/// `airlock keygen [NAME]`.
pub fn keygen(args: &KeygenArgs) -> ExitCode {
    let private = with_extension(&args.name, "key");
    let public = with_extension(&args.name, "pub");
    for path in [&private, &public] {
        if path.exists() {
            return usage(&format!("{} exists; not overwriting a key", path.display()));
        }
    }
    let (private_pem, public_pem) = match oci::generate_keys() {
        Ok(pair) => pair,
        Err(err) => return failed(&err),
    };
    if let Err(err) = write_private(&private, private_pem.as_bytes()) {
        return usage(&format!("{}: cannot write: {err}", private.display()));
    }
    if let Err(err) = std::fs::write(&public, public_pem) {
        return usage(&format!("{}: cannot write: {err}", public.display()));
    }
    done(print(&format!(
        "wrote {} (private: keep it secret) and {} (public: list it in keys = [...])",
        private.display(),
        public.display()
    )))
}

fn with_extension(name: &Path, extension: &str) -> PathBuf {
    let mut text = name.as_os_str().to_owned();
    text.push(".");
    text.push(extension);
    PathBuf::from(text)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

/// `airlock inspect oci://…`: pull (from the store if it has it), verify,
/// and describe the component with where it came from.
pub async fn inspect(config: &Config, reference: &Path) -> ExitCode {
    let text = reference.to_string_lossy();
    let reference = match OciRef::parse(&text, true) {
        Ok(reference) => reference,
        Err(err) => return failed(&err),
    };
    let source = source_for(config, reference);
    let pulled = match oci::materialize(&config.distribution, &source).await {
        Ok(pulled) => pulled,
        Err(err) => return failed(&err),
    };
    // Compiled under the config's meter, by the config's compiler; not cached.
    let settings = airlock::EngineSettings {
        compiler: config.engine.compiler.clone(),
        compile_timeout_secs: config.engine.compile_timeout_secs,
        compile_secs_per_mib: config.engine.compile_secs_per_mib,
        compile_memory_mib: config.engine.compile_memory_mib,
        ..airlock::EngineSettings::default()
    };
    let runtime = match airlock::Runtime::new(&settings) {
        Ok(runtime) => runtime,
        Err(err) => return usage(&format!("{err:#}")),
    };
    let mut report = airlock::inspect(&runtime, &pulled.path).await;
    report.origin = Some(pulled.origin);
    let accepted = report.accepted;
    let text = match serde_json::to_string_pretty(&report) {
        Ok(text) => text,
        Err(err) => return usage(&err.to_string()),
    };
    if !print(&text) {
        return ExitCode::from(2);
    }
    if accepted { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
