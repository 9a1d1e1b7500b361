//! Whether a task its host left unfinished runs again: the retry boundaries checkpoints make.
//!
//! A checkpoint is the plugin's own progress state, opaque here, stored with the task in the
//! same transaction as its progress message (so the two never disagree), replacing the one
//! before. Each is a safe retry boundary: a task that runs again after an interruption is given
//! its last checkpoint, and whatever it did after that checkpoint is done again.

use super::model::Task;
use super::runner::TaskRunner;

/// What recovery does with a task its host left unfinished.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Queue it again.
    Run,
    /// End it `failed` with an `interrupted` outcome and this message.
    Interrupt(String),
}

/// Whether `task` runs again: one never started always does; past its retries it never does;
/// otherwise when its tool is idempotent, or it has checkpointed and its plugin is resumable.
pub(super) async fn verdict(runner: &dyn TaskRunner, task: &Task, started: bool) -> Verdict {
    if !started {
        return Verdict::Run;
    }
    let recovery = runner.recovery(&task.tool).await;
    if let Some(retries) = recovery.retries.filter(|n| task.attempts > *n) {
        return Verdict::Interrupt(format!(
            "interrupted by a host restart; it ran {} times and its plugin allows {retries} retries (retries in its manifest)",
            task.attempts
        ));
    }
    if runner.may_rerun(&task.tool).await || (recovery.resumable && task.checkpoint > 0) {
        return Verdict::Run;
    }
    Verdict::Interrupt("interrupted by a host restart before it finished".into())
}

#[cfg(test)]
mod tests {
    use futures_util::future::BoxFuture;

    use super::*;
    use crate::tasks::control::TaskControl;
    use crate::tasks::runner::{Finished, Recovery};

    /// A runner whose tool is idempotent or not, under a manifest's recovery settings.
    struct Policy(bool, Recovery);

    impl TaskRunner for Policy {
        fn run(&self, _: &Task, _: TaskControl) -> BoxFuture<'static, Finished> {
            unreachable!("verdicts never run a task")
        }
        fn may_rerun(&self, _: &str) -> BoxFuture<'static, bool> {
            let idempotent = self.0;
            Box::pin(async move { idempotent })
        }
        fn recovery(&self, _: &str) -> BoxFuture<'static, Recovery> {
            let recovery = self.1;
            Box::pin(async move { recovery })
        }
        fn outlives_host(&self, _: &str) -> bool {
            true
        }
    }

    fn task(attempts: u32, checkpoint: u64) -> Task {
        Task { attempts, checkpoint, ..crate::tasks::store_suite::task("t", "o", "h") }
    }

    #[tokio::test]
    async fn a_resumable_task_that_checkpointed_runs_again_and_retries_bound_it() {
        let resumable = Recovery { resumable: true, retries: Some(2) };
        assert_eq!(verdict(&Policy(false, resumable), &task(1, 3), true).await, Verdict::Run, "resumes from its checkpoint");
        assert_eq!(verdict(&Policy(false, resumable), &task(2, 3), true).await, Verdict::Run, "the second retry");
        let Verdict::Interrupt(why) = verdict(&Policy(false, resumable), &task(3, 9), true).await else { panic!("past its retries it must stop") };
        assert!(why.contains("ran 3 times") && why.contains("allows 2 retries"), "{why}");
        let plain = Recovery { resumable: false, retries: None };
        assert_eq!(
            verdict(&Policy(false, plain), &task(1, 3), true).await,
            Verdict::Interrupt("interrupted by a host restart before it finished".into()),
            "a checkpoint alone is not enough: the manifest must say resumable"
        );
        assert!(matches!(verdict(&Policy(false, resumable), &task(1, 0), true).await, Verdict::Interrupt(_)), "resumable but never checkpointed");
        assert_eq!(verdict(&Policy(true, plain), &task(7, 0), true).await, Verdict::Run, "idempotent without retries: no bound, as before");
        assert_eq!(verdict(&Policy(false, plain), &task(0, 0), false).await, Verdict::Run, "never started: always runs");
    }
}
