use super::*;
use time::macros::{date, datetime};

fn key(n: u8) -> PaymentKey {
    [n; 32]
}

async fn file_store(dir: &tempfile::TempDir) -> Store {
    Store::open(dir.path().join("hosted.sqlite")).await.unwrap()
}

#[test]
fn retention_keeps_exactly_the_outcomes_kept_for_good() {
    let kept: Vec<&str> = Outcome::ALL.iter().filter(|o| o.kept_for_good()).map(|o| o.as_str()).collect();
    assert_eq!(kept, KEPT_FOR_GOOD);
}

#[tokio::test]
async fn unpaid_refusals_are_counts_per_hour_and_retention_keeps_the_money() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir).await;
    let hour = |h: i64| datetime!(2026-03-14 10:00 UTC) + time::Duration::hours(h);
    let refusal = |h: i64, outcome: Outcome, error: Option<&str>| {
        let mut d = Decision::new("/v1/chain/gas", "get_gas_price", outcome);
        d.at = hour(h) + time::Duration::minutes(59);
        d.error_code = error.map(str::to_string);
        d
    };
    store.count_unpaid(&refusal(0, Outcome::PaymentRequired, None));
    store.count_unpaid(&refusal(0, Outcome::PaymentRequired, None));
    store.count_unpaid(&refusal(0, Outcome::FreeExhausted, Some("free_pool_exhausted")));
    store.count_unpaid(&refusal(1, Outcome::PaymentRequired, None));
    assert!(store.recent(10).await.unwrap().is_empty(), "no row for any of them");
    // Written when the store closes: a restarted server reads them back.
    store.close().await;
    let store = file_store(&dir).await;
    let count = |h: i64, outcome: Outcome, error: Option<&str>, count: u64| UnpaidCount {
        hour: hour(h),
        route: "/v1/chain/gas".into(),
        outcome,
        error_code: error.map(str::to_string),
        count,
    };
    assert_eq!(
        store.unpaid_counts().await.unwrap(),
        vec![
            count(0, Outcome::FreeExhausted, Some("free_pool_exhausted"), 1),
            count(0, Outcome::PaymentRequired, None, 2),
            count(1, Outcome::PaymentRequired, None, 1),
        ]
    );
    // The same hour adds up.
    store.count_unpaid(&refusal(1, Outcome::PaymentRequired, None));
    store.flush_counts().await.unwrap();
    assert_eq!(store.unpaid_counts().await.unwrap()[2].count, 2);

    // Rows of old money stay; an old free call and old counts go.
    for outcome in [Outcome::Paid, Outcome::SettleFailed, Outcome::Redelivered, Outcome::Free] {
        let mut d = Decision::new("/v1/chain/gas", "get_gas_price", outcome);
        d.at = hour(0);
        store.record(&d).await.unwrap();
    }
    let mut recent = Decision::new("/v1/chain/gas", "get_gas_price", Outcome::Free);
    recent.at = hour(48);
    store.record(&recent).await.unwrap();
    store.count_unpaid(&refusal(48, Outcome::PaymentRequired, None));

    let pruned = store.prune(hour(24)).await.unwrap();
    assert_eq!(pruned, Pruned { decisions: 1, unpaid_counts: 3 });
    let kept: Vec<Outcome> = store.recent(10).await.unwrap().iter().map(|d| d.outcome).collect();
    assert_eq!(kept, [Outcome::Free, Outcome::Redelivered, Outcome::SettleFailed, Outcome::Paid]);
    assert_eq!(store.unpaid_counts().await.unwrap(), vec![count(48, Outcome::PaymentRequired, None, 1)]);
    assert_eq!(store.prune(hour(24)).await.unwrap(), Pruned::default(), "nothing more to delete");
    store.close().await;
}

#[tokio::test]
async fn claim_then_replay_is_refused() {
    let store = Store::open_in_memory().await.unwrap();
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), None);
    assert_eq!(store.claim_payment(&key(1), "/v1/pdf/rotate", "eip155:8453").await.unwrap(), Claim::Claimed);
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Claimed));
    assert_eq!(
        store.claim_payment(&key(1), "/v1/pdf/rotate", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Claimed }
    );
    // Another payload is independent.
    assert_eq!(store.claim_payment(&key(2), "/v1/pdf/rotate", "eip155:8453").await.unwrap(), Claim::Claimed);
}

