//! `airlock:tool/caller` (contracts 0.2.0 and 0.3.0): the caller of the
//! call being served ([`Caller`], see `airlock_core::caller`) as the guest
//! reads it. The guest reads a copy and cannot change what the host holds.
//!
//! The interface is the same in both versions, but each version's bindings
//! have their own types, so it is implemented and linked once per version
//! (`caller!` below), from the one view of the store.

use airlock_core::caller::Caller;

/// The caller as `airlock:tool/caller` reads it from a store: the call
/// being served's, or `None` while the metadata is read. The store type
/// projects its caller into this view when the interface is linked
/// ([`add_to_linker`]).
pub(crate) struct CallerView<'a>(pub(crate) Option<&'a Caller>);

impl wasmtime::component::HasData for CallerView<'static> {
    type Data<'a> = CallerView<'a>;
}

/// What `get` says outside a call.
const NOT_SERVING: &str = "airlock:tool/caller.get was called while no call is being served (the host was reading \
                           the tool's metadata); read the caller only in handler.call";

/// The host side of one version's `caller` interface.
macro_rules! caller {
    ($version:ident) => {
        mod $version {
            use super::{CallerView, NOT_SERVING};
            use crate::bindings::$version::airlock::tool::caller as wit;
            use airlock_core::caller::Caller;

            /// The caller as the WIT record the guest receives.
            fn to_wit(caller: &Caller) -> wit::CallerInfo {
                wit::CallerInfo {
                    principal: caller.principal.clone(),
                    attributes: caller
                        .facts
                        .attributes
                        .iter()
                        .map(|(name, value)| wit::Attribute { name: name.clone(), value: value.clone() })
                        .collect(),
                    parents: caller
                        .facts
                        .parents
                        .iter()
                        .map(|(entity_type, id)| wit::Parent { entity_type: entity_type.clone(), id: id.clone() })
                        .collect(),
                    call_id: caller.call_id.clone(),
                    session_id: caller.session.clone(),
                }
            }

            impl wit::Host for CallerView<'_> {
                fn get(&mut self) -> wasmtime::Result<wit::CallerInfo> {
                    match self.0 {
                        Some(caller) => Ok(to_wit(caller)),
                        None => Err(wasmtime::format_err!("{NOT_SERVING}")),
                    }
                }
            }

            /// Link this version's interface.
            pub(super) fn add_to_linker<T: Send + 'static>(
                linker: &mut wasmtime::component::Linker<T>,
                project: fn(&mut T) -> CallerView<'_>,
            ) -> wasmtime::Result<()> {
                wit::add_to_linker::<T, CallerView<'static>>(linker, project)
            }
        }
    };
}

caller!(v0_2);
caller!(v0_3);

/// Link `airlock:tool/caller` of every contract version that has it into
/// `linker`, answering from the caller `project` finds in the store's
/// data.
///
/// # Errors
///
/// The interface is already linked.
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut wasmtime::component::Linker<T>,
    project: fn(&mut T) -> CallerView<'_>,
) -> wasmtime::Result<()> {
    v0_2::add_to_linker(linker, project)?;
    v0_3::add_to_linker(linker, project)
}
