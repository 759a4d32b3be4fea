//! The approval page of a stdio server (`[approvals] listen`), and its life
//! after the server: an approval a stdio server opened stays answerable when
//! that process ends, so that a client that starts a server for each call
//! (the MCP Inspector's CLI, command-line clients of agent frameworks) and
//! its person can finish one, and the call made again in a new process runs
//! under it, once.
//!
//! # Design
//!
//! The approvals are kept in the host's state directory (`[approvals]
//! state_dir`, see `airlock_pipeline::approval::store`), so every Airlock
//! process of the host reads the same ones, and any of them can serve the
//! page for all. Which one does is decided by the page's lease
//! (`page.lock`, an advisory lock in the state directory): the process
//! holding it listens on the address and serves; another one leaves the
//! page to it, makes its links to the same address, and looks every
//! [`PAGE_TAKEOVER_POLL`] whether the lease is free, to take it (and the
//! address) over. A listener and its lease always go together.
//!
//! When a stdio server that holds the lease ends while approvals (anyone's)
//! still wait for an answer, it hands the listening socket and the lease,
//! as open descriptors, to a child of its own: `airlock __page`, which
//! serves only the page, in a process group of its own (a client that kills
//! the server's group does not reach it), with the state directory's
//! [`PAGE_LOG_FILE`] as its log, and says so on stderr. Connections that
//! arrive meanwhile wait in the socket's backlog: the page never stops
//! answering. The page's process looks every [`PAGE_IDLE_CHECK`] whether
//! anything is still pending and exits once nothing is: approvals lapse
//! after `[approvals] link_ttl_secs`, so it lives at most that long after
//! the last approval opened. It keeps no audit log (the next server holds
//! it); its refusals are in its log.
//!
//! # Races and crashes
//!
//! Giving the lease up because nothing is pending, and finding at its end
//! that approvals are pending while the lease is free (and taking it), are
//! both done under the state file's lock, where approvals are opened. So an
//! approval is either opened before the holder looks (the holder sees it
//! and stays) or after the holder gave up (and the process that opened it
//! finds the lease free at its end, at the latest, and hands the page on):
//! no approval is left pending with nobody serving while its opener ends
//! normally. A process killed with `kill -9` drops its lease with its
//! descriptors: approvals it served wait, unserved, until the next Airlock
//! process of the host starts and serves them. A listener lingers for a
//! moment after its lease is given up, so the next holder tries its bind
//! for [`BIND_RETRY`].
//!
//! With a port of 0 there is no address to share: each server serves its
//! own port and hands it on alone, without the lease.

use crate::http;
use crate::shutdown;
use airlock_pipeline::Host;
use airlock_pipeline::transport::approval::{Holder, PAGE_PATH, PageLease, now_ms};
use anyhow::Context as _;
use std::net::SocketAddr;
use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How often a stdio server that does not hold the page's lease looks
/// whether it is free.
pub const PAGE_TAKEOVER_POLL: Duration = Duration::from_millis(250);
/// How often the page's own process looks whether anything is pending.
pub const PAGE_IDLE_CHECK: Duration = Duration::from_secs(1);
/// How long a process that took the lease tries to bind the address while
/// the previous holder's listener closes.
pub const BIND_RETRY: Duration = Duration::from_secs(5);
/// The hidden subcommand of the page's own process.
pub const PAGE_SUBCOMMAND: &str = "__page";
/// The page process's log, in the state directory (started anew by each).
pub const PAGE_LOG_FILE: &str = "page.log";

/// The page served by this process: its lease (none for port 0), a copy
/// of the listening socket to hand over, and the accept loop.
struct Serving {
    lease: Option<PageLease>,
    listener: std::net::TcpListener,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<TaskTracker>,
}

/// A stdio server's page on `[approvals] listen`.
pub(crate) struct ListenPage {
    host: Host,
    addr: SocketAddr,
    serving: Arc<tokio::sync::Mutex<Option<Serving>>>,
    /// Looks for a free lease while another process serves.
    takeover: Option<(CancellationToken, tokio::task::JoinHandle<()>)>,
}

