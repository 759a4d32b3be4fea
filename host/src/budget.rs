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
//!   [`crate::limits::OUTGOING_BODY_BYTES`] on the host until it is sent,
//!   and a guest needs no network grant to create requests it never sends.
//!   A wrapper in front of `outgoing-request.body` and
//!   `outgoing-response.body` refuses a new body (the guest gets `error`)
//!   once the call holds [`crate::Limits::max_outgoing_bodies`].
//!
//! Neither wasmtime-wasi nor wasmtime-wasi-http tells the host when a guest
//! closes something, so the counts are taken from what is still alive:
//! a file is open while any clone of its `Arc<File>` (the descriptor, a
//! stream over it, a blocking task) exists, which a [`Weak`] reference
//! observes exactly; a body is held while its request (or response) or its
//! `outgoing-body` resource is still in the call's resource table. A slot
//! reused by a newer resource of the same type only makes the count err on
//! the high side.

use crate::sandbox::CallCtx;
use anyhow::Context as _;
use std::sync::Weak;
use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, HostDescriptor as _, OpenFlags, PathFlags,
};
use wasmtime_wasi_http::WasiHttpView as _;
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
    refusal: Option<String>,
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
        Self { max_open_files, preopens, open_files: Vec::new(), max_bodies, bodies: Vec::new(), refusal: None }
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
    pub fn refusal(&self) -> Option<&str> {
        self.refusal.as_deref()
    }

    /// Start a new call of a session: counts stay (the guest still holds
    /// what it held), the refusal note goes.
    pub fn renew(&mut self) {
        self.refusal = None;
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

/// Put the counting wrappers in front of wasmtime-wasi's `open-at` and
/// wasmtime-wasi-http's `body` methods. Call after WASI and `wasi:http`
/// are linked.
///
/// # Errors
///
/// The interfaces are not linked at the versions this module expects
/// (a wasmtime upgrade changed them).
pub fn add_to_linker(linker: &mut Linker<CallCtx>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut fs = linker.instance(FILESYSTEM_TYPES).map_err(anyhow::Error::from)?;
    fs.func_wrap_async("[method]descriptor.open-at", open_at)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {FILESYSTEM_TYPES} open-at"))?;
    let mut http = linker.instance(HTTP_TYPES).map_err(anyhow::Error::from)?;
    http.func_wrap("[method]outgoing-request.body", request_body)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {HTTP_TYPES} outgoing-request.body"))?;
    http.func_wrap("[method]outgoing-response.body", response_body)
        .map_err(anyhow::Error::from)
        .with_context(|| format!("wrapping {HTTP_TYPES} outgoing-response.body"))?;
    linker.allow_shadowing(false);
    Ok(())
}

type OpenAtParams = (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags);
/// What `open-at` returns to the guest, or a trap.
type OpenAtResult = wasmtime::Result<(Result<Resource<Descriptor>, ErrorCode>,)>;

/// `descriptor.open-at`, refused with `quota` at the open-file cap.
fn open_at(
    mut store: StoreContextMut<'_, CallCtx>,
    (dir, path_flags, path, open_flags, flags): OpenAtParams,
) -> Box<dyn Future<Output = OpenAtResult> + Send + '_> {
    Box::new(async move {
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
    })
}

/// `outgoing-request.body`, refused (`error`) at the body cap.
fn request_body(
    mut store: StoreContextMut<'_, CallCtx>,
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
fn response_body(
    mut store: StoreContextMut<'_, CallCtx>,
    (response,): (Resource<HostOutgoingResponse>,),
) -> wasmtime::Result<(Result<Resource<HostOutgoingBody>, ()>,)> {
    let parent = Parent::Response(response.rep());
    if !may_buffer_body(store.data_mut()) {
        return Ok((Err(()),));
    }
    let body = ResponseHost::body(&mut store.data_mut().http(), response)?;
    Ok((held(store.data_mut(), parent, body),))
}

fn may_buffer_body(ctx: &mut CallCtx) -> bool {
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
        crate::limits::OUTGOING_BODY_BYTES >> 10
    ));
    false
}

fn held(
    ctx: &mut CallCtx,
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
    fn bodies_count_while_request_or_body_is_in_the_table() {
        let mut table = ResourceTable::new();
        let mut budget = HostBudget::new(1, 0, 1);
        let body = table.push(7_u8).unwrap();
        budget.bodies.push(HeldBody { parent: Parent::Request(body.rep()), body: body.rep() });
        assert_eq!(budget.held_bodies(&table), 0, "a slot of another type holds no body");
        assert!(budget.refusal().is_none());
        budget.refuse("first".into());
        budget.refuse("second".into());
        assert_eq!(budget.refusal(), Some("first"));
        budget.renew();
        assert!(budget.refusal().is_none());
    }
}
