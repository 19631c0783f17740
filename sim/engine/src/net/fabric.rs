//! The simulated network: messages between hosts, each delivered at an
//! exact true instant (its latency drawn from the scenario's range), over
//! links that a fault plan cuts, holds and heals.
//!
//! A store request is one message and its answer another: a client keeps
//! one long-lived channel to the store (as a connection pool does), so
//! there is no connection set-up per request. Each message has its own
//! latency, so two requests in flight may arrive out of order, as they do
//! over the several connections of a pool.
//!
//! ## Delivery rules (checked when a message arrives, not when it leaves)
//! - A link cut in the message's direction loses it.
//! - A held link keeps it; when the hold ends, every kept message leaves
//!   again, in the order it was kept, with a fresh latency.
//! - A request that reaches a host that is down, or that does not listen,
//!   is refused: an error answer goes back (as a TCP reset would).
//! - An answer reaches only the incarnation that sent the request; one
//!   addressed to an earlier incarnation, or to a caller that stopped
//!   waiting, is dropped.
//! - A request the store host received and dropped unanswered because it
//!   crashed is answered with a reset; one it chose not to answer (a lost
//!   message or answer) is never answered.
//!
//! ## Bounds
//! A host's inbox holds at most [`MAX_INBOX`] requests; more are refused.
//!
//! Simulated code reaches the seed's [`Network`] through a thread-local
//! handle the world installs for the length of one seed ([`enter`]).

use crate::exec::timers::{Event, Timeline};
use crate::exec::HostIdx;
use crate::faults::LinkView;
use leasehold_core::worker::wake::WorkSignal;
use leasehold_model::rng::SimRng;
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use tokio::sync::oneshot;

/// Most requests waiting in one host's inbox.
pub const MAX_INBOX: usize = 1 << 16;
/// Rate of the exponential latency draw over the latency range (turmoil's).
const LATENCY_RATE: f64 = 5.0;

/// An answer as it comes back: the bytes, or why there are none.
pub type Answer = Result<Vec<u8>, String>;

/// A message on the network.
pub struct Message {
    from: HostIdx,
    to: HostIdx,
    body: Body,
}

enum Body {
    Request { id: u64, inc: u32, bytes: Vec<u8> },
    Reply { id: u64, inc: u32, answer: Answer },
    Wake(String),
}

#[derive(Default)]
struct Link {
    cut: bool,
    held: bool,
    kept: Vec<Message>,
}

#[derive(Default)]
struct Inbox {
    queue: VecDeque<Incoming>,
    waker: Option<Waker>,
    open: bool,
}

/// The network of one seed.
pub struct Fabric {
    names: Vec<String>,
    index: BTreeMap<String, HostIdx>,
    up: Vec<bool>,
    inc: Vec<u32>,
    links: BTreeMap<(HostIdx, HostIdx), Link>,
    inboxes: Vec<Inbox>,
    pending: Vec<Waits>,
    wakes: Vec<Option<Arc<WorkSignal>>>,
    rng: SimRng,
    lo: u64,
    hi: u64,
    quantum: u64,
    next_id: u64,
    /// Messages sent, for the run's statistics.
    pub sent: u64,
}

impl Fabric {
    /// The network between `names` (every host up), with latency drawn in
    /// `[lo, hi]` ms from `rng` and arrivals rounded up to `quantum` ms.
    pub fn new(names: Vec<String>, rng: SimRng, lo: u64, hi: u64, quantum: u64) -> Self {
        let n = names.len();
        let index = names
            .iter()
            .enumerate()
            .map(|(i, h)| (h.clone(), i))
            .collect();
        Fabric {
            names,
            index,
            up: vec![true; n],
            inc: vec![0; n],
            links: BTreeMap::new(),
            inboxes: (0..n).map(|_| Inbox::default()).collect(),
            pending: (0..n).map(|_| BTreeMap::new()).collect(),
            wakes: vec![None; n],
            rng,
            lo,
            hi: hi.max(lo),
            quantum: quantum.max(1),
            next_id: 0,
            sent: 0,
        }
    }

    /// The number of `host`.
    pub fn idx(&self, host: &str) -> Option<HostIdx> {
        self.index.get(host).copied()
    }

    /// The name of host `i`.
    pub fn name(&self, i: HostIdx) -> &str {
        &self.names[i]
    }

    fn arrival(&mut self, now: u64) -> u64 {
        let span = (self.hi - self.lo) as f64;
        let x = -(1.0 - self.rng.unit()).ln() / LATENCY_RATE;
        let lat = self.lo + (x.min(1.0) * span).round() as u64;
        (now + lat).div_ceil(self.quantum) * self.quantum
    }

    /// Whether `host` is up.
    pub fn is_up(&self, host: HostIdx) -> bool {
        self.up[host]
    }

