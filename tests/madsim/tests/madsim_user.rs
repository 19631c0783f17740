//! The "Inside your madsim simulation" example of docs/EMBEDDING.md, compiled and run
//! under `--cfg madsim` (tests/embedding_doc.rs checks that docs/EMBEDDING.md shows
//! exactly the lines between the markers).
#![cfg(madsim)]

// EMBEDDING.md: begin
use leasehold_core::*;
use leasehold_memory::MemoryStore;
use std::{sync::Arc, time::Duration};

struct Echo;
impl Handler for Echo {
    async fn handle(&self, lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        Ok(lease.payload)
    }
}

#[madsim::test]
async fn leasehold_worker_inside_my_simulation() {
    // Any Store: in-process here, or yours behind madsim's network.
    let store = Arc::new(MemoryStore::new(Policy::default())); // madsim's clock
    let job = store.enqueue(NewJob::new("q", "hi")).await.unwrap();
    let handle = madsim::runtime::Handle::current();
    let node = handle.create_node().name("worker-1").build();
    let config = WorkerConfig::builder("worker-1", "q").build().unwrap();
    // Under --cfg madsim, TokioRuntime is madsim's clock, timers and executor.
    let worker = Worker::new(store.clone(), Echo, TokioRuntime::new(), config);
    node.spawn(worker.run(Shutdown::never()));
    madsim::time::sleep(Duration::from_secs(5)).await;
    let row = store.get(job).await.unwrap().unwrap();
    assert_eq!(row.result.as_deref(), Some(&b"hi"[..]));
    handle.kill(node.id()); // madsim's faults apply to the worker's node
}
// EMBEDDING.md: end
