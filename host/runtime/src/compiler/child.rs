//! The compiler process's side: `airlock __compile`, started by
//! [`run_child`](super::run_child) for each component. It sets its own
//! limits before it reads or compiles anything (`RLIMIT_CPU`,
//! `RLIMIT_AS`, and the parent-death signal when there is no cache to keep
//! its work), reads the component's bytes from stdin, checks their shape
//! (`shape.rs`), compiles them with an engine configured like the host's
//! and writes the artifact where the parent said; its exit code and stderr
//! are the whole answer.

use super::{
    COMPILE_SUBCOMMAND, EXIT_BASELINE_UNSUPPORTED, EXIT_INVALID, EXIT_OTHER, EXIT_OUT_OF_MEMORY, EXIT_OVER_CAP,
    EXIT_WRONG_WORLD, MAX_COMPONENT_BYTES, check_header, shape,
};
use crate::wasmtime_config::Tier;
use airlock_settings::engine::EngineSettings;
use std::ffi::OsString;
use std::io::{Read as _, Write as _};
use std::process::ExitCode;

/// The child: `airlock __compile CPU_SECS MEMORY_MIB WASM_STACK_BYTES TIER
/// OUT [KEEP_AS]` with the component's bytes on stdin; `TIER` is
/// `baseline` or `optimized`, with `-background` for a compilation that
/// runs behind calls (at a lower CPU priority). Sets its own limits
/// before it reads or compiles anything, checks the component's shape, then
/// writes the artifact to `OUT` (a new file). Without `KEEP_AS` it dies with
/// the host; with it (the artifact's place in the compile cache) it
/// outlives the host, within its CPU and memory limits, and if the host is
/// gone when the artifact is written, moves it to `KEEP_AS` itself. Exit codes: 0 compiled, 10 not a
/// component, 11 out of memory, 12 anything else, 13 over a cap of its
/// shape, 14 not of the tool world, 15 not compiled by the baseline
/// compiler (a proposal it does not support); the reason is on stderr.
pub fn child_main(args: &[OsString]) -> ExitCode {
    match child(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            let _ = writeln!(std::io::stderr(), "{message}");
            ExitCode::from(code)
        }
    }
}

fn child(args: &[OsString]) -> Result<(), (u8, String)> {
    let usage = || {
        (
            EXIT_OTHER,
            format!(
                "usage: airlock {COMPILE_SUBCOMMAND} CPU_SECS MEMORY_MIB WASM_STACK_BYTES TIER OUT [KEEP_AS] (bytes on \
                 stdin)"
            ),
        )
    };
    let (cpu, memory, stack, tier, out, keep_as) = match args {
        [cpu, memory, stack, tier, out] => (cpu, memory, stack, tier, out, None),
        [cpu, memory, stack, tier, out, keep_as] => (cpu, memory, stack, tier, out, Some(keep_as)),
        _ => return Err(usage()),
    };
    let tier = tier.to_str().ok_or_else(usage)?;
    let (tier, background) = match tier.strip_suffix("-background") {
        Some(tier) => (tier, true),
        None => (tier, false),
    };
    let tier = Tier::from_arg(tier).ok_or_else(usage)?;
    #[cfg(unix)]
    let host = std::os::unix::process::parent_id();
    let number = |arg: &OsString| arg.to_str().and_then(|s| s.parse::<u64>().ok()).ok_or_else(usage);
    let (cpu_secs, memory_mib, stack_bytes) = (number(cpu)?, number(memory)?, number(stack)?);
    let stack_bytes = usize::try_from(stack_bytes).map_err(|_| usage())?;
    set_limits(cpu_secs, memory_mib, keep_as.is_none())
        .map_err(|err| (EXIT_OTHER, format!("cannot set the compiler's limits: {err}")))?;
    if background {
        lower_priority();
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_COMPONENT_BYTES.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|err| (EXIT_OTHER, format!("cannot read the component: {err}")))?;
    if bytes.len() as u64 > MAX_COMPONENT_BYTES {
        return Err((EXIT_INVALID, format!("larger than the {}-byte limit", MAX_COMPONENT_BYTES)));
    }
    // The whole input is read: stdin becomes /dev/null, which says so to
    // anyone looking (`/proc/PID/fd/0`), and from here on the compilation
    // no longer needs the host that sent it.
    #[cfg(unix)]
    if let Ok(null) = std::fs::File::open("/dev/null") {
        use std::os::fd::AsRawFd as _;
        // SAFETY: dup2 takes two open descriptors and changes only which
        // file descriptor 0 refers to; nothing in this process reads stdin
        // again.
        unsafe {
            libc::dup2(null.as_raw_fd(), 0);
        }
    }
    // The text formats are never compiled (the parent checked the header).
    check_header(&bytes).map_err(|why| (EXIT_INVALID, why.to_string()))?;
    // Its shape before any native compilation: a bomb is refused here in
    // milliseconds, and so is a component that can never be a tool.
    shape::check(&bytes).map_err(|refusal| match refusal {
        shape::Refusal::Cap(why) => (EXIT_OVER_CAP, why),
        shape::Refusal::World(why) => (EXIT_WRONG_WORLD, why),
        shape::Refusal::Invalid(why) => (EXIT_INVALID, why),
    })?;
    let settings = EngineSettings { wasm_stack_bytes: stack_bytes, ..EngineSettings::default() };
    let engine = crate::wasmtime_config::compile_only_engine(&settings, tier)
        .map_err(|err| (classify(&err), format!("configuring the compiler: {err:#}")))?;
    let component =
        wasmtime::component::Component::new(&engine, &bytes).map_err(anyhow::Error::from).map_err(|err| {
            match (classify(&err), tier) {
                // What Winch refuses (a proposal it does not support), Cranelift
                // may compile: the parent asks it instead.
                (EXIT_INVALID, Tier::Baseline) => (EXIT_BASELINE_UNSUPPORTED, format!("{err:#}")),
                (code, _) => (code, format!("{err:#}")),
            }
        })?;
    let artifact =
        component.serialize().map_err(anyhow::Error::from).map_err(|err| (classify(&err), format!("{err:#}")))?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let write = |out: &OsString| -> std::io::Result<()> {
        let mut file = options.open(out)?;
        file.write_all(&artifact)?;
        file.sync_all()
    };
    write(out).map_err(|err| (EXIT_OTHER, format!("cannot write the artifact: {err}")))?;
    // The host that started this compilation is gone (this process was
    // given to another parent): nobody will keep the artifact but this
    // process. The bytes are what the host sent, compiled here, as a host
    // alive would have kept them.
    #[cfg(unix)]
    if let Some(keep_as) = keep_as
        && std::os::unix::process::parent_id() != host
        && std::fs::rename(out, keep_as).is_err()
    {
        let _ = std::fs::remove_file(out);
    }
    Ok(())
}