impl ListenPage {
    /// Serve the page on `addr`, or leave it to the Airlock process that
    /// holds the lease; `None` (said on stderr) when the page could not
    /// tell who is there and nothing needs it.
    ///
    /// # Errors
    ///
    /// The address is refused or held by another program, the state
    /// directory cannot be used, or the page could not tell who is there
    /// and the config has calls confirmed on it.
    pub(crate) async fn start(host: &Host, addr: SocketAddr) -> anyhow::Result<Option<ListenPage>> {
        if !http::page_servable(host, addr)? {
            return Ok(None);
        }
        let serving = Arc::new(tokio::sync::Mutex::new(None));
        let mut page = ListenPage { host: host.clone(), addr, serving: serving.clone(), takeover: None };
        let dir = match (addr.port(), host.approvals().state_dir()) {
            (0, _) | (_, None) => {
                *serving.lock().await = Some(serve(host, addr, None).await?);
                return Ok(Some(page));
            }
            (_, Some(dir)) => dir.to_owned(),
        };
        match PageLease::try_take(&dir)? {
            Some(lease) => *serving.lock().await = Some(serve(host, addr, Some(lease)).await?),
            None => {
                let base = http::page_base(host, addr);
                host.approvals().serve_page_at(&base);
                let by = airlock_pipeline::transport::approval::holder(&dir)
                    .map_or_else(String::new, |holder| format!(" (process {})", holder.pid));
                eprintln!(
                    "airlock: the approval page on {base}{PAGE_PATH} is served by another Airlock process{by}; this \
                     one serves it if that one ends"
                );
                let stop = CancellationToken::new();
                let task = tokio::spawn(take_over(host.clone(), addr, dir, serving, stop.clone()));
                page.takeover = Some((stop, task));
            }
        }
        Ok(Some(page))
    }

    /// The stdio server ends: give the page up if nothing is pending, else
    /// hand it to a process of its own (see the module documentation).
    pub(crate) async fn finish(self) {
        let ListenPage { host, addr, serving, takeover } = self;
        if let Some((stop, task)) = takeover {
            stop.cancel();
            let _ = task.await;
        }
        let mine = serving.lock().await.take();
        // Approvals kept in this process alone end with it, and their page.
        let Some(dir) = host.approvals().state_dir().map(Path::to_owned) else {
            close(mine.map(|serving| {
                serving.stop.cancel();
                serving.task
            }))
            .await;
            return;
        };
        let dir = Some(dir);
        let decided = host.approvals().with_pending(move |pending| decide(pending, mine, dir, addr.port())).await;
        let next = match decided {
            Ok(next) => next,
            Err(err) => {
                tracing::warn!("the approval page stops with this process: {err}");
                return;
            }
        };
        let (pending, serving) = match next {
            Next::Done(accept_loop) => {
                close(accept_loop).await;
                return;
            }
            Next::HandOver { pending, serving } => (pending, serving),
            Next::TookLease { pending, lease } => match serve(&host, addr, Some(lease)).await {
                Ok(serving) => (pending, serving),
                Err(err) => {
                    tracing::warn!(
                        "{pending} approval(s) wait for an answer and the approval page cannot be served: {err:#}; \
                         the next Airlock process of this host serves it"
                    );
                    return;
                }
            },
        };
        serving.stop.cancel();
        let Serving { lease, listener, task, .. } = serving;
        let base = listener.local_addr().map_or_else(|_| http::page_base(&host, addr), |a| http::page_base(&host, a));
        match hand_over(&host, listener, lease.as_ref()) {
            Ok(pid) => eprintln!(
                "airlock: {pending} approval(s) still wait for an answer: the approval page stays at \
                 {base}{PAGE_PATH}, served by process {pid} until none does (its log: {})",
                host.approvals()
                    .state_dir()
                    .map_or_else(|| "none".to_owned(), |d| d.join(PAGE_LOG_FILE).display().to_string())
            ),
            Err(err) => tracing::warn!(
                "{pending} approval(s) wait for an answer and the approval page cannot be handed on: {err}; the next \
                 Airlock process of this host serves it"
            ),
        }
        drop(lease);
        close(Some(task)).await;
    }
}

/// What the end of a stdio server does with the page, decided under the
/// state file's lock.
enum Next {
    /// Nothing to hand on: the page was given up (its accept loop to wait
    /// for), or another process serves it, or nothing waits.
    Done(Option<tokio::task::JoinHandle<TaskTracker>>),
    /// Approvals wait: the page this process serves goes to a process of
    /// its own.
    HandOver { pending: usize, serving: Serving },
    /// Approvals wait and nobody served the page: this process took the
    /// lease, binds the address and hands it on.
    TookLease { pending: usize, lease: PageLease },
}