    /// `host` crashed: its inbox, its callers' waits and its wake-up
    /// listener go with it, and answers to this incarnation are dropped.
    /// Returns what must be dropped outside the borrow (requests in its
    /// inbox answer with resets as they drop).
    pub fn host_down(&mut self, host: HostIdx) -> Dropped {
        self.up[host] = false;
        self.inc[host] += 1;
        self.wakes[host] = None;
        let inbox = std::mem::take(&mut self.inboxes[host]);
        let pending = std::mem::take(&mut self.pending[host]);
        Dropped(Some((inbox.queue, pending)))
    }

    /// `host` starts again.
    pub fn host_up(&mut self, host: HostIdx) {
        self.up[host] = true;
    }

    /// Sets the link between `a` and `b` as `view` says; returns the
    /// messages a hold kept, if it ended, to send again.
    pub fn set_link(&mut self, a: HostIdx, b: HostIdx, view: LinkView) -> Vec<Message> {
        let mut again = Vec::new();
        let ways = [
            ((a, b), view.drop_ab, view.held_ab),
            ((b, a), view.drop_ba, view.held_ba),
        ];
        for (key, cut, held) in ways {
            let link = self.links.entry(key).or_default();
            link.cut = cut;
            if link.held && !held {
                again.append(&mut link.kept);
            }
            link.held = held;
        }
        again
    }
}

/// The network of one seed on its timeline: what simulated code sends on.
pub struct Network {
    /// True time and the queue deliveries wait in.
    pub time: Rc<Timeline<Message>>,
    /// The hosts, links and inboxes.
    pub fabric: RefCell<Fabric>,
}

impl Network {
    /// `fabric` on `time`.
    pub fn new(time: Rc<Timeline<Message>>, fabric: Fabric) -> Rc<Self> {
        Rc::new(Network {
            time,
            fabric: RefCell::new(fabric),
        })
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Network>>> = const { RefCell::new(None) };
}

/// Installs `net` as the thread's current network until the guard drops.
pub fn enter(net: Rc<Network>) -> Entered {
    let prev = CURRENT.with(|c| c.replace(Some(net)));
    Entered { prev }
}

/// Restores the thread's previous network when dropped.
pub struct Entered {
    prev: Option<Rc<Network>>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let prev = self.prev.take();
        // Dropped after the slot's borrow ends: the network's own drop
        // answers the requests in its inboxes, which looks for it.
        let old = CURRENT.with(|c| c.replace(prev));
        drop(old);
    }
}

fn with<R>(f: impl FnOnce(&Network) -> R) -> Option<R> {
    let net = CURRENT.with(|c| c.borrow().clone())?;
    Some(f(&net))
}

/// The number of `host` on the current network.
pub fn idx_of(host: &str) -> Option<HostIdx> {
    with(|n| n.fabric.borrow().idx(host)).flatten()
}

/// Things taken out of a crashed host, dropped in a fixed order (drop it
/// after the network's borrow ends: its requests send resets).
pub struct Dropped(Option<(VecDeque<Incoming>, Waits)>);

/// A host's callers waiting for answers, by request.
type Waits = BTreeMap<u64, oneshot::Sender<Answer>>;

impl Drop for Dropped {
    fn drop(&mut self) {
        if let Some((queue, pending)) = self.0.take() {
            for i in queue {
                drop(i);
            }
            for (_, p) in pending {
                drop(p);
            }
        }
    }
}

fn send_on(core: &Network, msg: Message) {
    let at = {
        let mut net = core.fabric.borrow_mut();
        net.sent += 1;
        net.arrival(core.time.now())
    };
    core.time.events.borrow_mut().push(at, Event::Deliver(msg));
}

/// Sends messages a hold kept, again, in order.
pub fn resend(core: &Network, msgs: Vec<Message>) {
    for m in msgs {
        send_on(core, m);
    }
}

/// Delivers `msg` now (the runner calls this when its time comes).
pub fn deliver(core: &Network, msg: Message) {
    let (from, to) = (msg.from, msg.to);
    let mut net = core.fabric.borrow_mut();
    let link = net.links.entry((from, to)).or_default();
    if link.cut {
        return;
    }
    if link.held {
        link.kept.push(msg);
        return;
    }
    let up = net.up[to];
    match msg.body {
        Body::Request { id, inc, bytes } => {
            let sender = net.names[from].clone();
            let inbox = &mut net.inboxes[to];
            if !up || !inbox.open || inbox.queue.len() >= MAX_INBOX {
                drop(net);
                refuse(core, from, to, id, inc);
                return;
            }
            inbox.queue.push_back(Incoming {
                from: sender,
                bytes,
                reply: Some(Replier {
                    from,
                    to,
                    id,
                    inc,
                    done: false,
                }),
            });
            let waker = inbox.waker.take();
            drop(net);
            if let Some(w) = waker {
                w.wake();
            }
        }
        Body::Reply { id, inc, answer } => {
            if !up || net.inc[to] != inc {
                return;
            }
            let tx = net.pending[to].remove(&id);
            drop(net);
            if let Some(tx) = tx {
                let _ = tx.send(answer);
            }
        }
        Body::Wake(queue) => {
            let signal = if up { net.wakes[to].clone() } else { None };
            drop(net);
            if let Some(s) = signal {
                s.announce(&queue);
            }
        }
    }
}

