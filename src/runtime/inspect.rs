//! What a component imports and exports, read from its type (for `corral inspect`).

use wasmtime::component::Component;
use wasmtime::Engine;

/// The names a component imports and exports, e.g. `wasi:cli/environment@0.2.6` or
/// `corral:plugin/tools@0.1.0`, each list in the component's own order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interfaces {
    /// Imported interfaces.
    pub imports: Vec<String>,
    /// Exported interfaces.
    pub exports: Vec<String>,
}

/// The imports and exports of `component`, compiled by `engine`.
pub(super) fn interfaces(engine: &Engine, component: &Component) -> Interfaces {
    let ty = component.component_type();
    Interfaces {
        imports: ty.imports(engine).map(|(name, _)| name.to_owned()).collect(),
        exports: ty.exports(engine).map(|(name, _)| name.to_owned()).collect(),
    }
}