fn decide(pending: usize, mine: Option<Serving>, dir: Option<PathBuf>, port: u16) -> Next {
    match mine {
        Some(serving) if pending == 0 => {
            serving.stop.cancel();
            if let Some(lease) = serving.lease {
                lease.release();
            }
            Next::Done(Some(serving.task))
        }
        Some(serving) => Next::HandOver { pending, serving },
        None if pending == 0 || port == 0 => Next::Done(None),
        None => match dir.map(|dir| PageLease::try_take(&dir)) {
            Some(Ok(Some(lease))) => Next::TookLease { pending, lease },
            // Another process serves the page, and sees these approvals.
            Some(Ok(None)) | None => Next::Done(None),
            Some(Err(err)) => {
                tracing::warn!("{pending} approval(s) wait for an answer, and the page's lease cannot be read: {err}");
                Next::Done(None)
            }
        },
    }
}

/// Wait (within the HTTP grace) for the page's connections in flight.
async fn close(accept_loop: Option<tokio::task::JoinHandle<TaskTracker>>) {
    if let Some(task) = accept_loop
        && let Ok(open) = task.await
    {
        let _ = tokio::time::timeout(crate::HTTP_SHUTDOWN_GRACE, open.wait()).await;
    }
}

/// Bind `addr` (trying for [`BIND_RETRY`] while a previous holder's
/// listener closes, when this process holds the lease) and serve the page.
async fn serve(host: &Host, addr: SocketAddr, mut lease: Option<PageLease>) -> anyhow::Result<Serving> {
    let started = tokio::time::Instant::now();
    let listener = loop {
        match http::bind_page(addr).await {
            Ok(listener) => break listener,
            Err(err)
                if lease.is_some()
                    && started.elapsed() < BIND_RETRY
                    && err
                        .downcast_ref::<std::io::Error>()
                        .is_some_and(|e| e.kind() == std::io::ErrorKind::AddrInUse) =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => return Err(err),
        }
    };
    let copy = listener.into_std().context("cannot take the page's listener")?;
    let listener = tokio::net::TcpListener::from_std(copy.try_clone().context("cannot copy the page's listener")?)
        .context("cannot serve the page's listener")?;
    let stop = CancellationToken::new();
    let local = listener.local_addr().context("cannot read the bound address")?;
    let task = http::serve_page_on(host, listener, stop.clone())?.context("the approval page is not served")?;
    if let Some(lease) = &mut lease {
        let holder = Holder {
            pid: std::process::id(),
            base: http::page_base(host, local),
            since_ms: now_ms(),
            handed_over: false,
        };
        let _ = lease.note(&holder);
    }
    Ok(Serving { lease, listener: copy, stop, task })
}

/// While another process serves the page, look every
/// [`PAGE_TAKEOVER_POLL`] whether its lease is free, and take the page
/// over once it is.
async fn take_over(
    host: Host,
    addr: SocketAddr,
    dir: PathBuf,
    serving: Arc<tokio::sync::Mutex<Option<Serving>>>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(PAGE_TAKEOVER_POLL) => {}
            () = stop.cancelled() => return,
        }
        let lease = match PageLease::try_take(&dir) {
            Ok(Some(lease)) => lease,
            Ok(None) => continue,
            Err(err) => {
                tracing::warn!("this process cannot take the approval page over: {err}");
                return;
            }
        };
        match serve(&host, addr, Some(lease)).await {
            Ok(page) => {
                tracing::info!("the approval page's process ended; this one serves the page now");
                *serving.lock().await = Some(page);
            }
            Err(err) => tracing::warn!("this process cannot take the approval page over: {err:#}"),
        }
        return;
    }
}

