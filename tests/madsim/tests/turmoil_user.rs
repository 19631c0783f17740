//! The turmoil example of docs/EMBEDDING.md: leasehold's worker inside a turmoil
//! simulation through the `Runtime` seam, in a normal build
//! (tests/embedding_doc.rs checks that docs/EMBEDDING.md shows exactly the lines between
//! the markers).
#![cfg(not(madsim))]

// EMBEDDING.md: begin
use leasehold_core::*;
use leasehold_memory::MemoryStore;
use std::{sync::Arc, time::Duration};

/// turmoil drives each host's tokio clock, so time, timers and spawning are
/// tokio's; the wall clock is turmoil's too, never the machine's.
#[derive(Clone)]
struct TurmoilRuntime(TokioRuntime);
impl Runtime for TurmoilRuntime {
    fn now(&self) -> Millis {
        self.0.now() // add this host's skew or drift here
    }
    fn sleep(&self, d: Millis) -> BoxFuture<()> {
        self.0.sleep(d)
    }
    fn spawn(&self, task: BoxFuture<()>) {
        self.0.spawn(task)
    }
    fn wall(&self) -> StoreTime {
        sim_wall()
    }
}
fn sim_wall() -> StoreTime {
    StoreTime(turmoil::sim_elapsed().unwrap_or_default().as_millis() as i64)
}

struct Echo;
impl Handler for Echo {
    async fn handle(&self, lease: Lease, _stop: StopSignal) -> Result<Vec<u8>, HandlerError> {
        Ok(lease.payload)
    }
}

#[test]
fn leasehold_worker_inside_my_turmoil_simulation() -> turmoil::Result {
    let mut sim = turmoil::Builder::new().build();
    // Any Store on the simulated clock: in-process here, or yours over turmoil::net.
    let store = Arc::new(MemoryStore::with_clock(Policy::default(), sim_wall));
    let s = store.clone();
    sim.host("worker-1", move || {
        let s = s.clone();
        async move {
            let config = WorkerConfig::builder("worker-1", "q").build()?;
            // Made inside the host: this host's clock, timers and tasks.
            let rt = TurmoilRuntime(TokioRuntime::new());
            Worker::new(s, Echo, rt, config)
                .run(Shutdown::never())
                .await;
            Ok(())
        }
    });
    sim.client("client", async move {
        let job = store.enqueue(NewJob::new("q", "hi")).await?;
        while store.get(job).await?.unwrap().state != JobState::Succeeded {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    });
    sim.run()
}
// EMBEDDING.md: end
