//! Size-limit cases: every value the [`Limits`] let in comes back
//! byte-exact, and every value one byte over is refused and changes nothing.
//!
//! The core decides what fits; these cases hold the adapter to storing it:
//! a column type, driver or encoding that shortens, re-encodes or
//! NUL-terminates large or binary values fails here, outside the simulator.
//! Each check runs once under small limits (fast everywhere) and once under
//! the default limits (1 MiB payloads and results), because large values
//! are exactly where storage silently shortens data.

use super::cases::{claim_one, enqueue, release, renew, row, rows};
use super::{suite_policy, Harness, LONG_LEASE};
use leasehold_core::EventKind;
use leasehold_core::JobId;
use leasehold_core::{InputError, StoreError};
use leasehold_core::{JobState, NewJob, Outcome, Release, Renewal};
use leasehold_core::{Limits, Policy};
use leasehold_core::{ReleaseRequest, Store};

/// Limits small enough to be quick on every adapter; the odd sizes keep
/// them off any power of two an adapter might round to.
pub fn small_limits_policy() -> Policy {
    Policy::builder()
        .limits(Limits {
            max_payload_bytes: 1_000,
            max_result_bytes: 777,
            max_error_bytes: 64,
            max_key_len: 40,
            ..Limits::default()
        })
        .backoff(suite_policy().backoff)
        .build()
        .expect("the small-limits policy is valid")
}

