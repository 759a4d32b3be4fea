//! The host's own spending on one call: open files and outgoing HTTP body
//! buffers, counted while the guest holds them and refused past the call's
//! limits.
//!
//! # Security
//!
//! Trusts nothing the guest does. wasmtime and wasmtime-wasi(-http) bound
//! most of what a guest can make the host hold (the resource table, header
//! maps, random bytes, data handed over in one host call; see
//! `sandbox::LiveInstance::new`), but two things they leave open:
//!
//! - **Open files.** Every `open-at` takes a host file descriptor, and
//!   nothing stops a guest from keeping thousands open until the whole
//!   process hits its descriptor limit. [`add_to_linker`] puts a wrapper
//!   in front of wasmtime-wasi's own `open-at` that refuses with the WASI
//!   error `quota` once the call holds [`crate::Limits::max_open_files`]
//!   (granted directories included).
//! - **Outgoing HTTP bodies.** Each body queues up to
//!   [`airlock_settings::limits::OUTGOING_BODY_BYTES`] on the host until it is sent,
//!   and a guest needs no network grant to create requests it never sends.
//!   A wrapper in front of `outgoing-request.body` and
//!   `outgoing-response.body` refuses a new body (the guest gets `error`)
//!   once the call holds [`crate::Limits::max_outgoing_bodies`].
//!
//! - **Disk.** wasmtime-wasi has no cap on what a guest writes through a
//!   read-write grant: one call could fill the file system (and with it the
//!   audit log's). Wrappers in front of `descriptor.write`,
//!   `write-via-stream` and `append-via-stream` (whose output streams are
//!   wrapped in a [`MeteredStream`]) count the bytes written and refuse a
//!   write that would pass [`crate::Limits::max_write_bytes`] with
//!   `insufficient-space`, before any of it reaches the file; wrappers in
//!   front of `open-at` (with `create`), `create-directory-at`,
//!   `symlink-at` and `link-at` count what they create and refuse with
//!   `quota` past [`crate::Limits::max_created_files`]. An `open-at` with
//!   `create` counts unless the file was there before it (looked up first;
//!   with `exclusive`, a success is a creation). Both counts are per call
//!   (a session's next call starts at zero). A file grown with `set-size`
//!   is sparse and not counted.
//!
//! Neither wasmtime-wasi nor wasmtime-wasi-http tells the host when a guest
//! closes something, so the counts are taken from what is still alive:
//! a file is open while any clone of its `Arc<File>` (the descriptor, a
//! stream over it, a blocking task) exists, which a [`Weak`] reference
//! observes exactly; a body is held while its request (or response) or its
//! `outgoing-body` resource is still in the call's resource table. A slot
//! reused by a newer resource of the same type only makes the count err on
//! the high side.

use anyhow::Context as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor as _, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::http::types::{
    HostOutgoingRequest as RequestHost, HostOutgoingResponse as ResponseHost,
};
use wasmtime_wasi_http::p2::body::HostOutgoingBody;
use wasmtime_wasi_http::p2::types::{HostOutgoingRequest, HostOutgoingResponse};

/// The `wasi:filesystem/types` version wasmtime-wasi 48 links; a guest's
/// import of any 0.2.x version resolves to it.
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";
/// The `wasi:http/types` version wasmtime-wasi-http 48 links.
const HTTP_TYPES: &str = "wasi:http/types@0.2.12";

/// What a call holds on the host that its limits cap, and the first
/// refusal, for the model.
#[derive(Debug)]
pub struct HostBudget {
    max_open_files: usize,
    /// Granted directories: open for the whole call.
    preopens: usize,
    /// Files and directories this call opened.
    open_files: Vec<Weak<std::fs::File>>,
    max_bodies: usize,
    bodies: Vec<HeldBody>,
    /// Bytes written and entries created, shared with the call's metered
    /// streams.
    writes: Arc<WriteMeter>,
    refusal: Option<String>,
}

/// What a call wrote through its granted directories, against its caps.
/// Shared between the budget and the [`MeteredStream`]s of the call, which
/// cannot reach the store.
#[derive(Debug)]
pub struct WriteMeter {
    max_bytes: u64,
    max_created: u64,
    written: AtomicU64,
    created: AtomicU64,
    /// The first refusal of a metered stream.
    refusal: Mutex<Option<String>>,
}

