//! A failed build's output cut down to what the author needs: the compiler's errors.
//!
//! A Rust build prints a page of `Compiling …` lines and warnings before the one error that
//! matters; clang prints warnings too; componentize-py and componentize-qjs end with the
//! error (a traceback, a syntax error). So: error diagnostics (rustc's `error[E…]:` and
//! `error:` blocks, clang's `FILE:LINE:COL: error:` ones) are kept whole with their source
//! excerpts, warnings and progress lines dropped; output with no recognisable diagnostic keeps
//! its last lines. Nothing is reworded: what is shown is the compiler's own text.

/// At most this many lines are shown; the rest is counted.
pub const MAX_LINES: usize = 40;

/// Lines kept from output without a recognisable diagnostic.
const TAIL_LINES: usize = 20;

/// The part of `output` that says why the build failed.
pub fn trim(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !is_progress(l)).collect();
    let mut kept: Vec<&str> = Vec::new();
    let mut in_error = false;
    for line in &lines {
        match header(line) {
            Some(Header::Error) => {
                in_error = true;
                kept.push(line);
            }
            Some(Header::Other) => in_error = false,
            None if in_error => kept.push(line),
            None => {}
        }
    }
    if kept.is_empty() {
        let nonblank: Vec<&str> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
        kept = nonblank[nonblank.len().saturating_sub(TAIL_LINES)..].to_vec();
    }
    while kept.last().is_some_and(|l| l.trim().is_empty()) {
        kept.pop();
    }
    let more = kept.len().saturating_sub(MAX_LINES);
    let mut text = kept[..kept.len() - more].join("\n");
    if more > 0 {
        text.push_str(&format!("\n… {more} more lines"));
    }
    text
}

enum Header {
    /// The first line of an error diagnostic.
    Error,
    /// The first line of anything else a compiler reports (a warning, a note about the build),
    /// or cargo's summary of errors already shown.
    Other,
}

fn header(line: &str) -> Option<Header> {
    // cargo's summaries repeat what the diagnostics said.
    if line.starts_with("error: could not compile") || line.starts_with("error: aborting due to") {
        return Some(Header::Other);
    }
    let rustc = |kind: &str| line.strip_prefix(kind).is_some_and(|rest| rest.starts_with(':') || rest.starts_with('['));
    if rustc("error") {
        return Some(Header::Error);
    }
    if rustc("warning") {
        return Some(Header::Other);
    }
    // clang and gcc: `file.c:12:5: error: …`, `file.c:3:1: warning: …`, `… fatal error: …`.
    if line.contains(": error: ") || line.contains(": fatal error: ") {
        return Some(Header::Error);
    }
    if line.contains(": warning: ") || line.ends_with(" generated.") {
        return Some(Header::Other);
    }
    None
}

/// cargo's and npm's progress lines, never part of an error.
fn is_progress(line: &str) -> bool {
    let word = line.trim_start().split(' ').next().unwrap_or("");
    matches!(word, "Compiling" | "Checking" | "Finished" | "Building" | "Updating" | "Downloading" | "Downloaded" | "Locking" | "Adding" | "Fresh" | "Blocking")
        && line.starts_with(' ')
}

#[cfg(test)]
mod tests {
    use super::*;

    const CARGO: &str = "   Compiling serde v1.0.228
   Compiling hello v0.1.0 (/tmp/hello)
warning: unused variable: `x`
 --> src/lib.rs:3:9
  |
3 |     let x = 1;
  |         ^ help: if this is intentional, prefix it with an underscore: `_x`

error[E0308]: mismatched types
  --> src/lib.rs:10:5
   |
10 |     42
   |     ^^ expected `String`, found integer

error: aborting due to 1 previous error; 1 warning emitted

For more information about this error, try `rustc --explain E0308`.
error: could not compile `hello` (lib) due to 1 previous error; 1 warning emitted
";

    #[test]
    fn a_rust_error_keeps_its_diagnostic_and_drops_progress_warnings_and_summaries() {
        let text = trim(CARGO);
        assert!(text.starts_with("error[E0308]: mismatched types"), "{text}");
        assert!(text.contains("expected `String`, found integer"), "{text}");
        assert!(!text.contains("Compiling"), "{text}");
        assert!(!text.contains("unused variable"), "{text}");
        assert!(!text.contains("could not compile"), "{text}");
    }

    #[test]
    fn a_clang_error_keeps_its_source_excerpt() {
        let out = "greet.c:3:1: warning: unused function 'f'\nstatic void f() {}\n^\ngreet.c:9:12: error: use of undeclared identifier 'nme'\n    return nme;\n           ^\n1 warning and 1 error generated.\n";
        assert_eq!(trim(out), "greet.c:9:12: error: use of undeclared identifier 'nme'\n    return nme;\n           ^");
    }

    #[test]
    fn output_without_diagnostics_keeps_its_end() {
        let mut out: String = (0..50).map(|i| format!("line {i}\n")).collect();
        out.push_str("SyntaxError: unexpected token in app.js:4\n");
        let text = trim(&out);
        assert_eq!(text.lines().count(), TAIL_LINES);
        assert!(text.ends_with("SyntaxError: unexpected token in app.js:4"), "{text}");
    }

    #[test]
    fn a_long_error_is_cut_and_says_how_much_was_left_out() {
        let out: String = std::iter::once("error: boom\n".to_owned()).chain((0..100).map(|i| format!("  detail {i}\n"))).collect();
        let text = trim(&out);
        assert_eq!(text.lines().count(), MAX_LINES + 1);
        assert!(text.ends_with("… 61 more lines"), "{text}");
    }
}
