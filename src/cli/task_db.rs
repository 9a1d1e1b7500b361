//! Where the task database is when `--db` does not say: `corral serve`, `corral tasks` and
//! `corral secrets` must open the same file by default, so it is named in one place.

use std::path::{Path, PathBuf};

/// `db`, or `tasks.db` in the per-user data directory.
pub fn task_db(db: Option<&Path>) -> anyhow::Result<PathBuf> {
    match db {
        Some(path) => Ok(path.to_owned()),
        None => {
            let base = dirs::data_local_dir().ok_or_else(|| anyhow::anyhow!("no per-user data directory is known here: pass --db PATH|URL"))?;
            Ok(base.join("corral").join("tasks.db"))
        }
    }
}