/// `ENOSPC`: the errno wasmtime-wasi turns into `insufficient-space` (28
/// on Linux, the BSDs and macOS).
const ENOSPC: i32 = 28;

impl WriteMeter {
    fn new(max_bytes: u64, max_created: u64) -> Self {
        Self {
            max_bytes,
            max_created,
            written: AtomicU64::new(0),
            created: AtomicU64::new(0),
            refusal: Mutex::new(None),
        }
    }

    /// Takes `bytes` from what is left, or says why not (the message for
    /// the model) and takes nothing.
    fn take(&self, bytes: u64) -> Result<(), String> {
        let max = self.max_bytes;
        let taken = self.written.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |written| {
            written.checked_add(bytes).filter(|&total| total <= max)
        });
        taken.map(drop).map_err(|written| {
            format!(
                "a write of {bytes} bytes to a file was refused with `insufficient-space`: the tool tried to \
                 write more than its `max_write_bytes = {max}` allows (this call had already written {written} \
                 bytes through its granted directories); write less, or an operator can raise `max_write_bytes` \
                 in airlock.toml"
            )
        })
    }

    /// Gives back bytes taken for a write that did not happen.
    fn refund(&self, bytes: u64) {
        let _ = self.written.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| Some(w.saturating_sub(bytes)));
    }

    /// Whether one more entry may be created, or why not.
    fn may_create(&self, what: &str) -> Result<(), String> {
        let created = self.created.load(Ordering::SeqCst);
        if created < self.max_created {
            return Ok(());
        }
        let max = self.max_created;
        Err(format!(
            "creating {what} was refused with `quota`: the tool tried to create more files than its \
             `max_created_files = {max}` allows (this call had already created {created} files, directories and \
             links in its granted directories); create fewer, or an operator can raise `max_created_files` in \
             airlock.toml"
        ))
    }

    fn created_one(&self) {
        self.created.fetch_add(1, Ordering::SeqCst);
    }

    fn refuse(&self, message: String) {
        tracing::debug!("{message}");
        self.refusal.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert(message);
    }
}

/// An output stream over a file, counted against its call's
/// `max_write_bytes`. Every way to write into it (`write`,
/// `blocking-write-and-flush`, `write-zeroes`, `splice`) ends in
/// [`OutputStream::write`] here: the provided methods of the trait are
/// kept, so none reaches the inner stream uncounted.
pub struct MeteredStream {
    inner: DynOutputStream,
    meter: Arc<WriteMeter>,
}

#[async_trait::async_trait]
impl Pollable for MeteredStream {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[async_trait::async_trait]
impl OutputStream for MeteredStream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        let len = bytes.len() as u64;
        if let Err(message) = self.meter.take(len) {
            self.meter.refuse(message);
            return Err(StreamError::LastOperationFailed(std::io::Error::from_raw_os_error(ENOSPC).into()));
        }
        let written = self.inner.write(bytes);
        if written.is_err() {
            self.meter.refund(len);
        }
        written
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

/// An outgoing body and what holds its buffer: its request or response
/// (until sent) and the `outgoing-body` resource (until finished).
#[derive(Debug, Clone, Copy)]
struct HeldBody {
    parent: Parent,
    body: u32,
}

#[derive(Debug, Clone, Copy)]
enum Parent {
    Request(u32),
    Response(u32),
}

impl HostBudget {
    /// The budget of a call with `preopens` granted directories.
    pub fn new(max_open_files: usize, preopens: usize, max_bodies: usize) -> Self {
        Self {
            max_open_files,
            preopens,
            open_files: Vec::new(),
            max_bodies,
            bodies: Vec::new(),
            writes: Arc::new(WriteMeter::new(
                airlock_settings::limits::DEFAULT_MAX_WRITE_BYTES,
                airlock_settings::limits::DEFAULT_MAX_CREATED_FILES,
            )),
            refusal: None,
        }
    }

    /// This budget with the call's caps on bytes written and entries
    /// created in its granted directories.
    pub fn with_write_caps(mut self, max_write_bytes: u64, max_created_files: u64) -> Self {
        self.writes = Arc::new(WriteMeter::new(max_write_bytes, max_created_files));
        self
    }