/// Start `airlock __page` with `listener` as its standard input and the
/// lease (when there is one) as its standard output, in a process group of
/// its own, logging to [`PAGE_LOG_FILE`]; its process id.
fn hand_over(host: &Host, listener: std::net::TcpListener, lease: Option<&PageLease>) -> std::io::Result<u32> {
    use std::os::unix::process::CommandExt as _;
    let exe = std::env::current_exe()?;
    let mut command = Command::new(exe);
    if let Some(file) = &host.config().file {
        command.arg("--config").arg(std::path::absolute(file)?);
    }
    command.args(["-v", PAGE_SUBCOMMAND]);
    if lease.is_some() {
        command.arg("--lease");
    }
    command.stdin(Stdio::from(OwnedFd::from(listener)));
    command.stdout(match lease {
        Some(lease) => Stdio::from(lease.handover()?),
        None => Stdio::null(),
    });
    command.stderr(match host.approvals().state_dir().map(page_log) {
        Some(Ok(log)) => Stdio::from(log),
        _ => Stdio::null(),
    });
    command.process_group(0);
    Ok(command.spawn()?.id())
}

/// The page process's log, started anew.
fn page_log(dir: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(PAGE_LOG_FILE))
}

/// The body of `airlock __page`: serve the approval page on the listening
/// socket handed over as standard input (holding the lease handed over as
/// standard output, with `lease`) until no approval is pending, or until
/// SIGTERM. The host is built without an audit log, metrics or traces: the
/// next server keeps those.
///
/// # Errors
///
/// Standard input is not a listening socket, or the page cannot be served.
pub async fn serve_handed_page(host: Host, lease: bool) -> anyhow::Result<()> {
    let listener = std::net::TcpListener::from(take_descriptor(0)?);
    listener.set_nonblocking(true).context("cannot serve the page's listener")?;
    let lease = if lease { Some(PageLease::inherited(std::fs::File::from(take_descriptor(1)?))) } else { None };
    let listener = tokio::net::TcpListener::from_std(listener).context("cannot serve the page's listener")?;
    let local = listener.local_addr().context("standard input is not a listening socket")?;
    let base = http::page_base(&host, local);
    let mut lease = lease;
    if let Some(lease) = &mut lease {
        let holder = Holder { pid: std::process::id(), base: base.clone(), since_ms: now_ms(), handed_over: true };
        let _ = lease.note(&holder);
    }
    tracing::info!(
        "serving the approval page on {base}{PAGE_PATH} after the stdio server that opened its approvals ended, until \
         none waits for an answer"
    );
    // The page checks each approval's tool revision: the tools first (from
    // the compile cache the server filled); connections wait meanwhile.
    host.ready().await;
    let stop = CancellationToken::new();
    let Some(task) = http::serve_page_on(&host, listener, stop.clone())? else { return Ok(()) };
    loop {
        tokio::select! {
            () = tokio::time::sleep(PAGE_IDLE_CHECK) => {}
            () = shutdown::signal() => {
                tracing::info!("stopping the approval page (signal); the next Airlock process serves it");
                break;
            }
        }
        let held = lease.take();
        let stopping = stop.clone();
        let looked = host
            .approvals()
            .with_pending(move |pending| {
                if pending > 0 {
                    return Some(held);
                }
                stopping.cancel();
                if let Some(lease) = held {
                    lease.release();
                }
                None
            })
            .await;
        match looked {
            Ok(Some(held)) => lease = held,
            Ok(None) => {
                tracing::info!("no approval waits for an answer any more: the approval page stops");
                break;
            }
            Err(err) => {
                tracing::warn!("the approval page stops: {err}; the next Airlock process serves it");
                break;
            }
        }
    }
    stop.cancel();
    if let Some(lease) = lease {
        lease.release();
    }
    close(Some(task)).await;
    host.finish().await;
    Ok(())
}

/// A copy of descriptor `fd` (0 or 1, handed over), which then refers to
/// `/dev/null`: this process keeps one descriptor of what it was handed,
/// and closing that one closes it.
fn take_descriptor(fd: i32) -> anyhow::Result<OwnedFd> {
    let copy = match fd {
        0 => std::io::stdin().as_fd().try_clone_to_owned(),
        _ => std::io::stdout().as_fd().try_clone_to_owned(),
    }
    .context("cannot take the descriptor handed over")?;
    let null = std::fs::File::options().read(true).write(true).open("/dev/null").context("cannot open /dev/null")?;
    // SAFETY: dup2 takes two open descriptors and only changes which file
    // `fd` refers to; nothing in this process uses standard input or output.
    unsafe {
        libc::dup2(null.as_raw_fd(), fd);
    }
    Ok(copy)
}
