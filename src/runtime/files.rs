//! Writes refused by a read-only `dirs` grant, made visible to the host.
//!
//! wasmtime-wasi enforces the grant itself (a read-only preopen refuses every write); this
//! wraps `descriptor.open-at`, where a guest asks to create, truncate or write a file, so that
//! such a refusal is also recorded in the call's denials and named in the tool result. Paths
//! outside every grant never reach the host (the guest's libc finds no preopen for them).

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::filesystem::types::{Descriptor, DescriptorFlags, ErrorCode, Host as _, HostDescriptor, OpenFlags, PathFlags};

use super::call::CallState;

/// The interface as wasmtime-wasi 48 defines it; guests importing older 0.2 versions match it.
const TYPES: &str = "wasi:filesystem/types@0.2.12";

type OpenAt = (Resource<Descriptor>, PathFlags, String, OpenFlags, DescriptorFlags);

/// Replaces `open-at` in `linker` (which must allow shadowing) by one that records refused writes.
pub(crate) fn guard_writes(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.instance(TYPES)?.func_wrap_async("[method]descriptor.open-at", |mut store, (dir, path_flags, path, open_flags, flags): OpenAt| {
        Box::new(async move {
            let state = store.data_mut();
            let mut view = WasiFilesystemCtxView { ctx: state.wasi.filesystem(), table: &mut state.table };
            let writing = flags.contains(DescriptorFlags::WRITE) || open_flags.intersects(OpenFlags::CREATE | OpenFlags::TRUNCATE);
            let opened = HostDescriptor::open_at(&mut view, dir, path_flags, path.clone(), open_flags, flags).await;
            match opened {
                Ok(descriptor) => Ok((Ok(descriptor),)),
                Err(e) => {
                    let code = view.convert_error_code(e)?;
                    if writing && matches!(code, ErrorCode::NotPermitted | ErrorCode::ReadOnly | ErrorCode::Access) {
                        state.denials.record(format!(
                            "dirs: writing `{path}` was denied: its directory is granted read-only; grant it with mode = \"rw\" under [permissions] dirs in the plugin's manifest"
                        ));
                    }
                    Ok((Err(code),))
                }
            }
        })
    })
}