    /// Files and directories the call holds open now.
    pub fn open_files(&mut self) -> usize {
        self.open_files.retain(|file| file.strong_count() > 0);
        self.preopens + self.open_files.len()
    }

    /// Outgoing bodies the call holds now.
    fn held_bodies(&mut self, table: &ResourceTable) -> usize {
        self.bodies.retain(|held| held.is_alive(table));
        self.bodies.len()
    }

    /// The first refusal of this call (or of this session call), if any.
    pub fn refusal(&self) -> Option<String> {
        self.refusal.clone().or_else(|| self.writes.refusal.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    /// Start a new call of a session: counts of what the guest holds stay
    /// (it still holds it), the refusal note goes, and the write caps
    /// start over (they are per call).
    pub fn renew(&mut self) {
        self.refusal = None;
        self.writes.written.store(0, Ordering::SeqCst);
        self.writes.created.store(0, Ordering::SeqCst);
        *self.writes.refusal.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn refuse(&mut self, message: String) {
        tracing::debug!("{message}");
        self.refusal.get_or_insert(message);
    }
}

impl HeldBody {
    fn is_alive(&self, table: &ResourceTable) -> bool {
        let parent = match self.parent {
            Parent::Request(rep) => table.get(&Resource::<HostOutgoingRequest>::new_borrow(rep)).is_ok(),
            Parent::Response(rep) => table.get(&Resource::<HostOutgoingResponse>::new_borrow(rep)).is_ok(),
        };
        parent || table.get(&Resource::<HostOutgoingBody>::new_borrow(self.body)).is_ok()
    }
}

/// The host file behind a descriptor (a file or a directory).
fn host_file(descriptor: &Descriptor) -> Weak<std::fs::File> {
    match descriptor {
        Descriptor::File(file) => std::sync::Arc::downgrade(&file.file),
        Descriptor::Dir(dir) => std::sync::Arc::downgrade(&dir.dir),
    }
}

/// What the budget needs of the store it meters: wasi's and wasi-http's
/// views, and the call's budget with the resource table it counts in. The
/// sandbox's store type implements it; the budget never sees the rest.
pub trait Metered: WasiView + WasiHttpView + Send + 'static {
    /// The call's budget and the resource table it counts in.
    fn budget_and_table(&mut self) -> (&mut HostBudget, &ResourceTable);
}

/// Put the counting wrappers in front of wasmtime-wasi's `open-at` and
/// wasmtime-wasi-http's `body` methods. Call after WASI and `wasi:http`
/// are linked.
///
/// # Errors
///
/// The interfaces are not linked at the versions this module expects
/// (a wasmtime upgrade changed them).
pub fn add_to_linker<T: Metered>(linker: &mut Linker<T>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut fs = linker.instance(FILESYSTEM_TYPES).map_err(anyhow::Error::from)?;
    fs.func_wrap_async("[method]descriptor.open-at", open_at::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} open-at"))?;
    fs.func_wrap_async("[method]descriptor.write", write::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} write"))?;
    fs.func_wrap("[method]descriptor.write-via-stream", write_via_stream::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} write-via-stream"))?;
    fs.func_wrap("[method]descriptor.append-via-stream", append_via_stream::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} append-via-stream"))?;
    fs.func_wrap_async("[method]descriptor.create-directory-at", create_directory_at::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} create-directory-at"))?;
    fs.func_wrap_async("[method]descriptor.symlink-at", symlink_at::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} symlink-at"))?;
    fs.func_wrap_async("[method]descriptor.link-at", link_at::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} link-at"))?;
    let mut http = linker.instance(HTTP_TYPES).map_err(anyhow::Error::from)?;
    http.func_wrap("[method]outgoing-request.body", request_body::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {HTTP_TYPES} outgoing-request.body"))?;
    http.func_wrap("[method]outgoing-response.body", response_body::<T>)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {HTTP_TYPES} outgoing-response.body"))?;
    linker.allow_shadowing(false);
    Ok(())
}

type OpenAtParams = (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags);
/// What `open-at` returns to the guest, or a trap.
type OpenAtResult = wasmtime::Result<(Result<Resource<Descriptor>, ErrorCode>,)>;

/// `descriptor.open-at`, refused with `quota` at the open-file cap, and
/// at the cap on created files when it would create one.
fn open_at<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (dir, path_flags, path, open_flags, flags): OpenAtParams,
) -> Box<dyn Future<Output = OpenAtResult> + Send + '_> {
    Box::new(async move {
        // Whether this open may create a file: with `exclusive` it creates
        // or fails; otherwise it creates unless the path exists now. (A
        // lookup that fails for another reason counts as a creation if the
        // open then succeeds: the count errs on the high side.)
        let creates = if !open_flags.contains(OpenFlags::CREATE) {
            false
        } else if open_flags.contains(OpenFlags::EXCLUSIVE) {
            true
        } else {
            let probe = Resource::<Descriptor>::new_borrow(dir.rep());
            store.data_mut().filesystem().stat_at(probe, path_flags, path.clone()).await.is_err()
        };
        if creates {
            let meter = store.data_mut().budget_and_table().0.writes.clone();
            if let Err(message) = meter.may_create(&format!("{path:?}")) {
                store.data_mut().budget_and_table().0.refuse(message);
                return Ok((Err(ErrorCode::Quota),));
            }
        }
        let opened = opened_counted(&mut store, dir, path_flags, path, open_flags, flags).await?;
        if creates && opened.0.is_ok() {
            store.data_mut().budget_and_table().0.writes.created_one();
        }
        Ok(opened)
    })
}

/// `open-at` under the open-file cap.
async fn opened_counted<T: Metered>(
    store: &mut StoreContextMut<'_, T>,
    dir: Resource<Descriptor>,
    path_flags: PathFlags,
    path: String,
    open_flags: OpenFlags,
    flags: DescriptorFlags,
) -> OpenAtResult {
    let (budget, _) = store.data_mut().budget_and_table();
    let open = budget.open_files();
    if open >= budget.max_open_files {
        let max = budget.max_open_files;
        budget.refuse(format!(
            "opening {path:?} was refused with `quota`: this call already holds {open} open files and \
             directories (granted directories included), the most `max_open_files` = {max} allows; \
             close files before opening more, or an operator can raise `max_open_files` in airlock.toml"
        ));
        return Ok((Err(ErrorCode::Quota),));
    }
    let opened = store.data_mut().filesystem().open_at(dir, path_flags, path, open_flags, flags).await;
    match opened {
        Ok(fd) => {
            let (budget, table) = store.data_mut().budget_and_table();
            // The descriptor was pushed a moment ago; if it is somehow
            // gone, it holds no file either.
            if let Ok(descriptor) = table.get(&fd) {
                budget.open_files.push(host_file(descriptor));
            }
            Ok((Ok(fd),))
        }
        Err(err) => Ok((Err(err.downcast()?),)),
    }
}

/// What a filesystem method returns to the guest, or a trap.
type FsReturn<T> = wasmtime::Result<(Result<T, ErrorCode>,)>;

/// The guest's error code for a refused filesystem call, or the trap
/// wasmtime-wasi raised.
fn guest_error<T>(err: wasmtime_wasi::p2::FsError) -> FsReturn<T> {
    Ok((Err(err.downcast()?),))
}

/// `descriptor.write`, refused with `insufficient-space` when the bytes
/// would pass `max_write_bytes` (nothing of them is written then).
fn write<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (fd, buffer, offset): (Resource<Descriptor>, Vec<u8>, u64),
) -> Box<dyn Future<Output = FsReturn<u64>> + Send + '_> {
    Box::new(async move {
        let len = buffer.len() as u64;
        let meter = store.data_mut().budget_and_table().0.writes.clone();
        if let Err(message) = meter.take(len) {
            store.data_mut().budget_and_table().0.refuse(message);
            return Ok((Err(ErrorCode::InsufficientSpace),));
        }
        let written = store.data_mut().filesystem().write(fd, buffer, offset).await;
        match written {
            Ok(written) => {
                meter.refund(len.saturating_sub(written));
                Ok((Ok(written),))
            }
            Err(err) => {
                meter.refund(len);
                guest_error(err)
            }
        }
    })
}

