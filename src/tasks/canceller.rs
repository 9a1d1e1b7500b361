//! Who cancels a task: its stored status message says so, and the audit trail's record of the
//! cancel carries that message, so an operator's cancel is never told as the client's.

/// Who cancels a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Canceller<'a> {
    /// Its owner: the client that created it (`tasks/cancel`).
    Owner,
    /// An operator.
    Operator {
        /// Their name (an admin token's, an OAuth user, the user running a command).
        who: &'a str,
        /// Where they acted from: `the console`, a command's name.
        via: &'a str,
        /// The reason they gave.
        reason: Option<&'a str>,
    },
}

impl Canceller<'_> {
    /// The cancelled task's status message.
    pub fn status_message(&self) -> String {
        match self {
            Canceller::Owner => "cancelled by the client".to_owned(),
            Canceller::Operator { who, via, reason: None } => format!("cancelled by operator {who} from {via}"),
            Canceller::Operator { who, via, reason: Some(reason) } => format!("cancelled by operator {who} from {via}: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Canceller;

    #[test]
    fn an_operators_cancel_names_them_and_their_reason() {
        assert_eq!(Canceller::Owner.status_message(), "cancelled by the client");
        let by = Canceller::Operator { who: "alice", via: "the console", reason: Some("stuck on a dead API") };
        assert_eq!(by.status_message(), "cancelled by operator alice from the console: stuck on a dead API");
        let by = Canceller::Operator { who: "bob", via: "corral tasks cancel", reason: None };
        assert_eq!(by.status_message(), "cancelled by operator bob from corral tasks cancel");
    }
}
