//! [`Store::batch`] on SQLite: a worker's releases, then its claims, in
//! one `BEGIN IMMEDIATE` transaction and one commit, each through the same
//! code as its single operation (`release.rs`, `claim.rs`); concurrent
//! batches of this process's workers share it (`BatchMerger`). A batch of
//! claims alone that would take nothing commits nothing
//! (`claim_probe.rs`).
//!
//! [`Store::batch`]: leasehold_core::Store::batch

use crate::SqliteStore;
use leasehold_core::transition;
use leasehold_core::{BatchAnswer, BatchRequest, ClaimRequest, StoreError};

impl SqliteStore {
    /// Answers `req` in one `BEGIN IMMEDIATE` transaction and one commit:
    /// releases in order, then claims in order, each through the same code
    /// as its single operation; bad claims are answered at once.
    pub(crate) async fn batch_in_one_tx(
        &self,
        req: BatchRequest,
    ) -> Result<BatchAnswer, StoreError> {
        let checked: Vec<Result<(), StoreError>> = req
            .claims
            .iter()
            .map(|c| {
                transition::validate_claim(&c.queue, c.lease, c.max, &self.shared.policy)
                    .map_err(StoreError::Input)
            })
            .collect();
        if req.releases.is_empty() && checked.iter().all(|c| c.is_err()) {
            return Ok(nothing_granted(checked));
        }
        let valid: Vec<&ClaimRequest> = req
            .claims
            .iter()
            .zip(&checked)
            .filter(|(_, c)| c.is_ok())
            .map(|(r, _)| r)
            .collect();
        if req.releases.is_empty()
            && self
                .nothing_to_claim(
                    valid.iter().map(|c| c.queue.as_str()),
                    self.shared.clock.now(),
                )
                .await
        {
            return Ok(nothing_granted(checked));
        }
        let answer = in_write_tx!(self, |conn, now| {
            match self.release_set(conn, &req.releases, now).await {
                Ok(releases) => self
                    .claim_set(conn, &valid, now)
                    .await
                    .map(|granted| (releases, granted)),
                Err(e) => Err(e),
            }
        })
        .map(|(releases, granted)| {
            let mut granted = granted.into_iter();
            let claims = checked
                .into_iter()
                .map(|c| c.map(|()| granted.next().unwrap_or_default()))
                .collect();
            BatchAnswer { releases, claims }
        })?;
        for (r, a) in req.releases.iter().zip(&answer.releases) {
            self.announce_released(r, a).await;
        }
        Ok(answer)
    }
}

/// The answer of a batch without releases whose claims take nothing: each
/// valid claim empty, each bad one its error.
fn nothing_granted(checked: Vec<Result<(), StoreError>>) -> BatchAnswer {
    BatchAnswer {
        releases: Vec::new(),
        claims: checked
            .into_iter()
            .map(|c| c.map(|()| Vec::new()))
            .collect(),
    }
}
