//! The caller secrets a new project declares (`corral new NAME --secret API_TOKEN`): a
//! `[secrets.NAME]` table of caller scope in its manifest and, in a Rust project, the line of its
//! starter tool that reads it from the environment, so the first build already shows where a
//! caller's credential comes in.

/// The manifest's tables, one per secret, to append to `NAME.toml` (empty for none).
pub fn manifest_tables(plugin: &str, secrets: &[String]) -> String {
    let mut out = String::new();
    if secrets.is_empty() {
        return out;
    }
    out.push_str(
        "\n# Credentials this plugin needs. Each caller gives their own (`scope = \"caller\"`): the\n\
         # host puts it into that caller's calls only, as the environment variable of the same\n\
         # name, and answers a caller who has not given it with a link to give it (or an error\n\
         # naming it) before the tool runs. `scope = \"host\"` takes one from the operator instead.\n",
    );
    for name in secrets {
        out.push_str(&format!(
            "[secrets.{name}]\nscope = \"caller\"\ndescription = \"Your {name} for the service {plugin} calls\"\n\
             # help_url = \"https://example.com/settings/tokens\"   # where a person gets one\n"
        ));
    }
    out
}

/// The Rust starter tool's lines that read each secret (empty for none), indented for its body.
pub fn rust_reads(plugin: &str, secrets: &[String]) -> String {
    let mut out = String::new();
    for name in secrets {
        let var = format!("_{}", name.to_ascii_lowercase());
        out.push_str(&format!(
            "    // {name}: the caller's own credential ([secrets.{name}] in {plugin}.toml). The host sets it\n    \
             // only in the calls of a caller who has given it and refuses the others before the tool\n    \
             // runs, so it is missing only under `cargo test`. Send it to the service you call; a\n    \
             // result or log line that holds it reaches nobody (the host writes `[secret {name}]`).\n    \
             let {var}: Option<String> = std::env::var(\"{name}\").ok();\n"
        ));
    }
    out
}

/// Refuses a name given twice: the manifest could not hold both tables.
pub fn check_distinct(secrets: &[String]) -> Result<(), String> {
    for (i, name) in secrets.iter().enumerate() {
        if secrets[..i].contains(name) {
            return Err(format!("--secret {name} is given twice"));
        }
    }
    Ok(())
}
