//! What the compiler's parent reads of its child process: how it ended
//! and the CPU time it used, when it has ended ([`reap`]) and while it
//! runs ([`cpu_used`]).

use std::time::Duration;

/// How a compiler process ended, and the CPU time it used (its own and
/// its threads', as `RLIMIT_CPU` counts it).
pub(super) struct Exit {
    pub(super) status: std::process::ExitStatus,
    pub(super) cpu: Duration,
}

/// The child's exit if it has exited (reaping it), else `None`: `wait4`,
/// which also returns the CPU time it used.
#[cfg(unix)]
pub(super) fn reap(child: &mut std::process::Child) -> std::io::Result<Option<Exit>> {
    let pid = libc::pid_t::try_from(child.id()).map_err(|_| std::io::Error::other("process id out of range"))?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers, for which all zeroes is a value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `wait4` writes only the status and the usage we pass, and
    // with WNOHANG returns at once; the process is our child, not yet reaped
    // (std's `Child` never waited on it), so the id is still its own.
    let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
    if reaped == 0 {
        return Ok(None);
    }
    if reaped != pid {
        let err = std::io::Error::last_os_error();
        return if err.kind() == std::io::ErrorKind::Interrupted { Ok(None) } else { Err(err) };
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            .saturating_add(Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0)))
    };
    let status = std::os::unix::process::ExitStatusExt::from_raw(status);
    Ok(Some(Exit { status, cpu: time(usage.ru_utime).saturating_add(time(usage.ru_stime)) }))
}

/// Elsewhere: the exit, with no CPU time.
#[cfg(not(unix))]
pub(super) fn reap(child: &mut std::process::Child) -> std::io::Result<Option<Exit>> {
    Ok(child.try_wait()?.map(|status| Exit { status, cpu: Duration::ZERO }))
}

/// The signal that ended the child, if one did.
#[cfg(unix)]
pub(super) fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(status)
}

#[cfg(not(unix))]
pub(super) fn signal_of(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// The CPU time the running child has used so far (its threads' too), from
/// `/proc/PID/stat`; `None` where that cannot be read (the child is then
/// taken as stuck once past its wall-clock deadline, as before there was a
/// way to tell).
#[cfg(target_os = "linux")]
pub(super) fn cpu_used(child: &std::process::Child) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    cpu_from_stat(&stat, u64::try_from(ticks).ok().filter(|ticks| *ticks > 0)?)
}

#[cfg(not(target_os = "linux"))]
pub(super) fn cpu_used(_child: &std::process::Child) -> Option<Duration> {
    None
}

/// utime + stime (fields 14 and 15 of `/proc/PID/stat`, in clock ticks),
/// read after the command name, which may itself hold spaces and `)`.
fn cpu_from_stat(stat: &str, ticks_per_sec: u64) -> Option<Duration> {
    let after_name = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = after_name.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime.saturating_add(stime);
    Some(Duration::from_millis(ticks.saturating_mul(1000) / ticks_per_sec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_time_is_read_after_the_command_name() {
        let stat = "4242 (air lock) x) R 1 4242 4242 0 -1 4194560 900 0 0 0 250 50 0 0 20 0 3 0 100 0 0";
        assert_eq!(cpu_from_stat(stat, 100), Some(Duration::from_secs(3)));
        assert_eq!(cpu_from_stat("4242 (truncated", 100), None);
        assert_eq!(cpu_from_stat("4242 (x) R 1 2", 100), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_child_is_seen_using_the_cpu() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let mut seen = Duration::ZERO;
        for _ in 0..600 {
            seen = cpu_used(&child).unwrap_or(seen);
            if seen >= Duration::from_millis(50) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(seen >= Duration::from_millis(50), "the child's CPU time reads back: {seen:?}");
    }
}
