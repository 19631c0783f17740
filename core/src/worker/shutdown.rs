//! Graceful shutdown signal shared by workers and sweepers.

use tokio::sync::watch;

/// Raises shutdown for every [`Shutdown`] cloned from the same channel.
#[derive(Debug)]
pub struct ShutdownHandle(watch::Sender<bool>);

/// Observes shutdown. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Shutdown(watch::Receiver<bool>);

/// A new shutdown channel.
pub fn shutdown_channel() -> (ShutdownHandle, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (ShutdownHandle(tx), Shutdown(rx))
}

impl ShutdownHandle {
    /// Asks every holder of a [`Shutdown`] to stop.
    pub fn shutdown(&self) {
        self.0.send_replace(true);
    }

    /// A new observer of this channel.
    pub fn subscribe(&self) -> Shutdown {
        Shutdown(self.0.subscribe())
    }
}

impl Shutdown {
    /// A signal that never fires.
    pub fn never() -> Shutdown {
        let (tx, rx) = watch::channel(false);
        // Keeping the sender alive forever would leak; a closed channel with
        // value `false` reads as "not shut down" and `wait` never returns.
        drop(tx);
        Shutdown(rx)
    }

    /// Whether shutdown was requested.
    pub fn is_requested(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes when shutdown is requested; never, if the handle is gone
    /// without requesting it.
    pub async fn wait(&mut self) {
        if self.0.wait_for(|v| *v).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