fn refuse(core: &Network, caller: HostIdx, host: HostIdx, id: u64, inc: u32) {
    send_on(
        core,
        Message {
            from: host,
            to: caller,
            body: Body::Reply {
                id,
                inc,
                answer: Err("connection refused".into()),
            },
        },
    );
}

/// Sends `bytes` from `from` to `to` as one request and waits for its
/// answer. Dropping the future stops the wait, not the request: it still
/// travels, and may still be executed.
pub fn call(from: HostIdx, to: HostIdx, bytes: Vec<u8>) -> impl Future<Output = Answer> + Send {
    let rx = with(|core| {
        let (tx, rx) = oneshot::channel();
        let (id, inc) = {
            let mut net = core.fabric.borrow_mut();
            let id = net.next_id;
            net.next_id += 1;
            net.pending[from].insert(id, tx);
            (id, net.inc[from])
        };
        send_on(
            core,
            Message {
                from,
                to,
                body: Body::Request { id, inc, bytes },
            },
        );
        (rx, Forget { host: from, id })
    });
    async move {
        let Some((rx, _forget)) = rx else {
            return Err("no simulation".into());
        };
        rx.await.unwrap_or_else(|_| Err("connection closed".into()))
    }
}

/// Removes a caller's wait for an answer when it stops waiting.
struct Forget {
    host: HostIdx,
    id: u64,
}

impl Drop for Forget {
    fn drop(&mut self) {
        let _ = with(|core| {
            let p = core.fabric.borrow_mut().pending[self.host].remove(&self.id);
            drop(p);
        });
    }
}

/// Sends a wake-up for `queue` from `from` to `to` (a datagram: nobody
/// answers, and a lost one is never known).
pub fn send_wake(from: HostIdx, to: HostIdx, queue: &str) {
    let _ = with(|core| {
        send_on(
            core,
            Message {
                from,
                to,
                body: Body::Wake(queue.to_string()),
            },
        )
    });
}

/// Announces the wake-ups `host` hears on `signal` (its current incarnation).
pub fn hear_wake_ups(host: HostIdx, signal: Arc<WorkSignal>) {
    let _ = with(|core| core.fabric.borrow_mut().wakes[host] = Some(signal));
}

/// A request as the receiving host takes it.
pub struct Incoming {
    /// The sending host.
    pub from: String,
    /// The request's bytes.
    pub bytes: Vec<u8>,
    reply: Option<Replier>,
}

impl Incoming {
    /// The handle that answers this request.
    pub fn replier(&mut self) -> Replier {
        self.reply.take().expect("a request is answered once")
    }
}

/// Answers one request; dropped unanswered (its host crashed), it answers
/// with a reset. [`Replier::forget`] leaves the caller without an answer.
pub struct Replier {
    from: HostIdx,
    to: HostIdx,
    id: u64,
    inc: u32,
    done: bool,
}

impl Replier {
    /// Sends `bytes` back.
    pub fn send(mut self, bytes: Vec<u8>) {
        self.done = true;
        self.answer(Ok(bytes));
    }

    /// Never answers (the request or its answer was lost).
    pub fn forget(mut self) {
        self.done = true;
    }

    fn answer(&self, answer: Answer) {
        let _ = with(|core| {
            send_on(
                core,
                Message {
                    from: self.to,
                    to: self.from,
                    body: Body::Reply {
                        id: self.id,
                        inc: self.inc,
                        answer,
                    },
                },
            )
        });
    }
}

impl Drop for Replier {
    fn drop(&mut self) {
        if !self.done {
            self.done = true;
            self.answer(Err("connection reset by peer".into()));
        }
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        // A request never taken answers with a reset through its replier.
        drop(self.reply.take());
    }
}

/// Starts `host`'s inbox (its listening socket) for this incarnation.
pub fn listen(host: HostIdx) {
    let _ = with(|core| core.fabric.borrow_mut().inboxes[host].open = true);
}

/// The next request to `host`, in arrival order.
pub fn accept(host: HostIdx) -> Accept {
    Accept { host }
}

/// See [`accept`].
pub struct Accept {
    host: HostIdx,
}

impl Future for Accept {
    type Output = Incoming;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Incoming> {
        let got = with(|core| {
            let mut net = core.fabric.borrow_mut();
            let inbox = &mut net.inboxes[self.host];
            match inbox.queue.pop_front() {
                Some(i) => Some(i),
                None => {
                    inbox.waker = Some(cx.waker().clone());
                    None
                }
            }
        })
        .flatten();
        match got {
            Some(i) => Poll::Ready(i),
            None => Poll::Pending,
        }
    }
}