#[tokio::test]
async fn finish_is_permanent() {
    let store = Store::open_in_memory().await.unwrap();
    store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap();
    store.finish_payment(&key(1), &PaymentOutcome::Settled { tx_hash: "0xabc".into() }).await.unwrap();
    assert_eq!(
        store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Settled }
    );
    // Neither released nor finished twice.
    let err = store.release_payment(&key(1)).await.unwrap_err();
    assert!(matches!(err, StoreError::BadTransition { state: Some(PaymentState::Settled), .. }), "{err}");
    assert!(err.to_string().contains("settled"), "{err}");
    let err = store.finish_payment(&key(1), &PaymentOutcome::SettleFailed { reason: "x".into() }).await;
    assert!(matches!(err, Err(StoreError::BadTransition { .. })));

    store.claim_payment(&key(2), "/v1/a", "eip155:137").await.unwrap();
    store.finish_payment(&key(2), &PaymentOutcome::SettleFailed { reason: "timeout".into() }).await.unwrap();
    assert_eq!(
        store.claim_payment(&key(2), "/v1/a", "eip155:137").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::SettleFailed }
    );
    let row: (String, Option<String>, Option<String>, i64, i64) = {
        let r = sqlx::query("SELECT state, tx_hash, reason, attempts, refused FROM payments WHERE key = ?1")
            .bind(hex::encode(key(2)))
            .fetch_one(&store.inner.pool)
            .await
            .unwrap();
        (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
    };
    assert_eq!(row, ("settle_failed".into(), None, Some("timeout".into()), 1, 1));
}

#[tokio::test]
async fn release_lets_the_payload_in_again() {
    let store = Store::open_in_memory().await.unwrap();
    // Nothing to release before a claim.
    let err = store.release_payment(&key(7)).await.unwrap_err();
    assert!(matches!(err, StoreError::BadTransition { state: None, .. }), "{err}");

    store.claim_payment(&key(7), "/v1/a", "eip155:8453").await.unwrap();
    store.release_payment(&key(7)).await.unwrap();
    assert_eq!(store.payment_state(&key(7)).await.unwrap(), Some(PaymentState::Released));
    // Releasing twice is refused: only `claimed` can be released.
    assert!(matches!(
        store.release_payment(&key(7)).await,
        Err(StoreError::BadTransition { state: Some(PaymentState::Released), .. })
    ));
    assert_eq!(store.claim_payment(&key(7), "/v1/b", "eip155:137").await.unwrap(), Claim::Claimed);
    assert_eq!(
        store.claim_payment(&key(7), "/v1/b", "eip155:137").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Claimed }
    );
    store.finish_payment(&key(7), &PaymentOutcome::Settled { tx_hash: "0x1".into() }).await.unwrap();
    let r = sqlx::query("SELECT attempts, route, network, tx_hash FROM payments WHERE key = ?1")
        .bind(hex::encode(key(7)))
        .fetch_one(&store.inner.pool)
        .await
        .unwrap();
    assert_eq!(r.get::<i64, _>(0), 2);
    assert_eq!(r.get::<String, _>(1), "/v1/b");
    assert_eq!(r.get::<String, _>(2), "eip155:137");
    assert_eq!(r.get::<String, _>(3), "0x1");
}

async fn race_claims(store: &Store, n: usize) {
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.claim_payment(&key(9), "/v1/a", "eip155:8453").await.unwrap() })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Claim::Claimed => won += 1,
            Claim::AlreadyUsed { state } => assert_eq!(state, PaymentState::Claimed),
        }
    }
    assert_eq!(won, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_have_one_winner() {
    race_claims(&Store::open_in_memory().await.unwrap(), 20).await;
    let dir = tempfile::tempdir().unwrap();
    race_claims(&file_store(&dir).await, 20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_claims_across_two_opens_of_one_file() {
    // Two processes (here two pools) on one file: still one winner.
    let dir = tempfile::tempdir().unwrap();
    let a = file_store(&dir).await;
    let b = file_store(&dir).await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { store.claim_payment(&key(3), "/v1/a", "eip155:8453").await.unwrap() })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        won += usize::from(task.await.unwrap() == Claim::Claimed);
    }
    assert_eq!(won, 1);
}

#[tokio::test]
async fn stale_claims_are_abandoned_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosted.sqlite");
    let store = Store::open(&path).await.unwrap();
    store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap();
    store.claim_payment(&key(2), "/v1/a", "eip155:8453").await.unwrap();
    store.finish_payment(&key(2), &PaymentOutcome::Settled { tx_hash: "0x2".into() }).await.unwrap();
    store.close().await;

    // A recent claim survives a reopen with the default 10 minutes.
    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Claimed));
    store.close().await;

    let options = StoreOptions { abandon_after: Duration::ZERO, ..StoreOptions::default() };
    let store = Store::open_with(&path, &options).await.unwrap();
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Abandoned));
    assert_eq!(store.payment_state(&key(2)).await.unwrap(), Some(PaymentState::Settled));
    assert_eq!(
        store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Abandoned }
    );
    assert!(store.release_payment(&key(1)).await.is_err());
    // A late settlement is still recorded.
    store.finish_payment(&key(1), &PaymentOutcome::Settled { tx_hash: "0x1".into() }).await.unwrap();
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Settled));
}