/// `descriptor.write-via-stream`: wasmtime-wasi's stream, metered.
fn write_via_stream<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (fd, offset): (Resource<Descriptor>, u64),
) -> FsReturn<Resource<DynOutputStream>> {
    let made = store.data_mut().filesystem().write_via_stream(fd, offset);
    match made {
        Ok(stream) => metered(store.data_mut(), stream),
        Err(err) => guest_error(err),
    }
}

/// `descriptor.append-via-stream`: wasmtime-wasi's stream, metered.
fn append_via_stream<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (fd,): (Resource<Descriptor>,),
) -> FsReturn<Resource<DynOutputStream>> {
    let made = store.data_mut().filesystem().append_via_stream(fd);
    match made {
        Ok(stream) => metered(store.data_mut(), stream),
        Err(err) => guest_error(err),
    }
}

/// Replaces the stream wasmtime-wasi just put in the table (the guest has
/// not seen it yet) with a [`MeteredStream`] around it.
fn metered<T: Metered>(ctx: &mut T, stream: Resource<DynOutputStream>) -> FsReturn<Resource<DynOutputStream>> {
    let meter = ctx.budget_and_table().0.writes.clone();
    let table = ctx.ctx().table;
    let inner = table.delete(stream)?;
    let wrapped: DynOutputStream = Box::new(MeteredStream { inner, meter });
    Ok((Ok(table.push(wrapped)?),))
}

