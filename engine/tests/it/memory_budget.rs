//! A call's memory budget (`engine/core/src/memory.rs`), with the counting allocator this
//! test binary installs as the programs do: what a call's work holds, in its async code and
//! in the threads it starts, is charged to it; past the budget (1 GiB by default) its next
//! check answers 413 `memory_budget`, and work that asks first is refused before it spends.

use std::hint::black_box;

use paperchain_engine::cancel::{self, Stop};
use paperchain_engine::context::blocking;
use paperchain_engine::{ErrorKind, memory};

const MIB: usize = 1 << 20;

#[tokio::test]
async fn a_call_over_its_budget_stops_at_its_next_check() {
    assert!(memory::counting(), "the test binary counts its allocations");
    let budget = memory::settings().call_bytes;

    // Within the budget: held, checked, fine. (Zeroed memory is not touched: cheap to ask for.)
    let fine = cancel::within(Stop::new(), async {
        blocking(move || {
            let held = black_box(vec![0u8; budget / 2]);
            cancel::check()?;
            Ok(held.len())
        })
        .await
    })
    .await;
    assert_eq!(fine.unwrap(), budget / 2);

    // Past it in a blocking thread of the call: the next check refuses, naming the budget.
    let over = cancel::within(Stop::new(), async {
        blocking(move || {
            let held = black_box(vec![0u8; budget + 64 * MIB]);
            cancel::check()?;
            Ok(held.len())
        })
        .await
    })
    .await
    .unwrap_err();
    assert_eq!((over.code.as_ref(), over.kind), ("memory_budget", ErrorKind::TooLarge));
    assert!(over.message.contains("PAPERCHAIN_CALL_MEMORY_MIB"), "{}", over.message);

    // Past it in the call's async code, held across an await.
    let over_async = cancel::within(Stop::new(), async {
        let held = black_box(vec![0u8; budget + 64 * MIB]);
        tokio::task::yield_now().await;
        cancel::check().map(|()| held.len())
    })
    .await
    .unwrap_err();
    assert_eq!(over_async.code, "memory_budget");

    // What was freed is credited: the same amount again, one at a time, never goes over.
    let in_turns = cancel::within(Stop::new(), async {
        blocking(move || {
            for _ in 0..4 {
                drop(black_box(vec![0u8; budget / 2]));
                cancel::check()?;
            }
            Ok(())
        })
        .await
    })
    .await;
    assert!(in_turns.is_ok(), "{in_turns:?}");

    // Outside a call nothing is charged or refused.
    let outside = black_box(vec![0u8; budget + 64 * MIB]);
    assert!(cancel::check().is_ok());
    drop(outside);
}

#[tokio::test]
async fn work_that_asks_first_is_refused_before_it_spends() {
    let budget = memory::settings().call_bytes;
    let refused = cancel::within(Stop::new(), async {
        blocking(move || {
            let _held = black_box(vec![0u8; budget - 16 * MIB]);
            // 32 MiB more than is left: refused, nothing allocated for it.
            memory::reserve("a page of 32 MiB", 32 * MIB as u64)?;
            Ok(())
        })
        .await
    })
    .await
    .unwrap_err();
    assert_eq!(refused.code, "memory_budget");
    assert!(refused.message.contains("a page of 32 MiB would take 32 MiB"), "{}", refused.message);
    // Outside a call there is no bound to ask.
    assert_eq!(memory::room(), usize::MAX);
}