#[tokio::test]
async fn state_persists_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosted.sqlite");
    let day = date!(2026 - 03 - 14);
    let store = Store::open(&path).await.unwrap();
    store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap();
    store.finish_payment(&key(1), &PaymentOutcome::Settled { tx_hash: "0xdead".into() }).await.unwrap();
    store.claim_payment(&key(2), "/v1/a", "eip155:8453").await.unwrap();
    for _ in 0..3 {
        store.take_free("docs", "203.0.113.7", day, 10).await.unwrap();
    }
    let mut decision = Decision::new("/v1/pdf/rotate", "rotate_pdf", Outcome::Paid);
    decision.quote = Some(2000);
    decision.payment_key = Some(key(1));
    store.record(&decision).await.unwrap();
    drop(store); // no close: like a killed process

    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), MIGRATIONS.len() as i64);
    assert_eq!(
        store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Settled }
    );
    // The run that claimed it is gone (its lock went with it): abandoned, still refused.
    assert_eq!(
        store.claim_payment(&key(2), "/v1/a", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Abandoned }
    );
    assert_eq!(store.free_remaining("docs", "203.0.113.7", day, 10).await.unwrap(), 7);
    assert_eq!(store.take_free("docs", "203.0.113.7", day, 10).await.unwrap(), FreeTake::Taken { remaining: 6 });
    let recent = store.recent(10).await.unwrap();
    assert_eq!(recent.len(), 1);
    assert_eq!(recent[0].route, "/v1/pdf/rotate");
    assert_eq!(recent[0].payment_key, Some(key(1)));
    assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 1, settled_amount: 2000 });
}