/// Refuses a creation at `max_created_files` (`Err` holds what the guest
/// gets).
fn may_create<T: Metered>(ctx: &mut T, what: &str) -> Result<Arc<WriteMeter>, ErrorCode> {
    let meter = ctx.budget_and_table().0.writes.clone();
    match meter.may_create(what) {
        Ok(()) => Ok(meter),
        Err(message) => {
            ctx.budget_and_table().0.refuse(message);
            Err(ErrorCode::Quota)
        }
    }
}

/// Counts a creation that succeeded.
fn count_created(meter: &WriteMeter, done: wasmtime_wasi::p2::FsResult<()>) -> FsReturn<()> {
    match done {
        Ok(()) => {
            meter.created_one();
            Ok((Ok(()),))
        }
        Err(err) => guest_error(err),
    }
}

/// `descriptor.create-directory-at`, counted as a created entry.
fn create_directory_at<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (dir, path): (Resource<Descriptor>, String),
) -> Box<dyn Future<Output = FsReturn<()>> + Send + '_> {
    Box::new(async move {
        let meter = match may_create(store.data_mut(), &format!("the directory {path:?}")) {
            Ok(meter) => meter,
            Err(code) => return Ok((Err(code),)),
        };
        let done = store.data_mut().filesystem().create_directory_at(dir, path).await;
        count_created(&meter, done)
    })
}

/// `descriptor.symlink-at`, counted as a created entry.
fn symlink_at<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (dir, old_path, new_path): (Resource<Descriptor>, String, String),
) -> Box<dyn Future<Output = FsReturn<()>> + Send + '_> {
    Box::new(async move {
        let meter = match may_create(store.data_mut(), &format!("the link {new_path:?}")) {
            Ok(meter) => meter,
            Err(code) => return Ok((Err(code),)),
        };
        let done = store.data_mut().filesystem().symlink_at(dir, old_path, new_path).await;
        count_created(&meter, done)
    })
}

type LinkAtParams = (Resource<Descriptor>, PathFlags, String, Resource<Descriptor>, String);

/// `descriptor.link-at`, counted as a created entry.
fn link_at<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (dir, old_flags, old_path, new_dir, new_path): LinkAtParams,
) -> Box<dyn Future<Output = FsReturn<()>> + Send + '_> {
    Box::new(async move {
        let meter = match may_create(store.data_mut(), &format!("the link {new_path:?}")) {
            Ok(meter) => meter,
            Err(code) => return Ok((Err(code),)),
        };
        let done = store.data_mut().filesystem().link_at(dir, old_flags, old_path, new_dir, new_path).await;
        count_created(&meter, done)
    })
}

/// `outgoing-request.body`, refused (`error`) at the body cap.
fn request_body<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (request,): (Resource<HostOutgoingRequest>,),
) -> wasmtime::Result<(Result<Resource<HostOutgoingBody>, ()>,)> {
    let parent = Parent::Request(request.rep());
    if !may_buffer_body(store.data_mut()) {
        return Ok((Err(()),));
    }
    let body = RequestHost::body(&mut store.data_mut().http(), request)?;
    Ok((held(store.data_mut(), parent, body),))
}

