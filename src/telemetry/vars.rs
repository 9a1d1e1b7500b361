//! The `OTEL_*` variables, read through one lookup: the process's environment in the host, a
//! table in the tests (which cannot change the environment of a process whose other tests run
//! beside them).

/// A variable lookup: trimmed values, an empty one taken as unset.
pub struct Vars<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Vars<'static> {
    /// The process's environment.
    pub fn env() -> Vars<'static> {
        Vars { lookup: &|name| std::env::var(name).ok() }
    }
}

impl<'a> Vars<'a> {
    /// The variables `lookup` answers for.
    #[cfg(test)]
    pub fn from(lookup: &'a dyn Fn(&str) -> Option<String>) -> Vars<'a> {
        Vars { lookup }
    }

    /// `name`'s value, trimmed; `None` when unset or empty.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// `OTEL_EXPORTER_OTLP_TRACES_<name>`, or else `OTEL_EXPORTER_OTLP_<name>`: which one was
    /// read (to name it in an error) and its value.
    pub fn signal_or_generic(&self, name: &str) -> (String, Option<String>) {
        let signal = format!("OTEL_EXPORTER_OTLP_TRACES_{name}");
        match self.get(&signal) {
            Some(value) => (signal, Some(value)),
            None => {
                let generic = format!("OTEL_EXPORTER_OTLP_{name}");
                let value = self.get(&generic);
                (generic, value)
            }
        }
    }

    /// A count or a number of milliseconds: `default` when unset, an error naming the variable
    /// when it is not a number.
    pub fn number(&self, name: &str, default: usize) -> anyhow::Result<usize> {
        match self.get(name) {
            None => Ok(default),
            Some(value) => value.parse().map_err(|_| anyhow::anyhow!("{name}={value}: not a number")),
        }
    }
}