async fn race_pool(store: &Store, tasks: usize, limit: u32) {
    let day = date!(2026 - 01 - 01);
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.take_free("chain-reads", "198.51.100.1", day, limit).await.unwrap() })
        })
        .collect();
    let mut remaining = Vec::new();
    for handle in handles {
        if let FreeTake::Taken { remaining: r } = handle.await.unwrap() {
            remaining.push(r);
        }
    }
    remaining.sort_unstable();
    assert_eq!(remaining, (0..limit).collect::<Vec<_>>(), "each free call taken exactly once");
    assert_eq!(store.free_remaining("chain-reads", "198.51.100.1", day, limit).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pool_limit_holds_under_concurrency() {
    race_pool(&Store::open_in_memory().await.unwrap(), 50, 10).await;
    let dir = tempfile::tempdir().unwrap();
    race_pool(&file_store(&dir).await, 50, 10).await;
}

#[tokio::test]
async fn pools_are_per_pool_client_and_day() {
    let store = Store::open_in_memory().await.unwrap();
    let day = date!(2026 - 05 - 01);
    for left in (0..30).rev() {
        assert_eq!(
            store.take_free("address-check", "10.0.0.1", day, 30).await.unwrap(),
            FreeTake::Taken { remaining: left }
        );
    }
    assert_eq!(store.take_free("address-check", "10.0.0.1", day, 30).await.unwrap(), FreeTake::Exhausted);
    assert_eq!(store.free_remaining("address-check", "10.0.0.1", day, 30).await.unwrap(), 0);
    // Exhausting one pool touches neither another pool, another client, nor another day.
    assert_eq!(store.take_free("chain-reads", "10.0.0.1", day, 10).await.unwrap(), FreeTake::Taken { remaining: 9 });
    assert_eq!(store.take_free("address-check", "10.0.0.2", day, 30).await.unwrap(), FreeTake::Taken { remaining: 29 });
    let next = day.next_day().unwrap();
    assert_eq!(store.free_remaining("address-check", "10.0.0.1", next, 30).await.unwrap(), 30);
    assert_eq!(
        store.take_free("address-check", "10.0.0.1", next, 30).await.unwrap(),
        FreeTake::Taken { remaining: 29 }
    );
    // A zero limit never creates a row.
    assert_eq!(store.take_free("docs", "10.0.0.1", day, 0).await.unwrap(), FreeTake::Exhausted);
    assert_eq!(store.free_remaining("docs", "10.0.0.1", day, 10).await.unwrap(), 10);
    // A limit lowered below what is used reads as none left.
    assert_eq!(store.free_remaining("address-check", "10.0.0.1", day, 5).await.unwrap(), 0);
    assert_eq!(store.take_free("address-check", "10.0.0.1", day, 5).await.unwrap(), FreeTake::Exhausted);
    // Pruning drops earlier days only.
    assert_eq!(store.prune_free_before(next).await.unwrap(), 3);
    assert_eq!(store.free_remaining("address-check", "10.0.0.1", day, 30).await.unwrap(), 30);
    assert_eq!(store.free_remaining("address-check", "10.0.0.1", next, 30).await.unwrap(), 29);
}

#[tokio::test]
async fn refund_gives_one_back_never_below_zero() {
    let store = Store::open_in_memory().await.unwrap();
    let day = date!(2026 - 02 - 28);
    assert!(!store.refund_free("docs", "::1", day).await.unwrap());
    for _ in 0..10 {
        store.take_free("docs", "::1", day, 10).await.unwrap();
    }
    assert_eq!(store.take_free("docs", "::1", day, 10).await.unwrap(), FreeTake::Exhausted);
    assert!(store.refund_free("docs", "::1", day).await.unwrap());
    assert_eq!(store.free_remaining("docs", "::1", day, 10).await.unwrap(), 1);
    assert_eq!(store.take_free("docs", "::1", day, 10).await.unwrap(), FreeTake::Taken { remaining: 0 });
    for _ in 0..10 {
        assert!(store.refund_free("docs", "::1", day).await.unwrap());
    }
    assert!(!store.refund_free("docs", "::1", day).await.unwrap());
    assert_eq!(store.free_remaining("docs", "::1", day, 10).await.unwrap(), 10);
}

#[tokio::test]
async fn file_store_runs_in_wal_with_full_sync() {
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir).await;
    assert_eq!(store.journal_mode().await.unwrap(), "wal");
    // Every pooled connection carries the pragmas, not just the first.
    let mut conns = Vec::new();
    for _ in 0..3 {
        conns.push(store.inner.pool.acquire().await.unwrap());
    }
    for conn in &mut conns {
        let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut **conn).await.unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
        let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout").fetch_one(&mut **conn).await.unwrap();
        assert_eq!(busy, 5000);
    }
    drop(conns);
    // The relaxed pool (free counters, ledger rows that move no money) flushes at checkpoints.
    let mut relaxed = store.inner.relaxed.acquire().await.unwrap();
    let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut *relaxed).await.unwrap();
    assert_eq!(sync, 1, "synchronous=NORMAL");
    assert!(dir.path().join("hosted.sqlite-wal").exists());
    assert_eq!(store.path(), Some(dir.path().join("hosted.sqlite").as_path()));
}

