//! HTTP/2 streams held to a stall deadline, and to a budget across the whole server.
//!
//! hyper runs each HTTP/2 response as a task of its own, through the executor it is given: the
//! task waits for the peer's flow-control window and hands the body to h2 as the window allows.
//! A peer that never opens the window (or opens it a byte at a time) leaves that task, and all
//! that h2 keeps for the stream, waiting for ever; the connection's idle deadline cannot help
//! while another stream on the same connection moves. So:
//!
//! - [`WatchingExecutor`] runs every stream task inside [`Watched`], which drops the task when
//!   it has made no progress for the stall deadline; h2 then resets the stream (RST_STREAM
//!   CANCEL) and frees what it queued. Progress is the response body handing over a piece
//!   ([`note_progress`]): HTTP/2 bodies are paced (`ResponseBody::paced`), handed over in
//!   pieces of at most [`PIECE`] bytes. hyper gives h2 a piece only once the stream's window
//!   has room beyond what h2 already holds, then asks for the next; so a stream's task lives
//!   until its last piece is handed over, and a reader must take a piece per deadline.
//! - The last piece is h2's to send once the task is gone, and a peer that keeps its window
//!   just short of it could leave it queued. Handing the last byte over alone would keep the
//!   task alive until then, but it costs every response a second DATA frame (measured: 30% of
//!   HTTP/2 throughput). So the connection guard watches those tails instead
//!   (`connection_guard`: a response with no DATA sent for twice the stream deadline closes its
//!   connection), by when this deadline has reset every stream still in a task.
//! - [`StreamBudget`] counts those tasks across the server; past its limit, new HTTP/2
//!   requests are answered 503 at once, before any key or budget is looked at. Those answers
//!   are streams too, and a peer that never reads can stall them as well: past the limit and an
//!   eighth more, a new stream's task is not started at all and h2 resets it at once, so what
//!   the server holds for HTTP/2 streams never exceeds the limit and its eighth.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// The most an HTTP/2 response hands over at once: one frame at h2's default frame size.
pub const PIECE: usize = 16 * 1024;

thread_local! {
    /// Pieces handed over by response bodies polled on this thread. A stream's task polls only
    /// its own body, so what changes while it is polled is its progress.
    static PROGRESS: Cell<u64> = const { Cell::new(0) };
}

/// Called by a paced body each time it hands over a piece (or its end).
pub fn note_progress() {
    PROGRESS.with(|p| p.set(p.get().wrapping_add(1)));
}

fn progress() -> u64 {
    PROGRESS.with(Cell::get)
}

/// The HTTP/2 stream tasks alive across the server, and how many may be.
#[derive(Debug)]
pub struct StreamBudget {
    open: AtomicUsize,
    limit: AtomicUsize,
    /// Requests answered 503 because the budget was full.
    pub refused: AtomicU64,
    /// Streams reset because they made no progress for the stall deadline.
    pub stalled: AtomicU64,
    /// Streams reset unanswered because even the 503s filled the budget's headroom.
    pub dropped: AtomicU64,
}

impl StreamBudget {
    pub fn new(limit: usize) -> StreamBudget {
        StreamBudget {
            open: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit),
            refused: AtomicU64::new(0),
            stalled: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// The most stream tasks ever alive: the limit, and an eighth more (at least 16) for the
    /// 503s that answer past it.
    pub fn hard_limit(&self) -> usize {
        let limit = self.limit();
        limit.saturating_add((limit / 8).max(16))
    }

    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Relaxed);
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Relaxed)
    }

    pub fn open(&self) -> usize {
        self.open.load(Relaxed)
    }

    /// Whether a new stream would go past the budget; counts the refusal it leads to.
    pub fn refuses_another(&self) -> bool {
        let full = self.open() >= self.limit();
        if full {
            self.refused.fetch_add(1, Relaxed);
        }
        full
    }
}

/// One stream's place in the budget, given back when its task ends.
#[derive(Debug)]
struct StreamSlot(Arc<StreamBudget>);

impl StreamSlot {
    /// A place among the streams held, unless the hard limit is reached: checked and taken in
    /// one step, so streams started at once on several threads cannot pass it.
    fn take(budget: &Arc<StreamBudget>) -> Option<StreamSlot> {
        let hard = budget.hard_limit();
        budget
            .open
            .fetch_update(Relaxed, Relaxed, |open| (open < hard).then_some(open + 1))
            .ok()
            .map(|_| StreamSlot(budget.clone()))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

/// The executor hyper's HTTP/2 server runs stream tasks on: tokio's, with each task watched.
#[derive(Clone, Debug)]
pub struct WatchingExecutor {
    budget: Arc<StreamBudget>,
    stall: Duration,
}

impl WatchingExecutor {
    pub fn new(budget: Arc<StreamBudget>, stall: Duration) -> WatchingExecutor {
        WatchingExecutor { budget, stall }
    }
}

impl<F> hyper::rt::Executor<F> for WatchingExecutor
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        let Some(slot) = StreamSlot::take(&self.budget) else {
            // Dropped unstarted: h2 resets the stream, and nothing is held for it.
            self.budget.dropped.fetch_add(1, Relaxed);
            drop(stream);
            return;
        };
        tokio::spawn(Watched {
            stream,
            deadline: None,
            stall: self.stall,
            slot,
        });
    }
}

pin_project_lite::pin_project! {
    /// A stream task that is dropped once it has made no progress for `stall`.
    pub struct Watched<F> {
        #[pin]
        stream: F,
        // Set when the task first waits: most streams are answered in their first poll and
        // never need a timer.
        #[pin]
        deadline: Option<Sleep>,
        stall: Duration,
        slot: StreamSlot,
    }
}

impl<F: Future<Output = ()>> Future for Watched<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut this = self.project();
        let before = progress();
        if this.stream.poll(cx).is_ready() {
            return Poll::Ready(());
        }
        let Some(mut deadline) = this.deadline.as_mut().as_pin_mut() else {
            this.deadline.set(Some(tokio::time::sleep(*this.stall)));
            if let Some(deadline) = this.deadline.as_pin_mut() {
                // Registers the timer; it cannot have expired yet.
                let _ = deadline.poll(cx);
            }
            return Poll::Pending;
        };
        if progress() != before {
            deadline.as_mut().reset(Instant::now() + *this.stall);
        }
        if deadline.poll(cx).is_ready() {
            // Ending here drops the stream task: h2 resets the stream and frees its queue.
            this.slot.0.stalled.fetch_add(1, Relaxed);
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
