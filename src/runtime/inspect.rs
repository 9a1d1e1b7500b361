//! What a component imports and exports, read from its type (for `corral inspect`).

use wasmtime::component::Component;

use super::{PluginCode, Runtime};

/// The names a component imports and exports, e.g. `wasi:cli/environment@0.2.6` or
/// `corral:plugin/tools@0.1.0`, each list in the component's own order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interfaces {
    /// Imported interfaces.
    pub imports: Vec<String>,
    /// Exported interfaces.
    pub exports: Vec<String>,
}

impl Runtime {
    /// Compiles `bytes` and reads its imports and exports, without linking it: this works for a
    /// component whose imports the host cannot satisfy.
    pub fn interfaces_of(&self, bytes: &[u8]) -> Result<Interfaces, String> {
        let component = Component::new(&self.engine, bytes).map_err(|e| format!("{e:#}"))?;
        Ok(self.interfaces(&component))
    }

    /// The imports and exports of a plugin that is already compiled.
    pub fn interfaces_of_plugin(&self, code: &PluginCode) -> Interfaces {
        self.interfaces(code.pre.component())
    }

    fn interfaces(&self, component: &Component) -> Interfaces {
        let ty = component.component_type();
        Interfaces {
            imports: ty.imports(&self.engine).map(|(name, _)| name.to_owned()).collect(),
            exports: ty.exports(&self.engine).map(|(name, _)| name.to_owned()).collect(),
        }
    }
}