#[tokio::test]
async fn ledger_round_trips_and_totals() {
    let store = Store::open_in_memory().await.unwrap();
    assert_eq!(store.totals().await.unwrap(), Totals::default());
    let full = Decision {
        at: datetime!(2026-03-14 15:09:26.535 UTC),
        route: "/v1/chain/tx".into(),
        operation: "get_transaction".into(),
        quote: Some(2000),
        charged: None,
        outcome: Outcome::Paid,
        payer: Some("0x1111111111111111111111111111111111111111".into()),
        network: Some("eip155:8453".into()),
        tx_hash: Some("0xfeed".into()),
        error_code: None,
        client: Some("2001:db8::/64".into()),
        payment_key: Some(key(5)),
        finish: None,
        channel: None,
    };
    let first = store.record(&full).await.unwrap();
    let mut mpp = Decision::new("/v1/pdf/merge", "merge_pdf", Outcome::MppPaid);
    mpp.quote = Some(5000);
    store.record(&mpp).await.unwrap();
    let mut mismatch = Decision::new("/v1/pdf/merge", "merge_pdf", Outcome::PriceMismatch);
    mismatch.quote = Some(1);
    mismatch.error_code = Some("price_mismatch".into());
    mismatch.payer = Some("x".repeat(10_000));
    let last = store.record(&mismatch).await.unwrap();
    assert!(last > first);
    store.record(&Decision::new("/v1/pdf/merge", "merge_pdf", Outcome::PaymentRequired)).await.unwrap();

    let recent = store.recent(10).await.unwrap();
    assert_eq!(recent.len(), 4);
    assert_eq!(recent[0].outcome, Outcome::PaymentRequired);
    assert_eq!(recent[0].quote, None);
    assert_eq!(recent[1].payer.as_deref().map(str::len), Some(MAX_TEXT), "long text is clipped");
    assert_eq!(recent[3], full);
    assert_eq!(store.recent(1).await.unwrap().len(), 1);
    assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 2, settled_amount: 7000 });
    // An `upto` payment counts what it settled, not the most it authorized.
    let mut upto = Decision::new("/v1/pdf/ocr", "ocr_pdf", Outcome::Paid);
    (upto.quote, upto.charged) = (Some(43_000), Some(27_000));
    store.record(&upto).await.unwrap();
    assert_eq!(store.recent(1).await.unwrap()[0].charged, Some(27_000));
    assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 3, settled_amount: 34_000 });

    let mut huge = Decision::new("/v1/a", "a", Outcome::Paid);
    huge.quote = Some(u64::MAX);
    assert!(matches!(store.record(&huge).await, Err(StoreError::OutOfRange { what: "quote", .. })));
}

#[tokio::test]
async fn open_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope").join("hosted.sqlite");
    let err = Store::open(&missing).await.unwrap_err();
    assert!(matches!(err, StoreError::MissingDirectory { .. }), "{err}");
    assert!(err.to_string().contains(&missing.display().to_string()), "{err}");

    let err = Store::open(dir.path()).await.unwrap_err();
    assert!(matches!(err, StoreError::IsDirectory { .. }), "{err}");

    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, vec![0x42u8; 8192]).unwrap();
    let err = Store::open(&junk).await.unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains(&junk.display().to_string()) && message.contains("not a database"), "{message}");
}

#[tokio::test]
async fn migrations_are_idempotent_and_refuse_newer_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosted.sqlite");
    for _ in 0..3 {
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), MIGRATIONS.len() as i64);
        store.close().await;
    }
    let store = Store::open(&path).await.unwrap();
    sqlx::query("UPDATE schema_version SET version = 99").execute(&store.inner.pool).await.unwrap();
    store.close().await;
    let err = Store::open(&path).await.unwrap_err();
    assert!(matches!(err, StoreError::SchemaTooNew { found: 99, .. }), "{err}");
}

fn paid_request(id: Option<&str>, body: &[u8]) -> PaidRequest {
    use sha2::Digest as _;
    PaidRequest {
        payment_id: id.map(str::to_string),
        request_sha256: Some(sha2::Sha256::digest(body).into()),
        ..PaidRequest::default()
    }
}