/// `len` deterministic pseudo-random bytes holding every byte value, with
/// NUL first and last, never valid UTF-8 (so a text column cannot hold it).
///
/// # Panics
/// When `len < 256`.
pub fn binary_blob(len: usize, seed: u64) -> Vec<u8> {
    assert!(len >= 256, "{len} bytes cannot hold all 256 byte values");
    let mut x = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut out: Vec<u8> = (0..len)
        .map(|_| {
            // splitmix64: deterministic, no dependency.
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect();
    for v in 0..=255u8 {
        out[usize::from(v) * len / 256] = v;
    }
    // NUL at both ends catches C-string handling and trailing-zero trimming.
    out[len - 1] = 0;
    debug_assert!(std::str::from_utf8(&out).is_err());
    out
}

/// A string of exactly `len` bytes, mostly 2-, 3- and 4-byte characters,
/// ending in a 4-byte one when `len >= 9`.
pub fn utf8_of_len(len: usize) -> String {
    let mut s = "k".repeat(len % 9);
    while s.len() < len {
        s.push_str("é€😀");
    }
    debug_assert_eq!(s.len(), len);
    s
}

/// Panics unless `got` is `want`, naming the first differing byte (a 1 MiB
/// value is too large for an assertion message).
fn same_bytes(name: &str, what: &str, got: &[u8], want: &[u8]) {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        panic!(
            "{name}: {what}: read back {} bytes for {} written, first difference at byte {}",
            got.len(),
            want.len(),
            at.unwrap_or(got.len().min(want.len())),
        );
    }
}

fn input_error<T: std::fmt::Debug>(name: &str, r: Result<T, StoreError>) -> InputError {
    match r {
        Err(StoreError::Input(e)) => e,
        other => panic!("{name}: expected an input error, got {other:?}"),
    }
}

/// The outcome of the last release of `id` in the audit log, if the
/// harness exposes one.
async fn audited_release<H: Harness>(h: &H, s: &H::Store, id: JobId) -> Option<Outcome> {
    let events = h.events(s).await?;
    let last = events.into_iter().rev().find(|e| e.job == id)?;
    match last.kind {
        EventKind::Released { outcome, .. } => Some(outcome),
        other => panic!("{}: last event of {id} is {other:?}", h.name()),
    }
}

/// A payload of exactly `max_payload_bytes` comes back byte-exact from
/// `get`, `list` and the lease; one byte more is `PayloadTooLarge` and
/// makes no job.
pub async fn check_payload<H: Harness>(h: &H, policy: Policy) {
    let cap = policy.limits.max_payload_bytes;
    let f = h.fresh(policy).await;
    let s = &*f.store;
    let name = format!("{} (payload cap {cap})", h.name());
    let payload = binary_blob(cap, 1);
    let id = enqueue(s, NewJob::new("limits", payload.clone())).await;
    same_bytes(&name, "get", &row(s, id).await.payload, &payload);
    let listed = rows(s).await;
    assert_eq!(listed.len(), 1, "{name}");
    same_bytes(&name, "list", &listed[0].payload, &payload);
    let lease = claim_one(s, "w", "limits", LONG_LEASE).await;
    assert_eq!(lease.job, id, "{name}");
    same_bytes(&name, "lease", &lease.payload, &payload);

    let before = rows(s).await;
    let over = binary_blob(cap + 1, 2);
    let e = input_error(&name, s.enqueue(NewJob::new("limits", over)).await);
    assert_eq!(
        e,
        InputError::PayloadTooLarge { size: cap + 1, cap },
        "{name}"
    );
    assert!(
        rows(s).await == before,
        "{name}: a refused payload made a job"
    );
}

/// A result of exactly `max_result_bytes` comes back byte-exact from
/// `get`, `list` and the audit log, and a repeat of its release is
/// `Committed` again; one byte more is `ResultTooLarge` and leaves the
/// lease running and renewable.
pub async fn check_result<H: Harness>(h: &H, policy: Policy) {
    let cap = policy.limits.max_result_bytes;
    let f = h.fresh(policy).await;
    let s = &*f.store;
    let name = format!("{} (result cap {cap})", h.name());
    let id = enqueue(s, NewJob::new("limits", b"x".to_vec())).await;
    let lease = claim_one(s, "w", "limits", LONG_LEASE).await;
    let running = row(s, id).await;

    let over = Outcome::Succeeded(binary_blob(cap + 1, 3));
    let req = ReleaseRequest {
        job: id,
        token: lease.token,
        outcome: over.clone(),
    };
    let e = input_error(&name, s.release(req.clone()).await);
    assert_eq!(
        e,
        InputError::ResultTooLarge {
            job: id,
            size: cap + 1,
            cap
        },
        "{name}"
    );
    let after = row(s, id).await;
    assert!(after == running, "{name}: a refused result changed the row");
    assert!(
        matches!(
            renew(s, id, lease.token, LONG_LEASE).await,
            Renewal::Renewed { .. }
        ),
        "{name}: the lease survives a refused result"
    );

    let result = binary_blob(cap, 4);
    let outcome = Outcome::Succeeded(result.clone());
    assert_eq!(
        release(s, id, lease.token, outcome.clone()).await,
        Release::Committed,
        "{name}"
    );
    let done = row(s, id).await;
    assert_eq!(done.state, JobState::Succeeded, "{name}");
    same_bytes(
        &name,
        "get",
        done.result.as_deref().unwrap_or_default(),
        &result,
    );
    let listed = rows(s).await;
    let listed = listed.iter().find(|r| r.id == id).expect("listed");
    same_bytes(
        &name,
        "list",
        listed.result.as_deref().unwrap_or_default(),
        &result,
    );
    if let Some(audited) = audited_release(h, s, id).await {
        assert!(
            audited == outcome,
            "{name}: the audit log altered the result"
        );
    }

    // A worker that lost the answer repeats the release: at this size too it
    // must be recognised as the same release and rewrite nothing.
    assert_eq!(
        release(s, id, lease.token, outcome).await,
        Release::Committed,
        "{name}: repeated release"
    );
    assert!(row(s, id).await == done, "{name}: a repeat changed the row");
    let e = input_error(&name, s.release(req).await);
    assert!(
        matches!(e, InputError::ResultTooLarge { .. }),
        "{name}: {e}"
    );
    assert!(
        row(s, id).await == done,
        "{name}: a refused result changed the row"
    );
}

/// An error message longer than `max_error_bytes` is stored cut at the last
/// character boundary within the cap (a repeat of that release is
/// `Committed`); one of exactly the cap is stored whole.
pub async fn check_error<H: Harness>(h: &H, policy: Policy) {
    let cap = policy.limits.max_error_bytes;
    let f = h.fresh(policy).await;
    let s = &*f.store;
    let name = format!("{} (error cap {cap})", h.name());
    // The cap falls two bytes into a 4-byte character.
    let kept = utf8_of_len(cap.saturating_sub(2));
    let long = format!("{kept}😀 and the rest €€€");
    assert!(
        !long.is_char_boundary(cap),
        "the cap must split a character"
    );
    let exact = utf8_of_len(cap);

    for (message, stored) in [(&long, &kept), (&exact, &exact)] {
        let id = enqueue(s, NewJob::new("limits", b"x".to_vec())).await;
        let lease = claim_one(s, "w", "limits", LONG_LEASE).await;
        let failed = Outcome::Failed {
            error: message.clone(),
            retryable: false,
        };
        assert_eq!(
            release(s, id, lease.token, failed.clone()).await,
            Release::Committed,
            "{name}"
        );
        let dead = row(s, id).await;
        assert_eq!(dead.state, JobState::Dead, "{name}");
        assert_eq!(dead.error.as_ref(), Some(stored), "{name}");
        if let Some(audited) = audited_release(h, s, id).await {
            let want = Outcome::Failed {
                error: stored.clone(),
                retryable: false,
            };
            assert_eq!(audited, want, "{name}: audit log");
        }
        assert_eq!(
            release(s, id, lease.token, failed).await,
            Release::Committed,
            "{name}: a repeat of a truncated release is the same release"
        );
        assert_eq!(row(s, id).await, dead, "{name}");
    }
}

/// An idempotency key of exactly `max_key_len` bytes names one job (a
/// repeat answers it; a key differing only in its last byte is another
/// job); one byte more is `BadIdempotencyKey` and makes no job.
pub async fn check_key<H: Harness>(h: &H, policy: Policy) {
    let cap = policy.limits.max_key_len;
    let f = h.fresh(policy).await;
    let s = &*f.store;
    let name = format!("{} (key cap {cap})", h.name());
    let key = utf8_of_len(cap);
    let spec = NewJob::new("limits", b"x".to_vec()).idempotency_key(key.clone());
    let id = enqueue(s, spec.clone()).await;
    assert_eq!(enqueue(s, spec).await, id, "{name}: repeated key");
    assert_eq!(
        row(s, id).await.idempotency_key,
        Some(key.clone()),
        "{name}"
    );
    assert_eq!(rows(s).await.len(), 1, "{name}: a repeat made a job");

    // A store that shortened keys would answer the first job here.
    let mut sibling = key.clone();
    let last = sibling.pop().expect("non-empty key");
    sibling.push(char::from_u32(u32::from(last) + 1).expect("a character"));
    assert_eq!(sibling.len(), cap, "{name}");
    let other = enqueue(
        s,
        NewJob::new("limits", b"x".to_vec()).idempotency_key(sibling),
    )
    .await;
    assert_ne!(other, id, "{name}: keys differing in their last byte");

    let before = rows(s).await;
    let over = NewJob::new("limits", b"x".to_vec()).idempotency_key(format!("{key}k"));
    let e = input_error(&name, s.enqueue(over).await);
    assert!(
        matches!(e, InputError::BadIdempotencyKey { .. }),
        "{name}: {e}"
    );
    assert_eq!(rows(s).await, before, "{name}: a refused key made a job");
}

/// Payload round trip at small limits (see [`check_payload`]).
pub async fn payload_at_its_cap_round_trips_and_one_byte_more_is_refused<H: Harness>(h: &H) {
    check_payload(h, small_limits_policy()).await;
}

/// Result round trip at small limits (see [`check_result`]).
pub async fn result_at_its_cap_round_trips_and_one_byte_more_is_refused<H: Harness>(h: &H) {
    check_result(h, small_limits_policy()).await;
}

/// Error truncation at small limits (see [`check_error`]).
pub async fn long_error_is_cut_at_a_character_boundary_within_its_cap<H: Harness>(h: &H) {
    check_error(h, small_limits_policy()).await;
}

/// Idempotency keys at small limits (see [`check_key`]).
pub async fn idempotency_key_at_its_cap_works_and_one_byte_more_is_refused<H: Harness>(h: &H) {
    check_key(h, small_limits_policy()).await;
}

/// Every check above under the default limits (1 MiB payloads and results).
pub async fn every_limit_holds_at_the_default_caps<H: Harness>(h: &H) {
    let policy = suite_policy();
    assert_eq!(
        policy.limits,
        Limits::default(),
        "the suite keeps the defaults"
    );
    check_payload(h, policy.clone()).await;
    check_result(h, policy.clone()).await;
    check_error(h, policy.clone()).await;
    check_key(h, policy).await;
}

/// A NUL in an error message is stored as U+FFFD (a text column cannot hold
/// NUL: an adapter that failed here would answer a definite failure as an
/// unknown outcome, and the job would end in a false crash report), and a
/// NUL in an idempotency key is a typed refusal that makes no job.
pub async fn nul_in_an_error_is_replaced_and_in_a_key_is_refused<H: Harness>(h: &H) {
    let f = h.fresh(small_limits_policy()).await;
    let s = &*f.store;
    let name = h.name();
    let id = enqueue(s, NewJob::new("limits", b"x".to_vec())).await;
    let lease = claim_one(s, "w", "limits", LONG_LEASE).await;
    let failed = Outcome::Failed {
        error: "bad\0byte".into(),
        retryable: false,
    };
    assert_eq!(
        release(s, id, lease.token, failed.clone()).await,
        Release::Committed,
        "{name}"
    );
    assert_eq!(
        row(s, id).await.error.as_deref(),
        Some("bad\u{FFFD}byte"),
        "{name}"
    );
    assert_eq!(
        release(s, id, lease.token, failed).await,
        Release::Committed,
        "{name}: the repeat is the same release"
    );
    let before = rows(s).await;
    let keyed = NewJob::new("limits", b"x".to_vec()).idempotency_key("a\0b");
    let e = input_error(&name, s.enqueue(keyed).await);
    assert!(
        matches!(e, InputError::BadIdempotencyKey { .. }),
        "{name}: {e}"
    );
    assert_eq!(rows(s).await, before, "{name}: a refused key made a job");
}