/// A compile error caused by a failed allocation is a memory refusal, not
/// an invalid component.
fn classify(err: &anyhow::Error) -> u8 {
    let out_of_memory = err.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::OutOfMemory)
            || cause.to_string().contains("Cannot allocate memory")
            || cause.to_string().contains("out of memory")
    });
    if out_of_memory { EXIT_OUT_OF_MEMORY } else { EXIT_INVALID }
}

/// `RLIMIT_CPU` (soft: SIGXCPU, one second later SIGKILL), `RLIMIT_AS`,
/// and, when `die_with_host`, on Linux death with the parent (no orphan
/// compiling on for nothing: without a cache its artifact has nowhere to
/// go).
#[cfg(unix)]
fn set_limits(cpu_secs: u64, memory_mib: u64, die_with_host: bool) -> std::io::Result<()> {
    let set = |resource, soft: u64, hard: u64| {
        let limit = libc::rlimit { rlim_cur: soft, rlim_max: hard };
        // SAFETY: `setrlimit` reads the struct we pass and changes only
        // this process's limits.
        if unsafe { libc::setrlimit(resource, &limit) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
    };
    set(libc::RLIMIT_CPU, cpu_secs, cpu_secs.saturating_add(1))?;
    let bytes = memory_mib.saturating_mul(1 << 20);
    set(libc::RLIMIT_AS, bytes, bytes)?;
    // The parent-death signal follows the thread that started this process:
    // that thread waits for it until it exits (`run_child`), so it fires
    // only when the host itself dies.
    #[cfg(target_os = "linux")]
    if die_with_host {
        // SAFETY: PR_SET_PDEATHSIG takes a signal number and changes only
        // this process's parent-death signal.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
    }
    Ok(())
}

/// Run behind the host's calls: a compilation in the background (an
/// optimized build replacing a baseline one that already serves) takes
/// only the CPU calls leave.
#[cfg(unix)]
fn lower_priority() {
    // SAFETY: `setpriority` changes only this process's nice value; a
    // failure leaves it as it was, which is only slower for calls.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
    }
}

#[cfg(not(unix))]
fn lower_priority() {}

/// The nice value of a compilation in the background.
#[cfg(unix)]
const BACKGROUND_NICE: libc::c_int = 10;

/// Elsewhere the limits are not available: refuse rather than compile
/// unmetered.
#[cfg(not(unix))]
fn set_limits(_cpu_secs: u64, _memory_mib: u64, _die_with_host: bool) -> std::io::Result<()> {
    Err(std::io::Error::other("process limits are only available on Unix"))
}