#[tokio::test]
async fn only_a_settled_payment_for_the_same_request_and_id_is_redelivered() {
    let store = Store::open_in_memory().await.unwrap();
    let id = Some("call_0123456789abcdef");
    let request = paid_request(id, b"{\"a\":1}");
    // Never claimed.
    assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), None);
    store.claim_payment_for(&key(1), "/v1/a", "eip155:8453", &request).await.unwrap();
    // Still claimed (the first call runs), then settle failed: never redelivered.
    assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), None);
    store.claim_payment_for(&key(2), "/v1/a", "eip155:8453", &request).await.unwrap();
    store.finish_payment(&key(2), &PaymentOutcome::SettleFailed { reason: "x".into() }).await.unwrap();
    assert_eq!(store.redeliver(&key(2), "/v1/a", &request).await.unwrap(), None);

    let settled = PaymentOutcome::Settled { tx_hash: "0xfeed".into() };
    store.finish_payment_by(&key(1), &settled, Some("0xPayer")).await.unwrap();
    let expected = StoredSettlement {
        tx_hash: "0xfeed".into(),
        network: "eip155:8453".into(),
        payer: Some("0xPayer".into()),
        charged: None,
    };
    assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), Some(expected.clone()));
    assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), Some(expected));
    // An `upto` payment's answer given again says what it charged (its paid row's).
    let upto = paid_request(Some("call_aaaaaaaaaaaaaaaa"), b"{\"ocr\":1}");
    store.claim_payment_for(&key(9), "/v1/pdf/ocr", "eip155:8453", &upto).await.unwrap();
    let mut paid = paid_decision(9, "0xcafe");
    (paid.route, paid.quote, paid.charged) = ("/v1/pdf/ocr".into(), Some(43_000), Some(27_000));
    store.record(&paid).await.unwrap();
    let again = store.redeliver(&key(9), "/v1/pdf/ocr", &upto).await.unwrap().expect("redelivered");
    assert_eq!((again.tx_hash.as_str(), again.charged), ("0xcafe", Some(27_000)));
    // Anything else is not the same request.
    assert_eq!(store.redeliver(&key(1), "/v1/b", &request).await.unwrap(), None, "another route");
    let other_body = paid_request(id, b"{\"a\":2}");
    assert_eq!(store.redeliver(&key(1), "/v1/a", &other_body).await.unwrap(), None, "another body");
    let other_id = paid_request(Some("call_ffffffffffffffff"), b"{\"a\":1}");
    assert_eq!(store.redeliver(&key(1), "/v1/a", &other_id).await.unwrap(), None, "another id");
    let no_id = paid_request(None, b"{\"a\":1}");
    assert_eq!(store.redeliver(&key(1), "/v1/a", &no_id).await.unwrap(), None, "no id");
    let no_hash = PaidRequest { request_sha256: None, ..request.clone() };
    assert_eq!(store.redeliver(&key(1), "/v1/a", &no_hash).await.unwrap(), None, "no body hash");
    // A claim without an id is never redelivered, even to a request without one.
    store.claim_payment(&key(3), "/v1/a", "eip155:8453").await.unwrap();
    store.finish_payment(&key(3), &settled).await.unwrap();
    assert_eq!(store.redeliver(&key(3), "/v1/a", &no_id).await.unwrap(), None);

    let r = sqlx::query("SELECT redelivered, refused, payment_id, request_sha256, payer FROM payments WHERE key = ?1")
        .bind(hex::encode(key(1)))
        .fetch_one(&store.inner.pool)
        .await
        .unwrap();
    assert_eq!(r.get::<i64, _>(0), 2);
    assert_eq!(r.get::<i64, _>(1), 0, "a redelivery is no refusal");
    assert_eq!(r.get::<String, _>(2), "call_0123456789abcdef");
    assert_eq!(r.get::<String, _>(3), hex::encode(request.request_sha256.unwrap()));
    assert_eq!(r.get::<String, _>(4), "0xPayer");
}

#[tokio::test]
async fn a_reclaimed_payment_keeps_the_new_request() {
    let store = Store::open_in_memory().await.unwrap();
    let first = paid_request(Some("call_0123456789abcdef"), b"one");
    let second = paid_request(Some("call_ffffffffffffffff"), b"two");
    store.claim_payment_for(&key(4), "/v1/a", "eip155:8453", &first).await.unwrap();
    store.release_payment(&key(4)).await.unwrap();
    store.claim_payment_for(&key(4), "/v1/b", "eip155:8453", &second).await.unwrap();
    store.finish_payment(&key(4), &PaymentOutcome::Settled { tx_hash: "0x4".into() }).await.unwrap();
    assert_eq!(store.redeliver(&key(4), "/v1/a", &first).await.unwrap(), None);
    let again = store.redeliver(&key(4), "/v1/b", &second).await.unwrap().expect("the settled request");
    assert_eq!((again.tx_hash.as_str(), again.payer), ("0x4", None));
}

