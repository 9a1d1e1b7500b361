//! The notification channel replicas share, and the words of its payload lines (`"<id> <status>"`,
//! `"<id> progress <json>"`, `"<id> progress-row <json>"`, `"<id> answered"`): what
//! [`notify`](super::notify) writes and [`listen`](super::listen) reads.

/// The channel every status write notifies.
pub(super) const CHANNEL: &str = "corral_tasks";
/// What a payload line says of a progress report whose message is in the task's row.
pub(super) const PROGRESS_IN_ROW: &str = "progress-row";
/// What a payload line says of a task whose questions got answers: `"<id> answered"`.
pub(super) const ANSWERED: &str = "answered";
/// What a payload line says of a progress report.
pub(super) const PROGRESS: &str = "progress";
