//! The bounded retry of an operation's transaction after a version
//! conflict, the same in both SQL stores: an attempt that conflicted is
//! rolled back and run again from the start, re-reading its rows; any
//! other error ends the operation at once; when every attempt conflicted,
//! the last conflict is the answer.
//!
//! How an attempt begins, commits and rolls back stays in each store
//! (their `in_tx!` and `in_write_tx!`).

use leasehold_core::StoreError;

/// The attempts an operation has left after conflicts.
#[derive(Debug)]
pub struct Retries {
    left: u32,
}

impl Retries {
    /// At most `1 + max_retries` attempts.
    pub fn new(max_retries: u32) -> Self {
        Retries { left: max_retries }
    }

    /// Whether to run the operation again after an attempt was rolled back
    /// on `e`: `Ok` for a conflict with attempts left; otherwise the error
    /// the operation answers (`e` itself, or the last conflict).
    pub fn after(&mut self, e: StoreError) -> Result<(), StoreError> {
        match e {
            StoreError::Conflict(_) if self.left > 0 => {
                self.left -= 1;
                Ok(())
            }
            other => Err(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leasehold_core::JobId;

    /// Conflicts are retried up to the bound, the last one answered; any
    /// other error ends the operation at its first attempt.
    #[test]
    fn conflicts_are_retried_up_to_the_bound_and_other_errors_answered_at_once() {
        let mut r = Retries::new(2);
        assert_eq!(r.after(StoreError::Conflict(JobId(1))), Ok(()));
        assert_eq!(r.after(StoreError::Conflict(JobId(2))), Ok(()));
        assert_eq!(
            r.after(StoreError::Conflict(JobId(3))),
            Err(StoreError::Conflict(JobId(3))),
            "three attempts in all"
        );
        let mut r = Retries::new(8);
        let gone = StoreError::Unavailable("gone".into());
        assert_eq!(r.after(gone.clone()), Err(gone));
    }
}