#[tokio::test]
async fn a_version_1_file_is_migrated_and_its_payments_stay_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosted.sqlite");
    {
        // A file as the first release wrote it.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(SqliteConnectOptions::new().filename(&path).create_if_missing(true))
            .await
            .unwrap();
        sqlx::raw_sql(MIGRATIONS[0]).execute(&pool).await.unwrap();
        sqlx::raw_sql(
            "CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
             INSERT INTO schema_version (id, version) VALUES (1, 1);",
        )
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO payments (key, route, network, state, claimed_at_ms, updated_at_ms, tx_hash)
             VALUES (?1, '/v1/a', 'eip155:8453', 'settled', 1, 1, '0xold')",
        )
        .bind(hex::encode(key(8)))
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.schema_version().await.unwrap(), MIGRATIONS.len() as i64);
    // Version 3's counts work in the old file.
    store.count_unpaid(&Decision::new("/v1/a", "a", Outcome::PaymentRequired));
    assert_eq!(store.unpaid_counts().await.unwrap().len(), 1);
    assert_eq!(
        store.claim_payment(&key(8), "/v1/a", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Settled }
    );
    let request = paid_request(Some("call_0123456789abcdef"), b"{}");
    assert_eq!(store.redeliver(&key(8), "/v1/a", &request).await.unwrap(), None, "no id was kept");
    // New payments in the old file keep theirs.
    store.claim_payment_for(&key(9), "/v1/a", "eip155:8453", &request).await.unwrap();
    store.finish_payment(&key(9), &PaymentOutcome::Settled { tx_hash: "0x9".into() }).await.unwrap();
    assert!(store.redeliver(&key(9), "/v1/a", &request).await.unwrap().is_some());
}

#[test]
fn names_round_trip() {
    for outcome in Outcome::ALL {
        assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
        assert_eq!(outcome.as_str().parse::<Outcome>(), Ok(outcome));
    }
    for state in PaymentState::ALL {
        assert_eq!(PaymentState::parse(state.as_str()), Some(state));
    }
    assert_eq!(Outcome::parse("nope"), None);
    assert_eq!(day_key(date!(2026 - 01 - 05)), "2026-01-05");
    assert_eq!(clip("aé", 2), "a");
}

fn authorized(n: u8) -> PaidRequest {
    PaidRequest {
        operation: Some("get_gas_price".into()),
        client: Some("127.0.0.1".into()),
        amount: Some(1_000),
        authorization: Some(Authorization {
            asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913".into(),
            authorizer: "0x1111111111111111111111111111111111111111".into(),
            nonce: format!("0x{}", hex::encode([n; 32])),
            valid_before: 2_000_000_000,
        }),
        ..PaidRequest::default()
    }
}

fn paid_decision(n: u8, tx: &str) -> Decision {
    let mut decision = Decision::new("/v1/chain/gas", "get_gas_price", Outcome::Paid);
    decision.quote = Some(1_000);
    decision.payment_key = Some(key(n));
    decision.tx_hash = Some(tx.into());
    decision.finish =
        Some(ClosedPayment { key: key(n), outcome: PaymentOutcome::Settled { tx_hash: tx.into() }, payer: None });
    decision
}

#[tokio::test]
async fn a_settlement_and_its_ledger_row_are_written_together_and_only_once() {
    let store = Store::open_in_memory().await.unwrap();
    store.claim_payment_for(&key(1), "/v1/chain/gas", "eip155:8453", &authorized(1)).await.unwrap();
    store.record(&paid_decision(1, "0xaa")).await.unwrap();
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Settled));
    assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 1, settled_amount: 1_000 });
    // Finished again (a slow call after the settlement was found on chain): refused, and
    // the money is not counted twice.
    let again = store.record(&paid_decision(1, "0xaa")).await;
    assert!(matches!(again, Err(StoreError::BadTransition { .. })), "{again:?}");
    assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 1, settled_amount: 1_000 });
}

#[tokio::test]
async fn claims_of_a_run_that_is_gone_are_abandoned_at_once_and_listed_for_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosted.sqlite");
    {
        let first = Store::open(&path).await.unwrap();
        first.claim_payment_for(&key(1), "/v1/chain/gas", "eip155:8453", &authorized(1)).await.unwrap();
        // A second run sharing the file sees the first alive: its claim stays claimed.
        let second = Store::open(&path).await.unwrap();
        assert_eq!(second.abandon_orphaned().await.unwrap(), 0);
        assert_eq!(second.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Claimed));
        second.close().await;
        // The first run ends without finishing its claim (its lock goes with it).
        first.close().await;
    }
    let store = Store::open(&path).await.unwrap();
    assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Abandoned));
    let unresolved = store.unresolved_claims(10).await.unwrap();
    assert_eq!(unresolved.len(), 1);
    let claim = &unresolved[0];
    assert_eq!((claim.key, claim.amount, claim.operation.as_deref()), (key(1), Some(1_000), Some("get_gas_price")));
    assert_eq!(claim.authorization, authorized(1).authorization.unwrap());
    // Found settled on chain: recorded from `abandoned`, and no longer listed.
    store.record(&paid_decision(1, "0xbb")).await.unwrap();
    assert!(store.unresolved_claims(10).await.unwrap().is_empty());
    // One that was never used and expired is noted, stays refused, and is not listed again.
    store.claim_payment_for(&key(2), "/v1/chain/gas", "eip155:8453", &authorized(2)).await.unwrap();
    sqlx::query("UPDATE payments SET state = 'abandoned' WHERE key = ?1")
        .bind(hex::encode(key(2)))
        .execute(&store.inner.pool)
        .await
        .unwrap();
    assert_eq!(store.unresolved_claims(10).await.unwrap().len(), 1);
    store.mark_chain_checked(&key(2), "never used").await.unwrap();
    assert!(store.unresolved_claims(10).await.unwrap().is_empty());
    assert_eq!(
        store.claim_payment(&key(2), "/v1/chain/gas", "eip155:8453").await.unwrap(),
        Claim::AlreadyUsed { state: PaymentState::Abandoned }
    );
}

