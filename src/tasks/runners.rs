//! Which host processes are alive, for a task database that several hosts share (two MCP
//! clients that each start corral over stdio, say).
//!
//! Each host holds an exclusive lock on its own file in `DB.hosts/` for as long as it runs;
//! the operating system drops the lock when the process dies, however it dies. A lock that
//! can be taken therefore belongs to a host that is gone, and its unfinished tasks are
//! orphans to recover.

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::path::{Path, PathBuf};

/// This host process as a runner of tasks in a shared database, and who else is alive.
pub struct Runners {
    id: String,
    /// The store keeps the hosts' heartbeats (PostgreSQL) and claims dead hosts' tasks itself.
    shared: bool,
    /// `None` for an in-memory database, which no other process can see.
    dir: Option<PathBuf>,
    _lock: Option<File>,
}

impl Runners {
    /// Registers this process as a runner of tasks stored in `db`.
    pub fn register(db: &Path) -> io::Result<Runners> {
        let id = uuid::Uuid::new_v4().to_string();
        if db == Path::new(":memory:") {
            return Ok(Runners { id, shared: false, dir: None, _lock: None });
        }
        let mut dir = db.as_os_str().to_owned();
        dir.push(".hosts");
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir)?;
        let lock = OpenOptions::new().create(true).write(true).truncate(true).open(dir.join(format!("{id}.lock")))?;
        lock.lock()?;
        Ok(Runners { id, shared: false, dir: Some(dir), _lock: Some(lock) })
    }

    /// This process as a runner of tasks in a database whose store tells live hosts from dead
    /// ones itself, by heartbeat (PostgreSQL): no lock file, and [`Runners::is_alive`] leaves
    /// every other host alone (recovery goes through `TaskStore::claim_orphans`).
    pub fn shared() -> Runners {
        Runners { id: uuid::Uuid::new_v4().to_string(), shared: true, dir: None, _lock: None }
    }

    /// Whether the store decides which hosts are alive ([`Runners::shared`]).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// This host's id, recorded in every task it runs.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the host `runner` is still running. A dead host's lock file is removed.
    pub fn is_alive(&self, runner: &str) -> bool {
        if runner == self.id || self.shared {
            return true;
        }
        let Some(dir) = &self.dir else { return false };
        if runner.contains(['/', '\\']) || runner.contains("..") {
            return false;
        }
        let path = dir.join(format!("{runner}.lock"));
        let Ok(file) = OpenOptions::new().write(true).open(&path) else { return false };
        match file.try_lock() {
            Ok(()) => {
                let _ = std::fs::remove_file(&path);
                false
            }
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Error(e)) => {
                tracing::warn!("cannot tell whether host {runner} is alive ({e}); treating it as alive");
                true
            }
        }
    }
}

impl Drop for Runners {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(dir.join(format!("{}.lock", self.id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_host_is_alive_until_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("tasks.db");
        let a = Runners::register(&db).unwrap();
        let b = Runners::register(&db).unwrap();
        assert!(b.is_alive(a.id()) && a.is_alive(b.id()));
        let gone = a.id().to_owned();
        drop(a);
        assert!(!b.is_alive(&gone));
        assert!(!b.is_alive("never-existed"));
    }
}
