//! One seed's store: the factory, the seed's database, the store currently
//! open on it (none while the store host is down), its clock, and the
//! driver its calls run on (see [`crate::stores`] for why).

use crate::stores::driver::{ready_now, Driver};
use crate::stores::interleave::{Interleaver, Join};
use crate::stores::{SeedContext, SetupError, SimStore, SimStoreClock, StoreFactory};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};

/// A seed's store, shared by the runner and the store host.
pub struct Backend<F: StoreFactory> {
    factory: Arc<F>,
    ctx: SeedContext,
    db: Mutex<Option<Arc<F::Database>>>,
    open: Mutex<Option<Arc<F::Store>>>,
    /// The clock every store of this seed reads.
    pub clock: SimStoreClock,
    driver: Option<Driver>,
    /// Statement-level interleaving, when the seed asks for it, the store
    /// runs on a driver and the run is not one side of a differential run.
    interleaver: Option<Interleaver>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<F: StoreFactory> Backend<F> {
    /// Makes the seed's database (from outside the simulation).
    pub fn create(factory: Arc<F>, ctx: SeedContext) -> Result<Self, SetupError> {
        let driver = if factory.uses_driver() {
            let driver = if factory.driver_needs_io() {
                Driver::new()
            } else {
                Driver::without_io()
            };
            Some(driver.map_err(|e| SetupError::new(e.to_string()))?)
        } else {
            None
        };
        // Not in a differential run: its two sides must answer every
        // request alike, and the other side (memory) runs the calls of an
        // instant one at a time, in the order they arrived; interleaved,
        // the SQL side would answer them in the order the seed chose.
        let interleaver = (ctx.interleave && !ctx.differential && driver.is_some())
            .then(|| Interleaver::new(ctx.seed));
        let mut b = Backend {
            factory,
            ctx,
            db: Mutex::new(None),
            open: Mutex::new(None),
            clock: SimStoreClock::default(),
            driver,
            interleaver,
        };
        let (f, ctx) = (b.factory.clone(), b.ctx.clone());
        let db = b.block_on(async move { f.create(&ctx).await })??;
        b.db = Mutex::new(Some(Arc::new(db)));
        Ok(b)
    }

    /// Runs `fut` to completion from a synchronous caller.
    pub fn block_on<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, SetupError> {
        match &self.driver {
            Some(d) => d.run(fut).map_err(|e| SetupError::new(e.to_string())),
            None => match ready_now(fut) {
                Some(v) => Ok(v),
                None => Err(SetupError::new(format!(
                    "the {} store's call did not finish at once; a store that waits on \
                     anything must ask for a driver (StoreFactory::uses_driver)",
                    self.factory.name()
                ))),
            },
        }
    }

    /// Runs one store call from inside the store host: on the driver
    /// (blocking the simulation until it is done) or in place. With
    /// interleaving, once the calls of earlier groups took their answers,
    /// so the history records them before this call (it runs after them).
    ///
    /// The call is boxed here, before anything else moves it: a SQL
    /// store's operation is a large future, and on its way
    /// to the driver (this call's state, the group's, the driver's timer,
    /// `block_on`) each move was a copy of all of it.
    pub fn call<T: Send + 'static>(
        &self,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = Result<T, SetupError>> + '_ {
        self.call_boxed(Box::pin(fut))
    }

    async fn call_boxed<T: Send + 'static>(
        &self,
        fut: Pin<Box<impl Future<Output = T> + Send + 'static>>,
    ) -> Result<T, SetupError> {
        if let Some(il) = &self.interleaver {
            il.drained(None).await;
        }
        match &self.driver {
            Some(d) => d.run(fut).map_err(|e| SetupError::new(e.to_string())),
            None => Ok(fut.await),
        }
    }

    /// Runs one store call of `store` (the open one) from inside the store
    /// host: in a group of calls of this instant, as `join` says, when the
    /// seed interleaves them; else as [`Self::call`] (boxed at once, as
    /// there).
    pub fn call_grouped<T: Send + 'static>(
        &self,
        store: Arc<F::Store>,
        join: Join,
        fut: impl Future<Output = T> + Send + 'static,
    ) -> impl Future<Output = Result<T, SetupError>> + '_ {
        self.call_grouped_boxed(store, join, Box::pin(fut))
    }

    async fn call_grouped_boxed<T: Send + 'static>(
        &self,
        store: Arc<F::Store>,
        join: Join,
        fut: Pin<Box<impl Future<Output = T> + Send + 'static>>,
    ) -> Result<T, SetupError> {
        match (&self.driver, &self.interleaver) {
            (Some(d), Some(il)) => il.call(d, store, join, fut).await,
            _ => self.call_boxed(fut).await,
        }
    }

    /// The statement order of every interleaved group of this seed so far
    /// (empty without interleaving).
    pub fn statement_orders(&self) -> Vec<String> {
        self.interleaver
            .as_ref()
            .map(Interleaver::orders)
            .unwrap_or_default()
    }

    /// Opens a store on the seed's database (a start of the store host).
    pub async fn open(&self) -> Result<Arc<F::Store>, SetupError> {
        self.close();
        let db = lock(&self.db)
            .clone()
            .ok_or_else(|| SetupError::new("the seed's database is gone"))?;
        let (f, ctx, clock) = (self.factory.clone(), self.ctx.clone(), self.clock.clone());
        let store = Arc::new(
            self.call(async move { f.open(&db, &ctx, clock).await })
                .await??,
        );
        *lock(&self.open) = Some(store.clone());
        Ok(store)
    }

    /// What the factory was told of this seed.
    pub fn context(&self) -> &SeedContext {
        &self.ctx
    }

    /// The store open now, if the host is up.
    pub fn current(&self) -> Option<Arc<F::Store>> {
        lock(&self.open).clone()
    }

    /// Closes the open store, if any: the store host crashed. Called from
    /// outside the simulation, after the host's tasks were dropped, so this
    /// holds the last reference and the store goes away on its driver.
    pub fn close(&self) {
        let Some(store) = lock(&self.open).take() else {
            return;
        };
        let _ = self.block_on(async move {
            store.close().await;
            drop(store);
        });
    }

    /// Opens a store to read the final state with `read`, then closes it.
    pub fn read_final<T: Send + 'static, Fut>(
        &self,
        read: impl FnOnce(Arc<F::Store>) -> Fut,
    ) -> Result<T, SetupError>
    where
        Fut: Future<Output = T> + Send + 'static,
    {
        self.close();
        let db = lock(&self.db)
            .clone()
            .ok_or_else(|| SetupError::new("the seed's database is gone"))?;
        let (f, ctx, clock) = (self.factory.clone(), self.ctx.clone(), self.clock.clone());
        let store = Arc::new(self.block_on(async move { f.open(&db, &ctx, clock).await })??);
        let out = self.block_on(read(store.clone()));
        let _ = self.block_on(async move { store.close().await });
        out
    }

    /// Removes the seed's database.
    pub fn destroy(&self) {
        self.close();
        let Some(db) = lock(&self.db).take() else {
            return;
        };
        let Ok(db) = Arc::try_unwrap(db) else {
            return;
        };
        let f = self.factory.clone();
        let _ = self.block_on(async move { f.destroy(db).await });
    }
}