#[tokio::test]
async fn one_voucher_at_a_time_per_channel_and_each_charged_once_with_its_row() {
    let store = Store::open_in_memory().await.unwrap();
    let channel = NewChannel { id: "0xc1", network: "eip155:8453", payer: "0xp", config: "{}" };
    // The first voucher reserves the new channel; a second call cannot while it runs.
    assert!(store.reserve_channel(&channel, 0, 1000, "0xs1").await.unwrap());
    assert!(!store.reserve_channel(&channel, 0, 1000, "0xs1").await.unwrap(), "held by the first call");
    // Its ledger row commits it, with the deposit's balance.
    let mut paid = Decision::new("/v1/chain/gas", "get_gas_price", Outcome::Paid);
    paid.quote = Some(1000);
    paid.channel = Some(ChannelCommit { id: "0xc1".into(), charged: 1000, balance: Some(200_000) });
    store.record(&paid).await.unwrap();
    let row = store.channel("0xc1").await.unwrap().unwrap();
    assert_eq!((row.balance, row.charged, row.claimed, row.pending), (200_000, 1000, 0, None));
    assert_eq!(row.voucher_signature.as_deref(), Some("0xs1"));
    // The same row again commits nothing (the reservation is gone) and writes no row.
    assert!(store.record(&paid).await.is_err());
    assert_eq!(store.totals().await.unwrap().paid_calls, 1);
    // A voucher signed from a stale total is refused; from the charged one, taken.
    assert!(!store.reserve_channel(&channel, 0, 1000, "0xs0").await.unwrap());
    assert!(store.reserve_channel(&channel, 1000, 2000, "0xs2").await.unwrap());
    // A failed call releases it; a dead call's reservation goes after the stale time.
    store.release_channel("0xc1", 2000).await.unwrap();
    assert_eq!(store.channel("0xc1").await.unwrap().unwrap().pending, None);
    assert!(store.reserve_channel(&channel, 1000, 2000, "0xs2").await.unwrap());
    assert_eq!(store.release_stale_channels(std::time::Duration::ZERO).await.unwrap(), 1);
    // What is charged and not claimed is what the sweep claims; a claim and a refund recorded.
    let to_claim = store.channels_to_claim(10).await.unwrap();
    assert_eq!(to_claim.iter().map(|c| (c.id.as_str(), c.charged)).collect::<Vec<_>>(), [("0xc1", 1000)]);
    let claim = ChannelTx { kind: "claim".into(), tx_hash: "0xt".into(), channels: 1, amount: 1000 };
    store.channels_settled(&claim, &[("0xc1".into(), 1000, None)]).await.unwrap();
    assert!(store.channels_to_claim(10).await.unwrap().is_empty());
    let refund = ChannelTx { kind: "refund".into(), tx_hash: "0xr".into(), channels: 1, amount: 199_000 };
    store.channels_settled(&refund, &[("0xc1".into(), 1000, Some(1000))]).await.unwrap();
    assert_eq!(store.channel("0xc1").await.unwrap().unwrap().balance, 1000);
    let kinds: Vec<String> = store.channel_txs().await.unwrap().into_iter().map(|t| t.kind).collect();
    assert_eq!(kinds, ["claim", "refund"]);
    // A payer's withdrawal read from the chain stops its vouchers.
    store.channel_checked("0xc1", 1000, 1000, true).await.unwrap();
    assert!(!store.reserve_channel(&channel, 1000, 2000, "0xs2").await.unwrap());
}
