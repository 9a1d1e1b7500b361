//! Running a project's build command, and stopping it when a newer save supersedes it.
//!
//! The command runs under `sh -c` in the project directory, in a process group of its own, with
//! stdout and stderr on one pipe (so errors stay next to the lines they follow). Dropping the
//! future of [`run`] before it finishes kills the whole group: `./build.sh` starts cargo, which
//! starts rustc, and killing the shell alone would leave them writing the output a newer build
//! is about to write.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a build ended.
#[derive(Debug)]
pub struct Finished {
    /// Whether the command exited with status 0.
    pub success: bool,
    /// How it exited, for people: `exit status: 101`, `signal: 9 (SIGKILL)`.
    pub status: String,
    /// stdout and stderr, interleaved as written.
    pub output: String,
    /// Wall-clock time from start to exit.
    pub took: Duration,
}

/// Runs `command` in `dir` to its end. The command is killed, with everything it started, if
/// the returned future is dropped first.
pub async fn run(dir: &Path, command: &str) -> std::io::Result<Finished> {
    let started = Instant::now();
    let (mut reader, writer) = std::io::pipe()?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(command).current_dir(dir).stdin(Stdio::null()).stdout(writer.try_clone()?).stderr(writer);
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn()?;
    // The command holds the pipe's write ends: dropped, so the reader sees the end of output
    // when the build's processes are gone.
    drop(cmd);
    let group = Group(child.id());
    let read = tokio::task::spawn_blocking(move || {
        let mut bytes = Vec::new();
        let _ = reader.read_to_end(&mut bytes);
        bytes
    });
    let status = tokio::task::spawn_blocking(move || child.wait()).await.map_err(std::io::Error::other)??;
    // Anything the command left running in its group would hold the pipe open.
    drop(group);
    let output = read.await.map_err(std::io::Error::other)?;
    Ok(Finished { success: status.success(), status: status.to_string(), output: String::from_utf8_lossy(&output).into_owned(), took: started.elapsed() })
}

/// A build's process group, killed when dropped.
struct Group(u32);

impl Drop for Group {
    fn drop(&mut self) {
        let Ok(pgid) = libc::pid_t::try_from(self.0) else { return };
        // SAFETY: killpg only sends a signal; a group that is already gone is ESRCH, ignored.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn output_and_status_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let done = run(dir.path(), "echo out; echo err >&2; exit 3").await.unwrap();
        assert!(!done.success);
        assert!(done.status.contains('3'), "{}", done.status);
        assert_eq!(done.output, "out\nerr\n");
        let done = run(dir.path(), "pwd").await.unwrap();
        assert!(done.success);
        assert_eq!(Path::new(done.output.trim()).canonicalize().unwrap(), dir.path().canonicalize().unwrap());
    }

    #[tokio::test]
    async fn a_dropped_build_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        // A shell that starts a child which outlives a killed parent unless its group dies too.
        let command = format!("sleep 600 & echo $! > {0}.tmp; mv {0}.tmp {0}; wait", pids.display());
        let build = tokio::spawn({
            let dir = dir.path().to_owned();
            async move { run(&dir, &command).await }
        });
        let pid: i32 = loop {
            if let Ok(text) = std::fs::read_to_string(&pids) {
                break text.trim().parse().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        build.abort();
        let _ = build.await;
        // The sleeper is killed (and reaped by init, as its shell is gone too).
        let alive = |pid: i32| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
        let deadline = Instant::now() + Duration::from_secs(60);
        while alive(pid) {
            assert!(Instant::now() < deadline, "the build's child {pid} outlived it");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
