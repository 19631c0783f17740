use super::*;
use leasehold_core::{JobState, ManualStoreClock, Millis, Outcome, Token, WorkerId};

fn store() -> (MemoryStore, ManualStoreClock) {
    let clock = ManualStoreClock::new(StoreTime(1_000_000));
    (
        MemoryStore::with_clock(Policy::default(), clock.clone()),
        clock,
    )
}

fn claim_req(max: u32) -> ClaimRequest {
    ClaimRequest {
        worker: WorkerId::new("w"),
        queue: "q".into(),
        lease: Millis(1000),
        max,
    }
}

#[tokio::test]
async fn claims_in_priority_then_run_at_order_and_keeps_indexes_in_step() {
    let (s, clock) = store();
    let low = s.enqueue(NewJob::new("q", b"a".to_vec())).await.unwrap();
    let high = s
        .enqueue(NewJob::new("q", b"b".to_vec()).priority(5))
        .await
        .unwrap();
    let later = s
        .enqueue(NewJob::new("q", b"c".to_vec()).delay(Millis(50)))
        .await
        .unwrap();
    let leases = s.claim(claim_req(10)).await.unwrap();
    assert_eq!(
        leases.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![high, low]
    );
    clock.advance(Millis(50));
    let leases = s.claim(claim_req(10)).await.unwrap();
    assert_eq!(
        leases.iter().map(|l| l.job).collect::<Vec<_>>(),
        vec![later]
    );
    let st = s.lock();
    st.index.check(&st.rows).unwrap();
}

#[tokio::test]
async fn sweep_reclaims_only_expired_leases_and_events_follow_commits() {
    let (s, clock) = store();
    let id = s.enqueue(NewJob::new("q", b"a".to_vec())).await.unwrap();
    s.claim(claim_req(1)).await.unwrap();
    clock.advance(Millis(999));
    assert!(s
        .sweep(SweepRequest { limit: 10 })
        .await
        .unwrap()
        .is_empty());
    clock.advance(Millis(1));
    let reports = s.sweep(SweepRequest { limit: 10 }).await.unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].token, Token(1));
    assert_eq!(s.get(id).await.unwrap().unwrap().state, JobState::Pending);
    let renew = s
        .renew(RenewRequest {
            job: id,
            token: Token(1),
            lease: Millis(10),
        })
        .await
        .unwrap();
    assert_eq!(renew, Renewal::Lost);
    let kinds: Vec<_> = s.events().iter().map(|e| e.to).collect();
    assert_eq!(
        kinds,
        vec![JobState::Pending, JobState::Running, JobState::Pending]
    );
    let st = s.lock();
    st.index.check(&st.rows).unwrap();
}

#[tokio::test]
async fn unknown_job_is_a_typed_error() {
    let (s, _) = store();
    let err = s
        .release(ReleaseRequest {
            job: JobId(42),
            token: Token(1),
            outcome: Outcome::Returned,
        })
        .await;
    assert_eq!(
        err,
        Err(StoreError::Input(InputError::UnknownJob(JobId(42))))
    );
    assert!(matches!(
        s.cancel(JobId(42)).await,
        Err(StoreError::Input(InputError::UnknownJob(_)))
    ));
}

#[tokio::test]
async fn list_pages_in_id_order() {
    let (s, _) = store();
    for i in 0..5u8 {
        s.enqueue(NewJob::new("q", vec![i])).await.unwrap();
    }
    let page = s
        .list(ListRequest {
            after: Some(JobId(2)),
            limit: 2,
        })
        .await
        .unwrap();
    assert_eq!(page.iter().map(|r| r.id.0).collect::<Vec<_>>(), vec![3, 4]);
    assert_eq!(leasehold_core::list_all(&s).await.unwrap().len(), 5);
}

/// Two stores over one shared state (the simulator's store host and its
/// restart) see the same rows; each reports the policy it was built with.
#[tokio::test]
async fn stores_over_one_state_share_its_rows_and_keep_their_policy() {
    let (first, clock) = store();
    let id = first
        .enqueue(NewJob::new("q", b"kept".to_vec()))
        .await
        .unwrap();
    let policy = Policy::builder()
        .parallelism("q", 3)
        .build()
        .expect("policy");
    let second = MemoryStore::with_state(policy.clone(), clock, first.state());
    assert!(Arc::ptr_eq(&first.state(), &second.state()));
    assert_eq!(second.get(id).await.unwrap().unwrap().payload, b"kept");
    assert_eq!(second.policy(), &policy);
    assert_eq!(first.policy(), &Policy::default());
}