/// `outgoing-response.body`, refused (`error`) at the body cap. A tool is
/// no server, but a guest can still fill the body of a response it never
/// returns.
fn response_body<T: Metered>(
    mut store: StoreContextMut<'_, T>,
    (response,): (Resource<HostOutgoingResponse>,),
) -> wasmtime::Result<(Result<Resource<HostOutgoingBody>, ()>,)> {
    let parent = Parent::Response(response.rep());
    if !may_buffer_body(store.data_mut()) {
        return Ok((Err(()),));
    }
    let body = ResponseHost::body(&mut store.data_mut().http(), response)?;
    Ok((held(store.data_mut(), parent, body),))
}

fn may_buffer_body<T: Metered>(ctx: &mut T) -> bool {
    let (budget, table) = ctx.budget_and_table();
    let held = budget.held_bodies(table);
    if held < budget.max_bodies {
        return true;
    }
    let max = budget.max_bodies;
    budget.refuse(format!(
        "an outgoing HTTP body was refused: this call already holds {held} unsent or unfinished bodies, the \
         most its host memory budget allows ({max} of {} KiB each); send or drop requests before creating more, \
         or an operator can raise `host_memory_mib` in airlock.toml",
        airlock_settings::limits::OUTGOING_BODY_BYTES >> 10
    ));
    false
}

fn held<T: Metered>(
    ctx: &mut T,
    parent: Parent,
    body: Result<Resource<HostOutgoingBody>, ()>,
) -> Result<Resource<HostOutgoingBody>, ()> {
    if let Ok(body) = &body {
        let (budget, _) = ctx.budget_and_table();
        budget.bodies.push(HeldBody { parent, body: body.rep() });
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_files_count_live_files_and_preopens() {
        let mut budget = HostBudget::new(4, 1, 1);
        let file = std::sync::Arc::new(std::fs::File::open("/dev/null").unwrap());
        let stream_view = file.clone();
        budget.open_files.push(std::sync::Arc::downgrade(&file));
        assert_eq!(budget.open_files(), 2);
        drop(file);
        assert_eq!(budget.open_files(), 2, "a stream still holds the file open");
        drop(stream_view);
        assert_eq!(budget.open_files(), 1, "only the granted directory is left");
    }

    #[test]
    fn write_meter_takes_up_to_the_cap_and_refunds() {
        let meter = WriteMeter::new(100, 1);
        assert_eq!(meter.take(60), Ok(()));
        let refused = meter.take(41).unwrap_err();
        assert!(refused.contains("`max_write_bytes = 100`") && refused.contains("already written 60"), "{refused}");
        assert_eq!(meter.take(40), Ok(()), "a refused write took nothing");
        meter.refund(30);
        assert_eq!(meter.take(30), Ok(()));
        assert!(meter.take(1).is_err());
        assert!(meter.take(u64::MAX).is_err(), "no overflow");
        assert_eq!(meter.may_create("a"), Ok(()));
        meter.created_one();
        let refused = meter.may_create("\"b\"").unwrap_err();
        assert!(refused.contains("`max_created_files = 1`") && refused.contains("\"b\""), "{refused}");

        let mut budget = HostBudget::new(4, 0, 1).with_write_caps(10, 0);
        assert!(budget.writes.take(11).is_err());
        budget.writes.refuse("stream refused".into());
        assert_eq!(budget.refusal().as_deref(), Some("stream refused"));
        assert_eq!(budget.writes.take(10), Ok(()));
        budget.renew();
        assert_eq!(budget.refusal(), None);
        assert_eq!(budget.writes.take(10), Ok(()), "the cap is per call");
    }

    #[test]
    fn bodies_count_while_request_or_body_is_in_the_table() {
        let mut table = ResourceTable::new();
        let mut budget = HostBudget::new(1, 0, 1);
        let body = table.push(7_u8).unwrap();
        budget.bodies.push(HeldBody { parent: Parent::Request(body.rep()), body: body.rep() });
        assert_eq!(budget.held_bodies(&table), 0, "a slot of another type holds no body");
        assert!(budget.refusal().is_none());
        budget.refuse("first".into());
        budget.refuse("second".into());
        assert_eq!(budget.refusal().as_deref(), Some("first"));
        budget.renew();
        assert!(budget.refusal().is_none());
    }
}
