//! `corral serve --http 127.0.0.1:0` as a child process, for the suites that speak raw HTTP to
//! it: the host picks its port and prints its URL on stderr, which is read here and kept.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

/// A host serving HTTP, with everything it wrote on stderr so far (for failure messages).
pub struct HttpServe {
    pub child: Child,
    /// `http://127.0.0.1:PORT/mcp`, as the host printed it.
    pub url: String,
    pub stderr: Arc<Mutex<String>>,
}

/// `corral serve --plugins PLUGINS --http 127.0.0.1:0 --db DB EXTRA…`.
pub fn serve_command(plugins: &Path, db: &str, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
    command.args(["serve", "--plugins", plugins.to_str().unwrap(), "--http", "127.0.0.1:0", "--db", db]).args(extra);
    command
}

impl HttpServe {
    /// Starts `command` (a `corral serve --http 127.0.0.1:0`, or a shell that execs one) and
    /// waits up to `timeout` for the line that says where it serves.
    pub fn spawn(mut command: Command, timeout: Duration) -> HttpServe {
        let mut child = command
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let (pipe, log) = (child.stderr.take().unwrap(), stderr.clone());
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some((_, url)) = line.split_once("serving MCP over HTTP at ") {
                    let _ = tx.send(url.trim().to_owned());
                }
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let url = rx.recv_timeout(timeout).unwrap_or_else(|_| panic!("corral never listened; stderr:\n{}", stderr.lock().unwrap()));
        HttpServe { child, url, stderr }
    }
}

/// A host a test started ends with the test, whichever way the test ends (a failed assertion
/// included): none is left running behind the suite, where it would keep connecting to the
/// ports of servers that are gone (a later test's listener may get one of those ports).
impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
