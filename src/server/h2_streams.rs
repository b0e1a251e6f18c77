//! HTTP/2 streams held to a stall deadline, and to a budget across the whole server.
//!
//! hyper runs each HTTP/2 response as a task of its own, through the executor it is given: the
//! task waits for the peer's flow-control window and hands the body to h2 as the window allows.
//! A peer that never opens the window (or opens it a byte at a time) leaves that task, and all
//! that h2 keeps for the stream, waiting for ever; the connection's idle deadline cannot help
//! while another stream on the same connection moves. So:
//!
//! - [`WatchingExecutor`] runs every stream inside [`Watched`]: its first poll where hyper hands
//!   it over (most answers are complete in it), and a stream that has to wait as a task of its
//!   own. [`Watched`] drops the task when it has made no progress for the stall deadline; h2
//!   then resets the stream (RST_STREAM CANCEL) and frees what it queued. Progress is the
//!   response body handing over a piece (`response::body::note_progress`): HTTP/2 bodies are
//!   paced (`ResponseBody::paced`), handed over in pieces of at most `response::body::PIECE`
//!   bytes. hyper gives h2 a piece only once the stream's window has room beyond what h2
//!   already holds, then asks for the next; so a stream's task lives until its last piece is
//!   handed over, and a reader must take a piece per deadline.
//! - The last piece is h2's to send once the task is gone, and a peer that keeps its window
//!   just short of it could leave it queued. Handing the last byte over alone would keep the
//!   task alive until then, but it costs every response a second DATA frame (measured: 30% of
//!   HTTP/2 throughput). So the connection guard watches those tails instead
//!   (`connection_guard`: a response with no DATA sent for twice the stream deadline closes its
//!   connection), by when this deadline has reset every stream still in a task.
//! - `budgets::streams::StreamBudget` counts those tasks across the server; past its limit, new HTTP/2
//!   requests are answered 503 at once, before any key or budget is looked at. Those answers
//!   are streams too, and a peer that never reads can stall them as well: past the limit and an
//!   eighth more, a new stream's task is not started at all and h2 resets it at once, so what
//!   the server holds for HTTP/2 streams never exceeds the limit and its eighth.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use crate::budgets::streams::{StreamBudget, StreamSlot};
use crate::response::body::progress;

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
        let mut task = Box::pin(Watched {
            stream,
            deadline: None,
            stall: self.stall,
            slot,
        });
        // Most streams are answered in their first poll (the body is in the snapshot and the
        // window has room), so that poll runs here, on the connection's task, and only a stream
        // that has to wait becomes a task of its own: a spawned task per response (made,
        // scheduled, polled, freed) cost about 5,000 instructions, a tenth of an HTTP/2
        // request's whole cost (`benches/lab/instructions.sh`). Waiting,
        // it was woken by nothing (the no-op waker); a task is polled once when spawned, which
        // registers its own waker wherever this poll left the no-op one.
        let mut first = Context::from_waker(Waker::noop());
        match std::panic::catch_unwind(AssertUnwindSafe(|| task.as_mut().poll(&mut first))) {
            Ok(Poll::Ready(())) => {}
            Ok(Poll::Pending) => {
                tokio::spawn(task);
            }
            // A panic (reported by the panic hook) ends its own stream only: h2 resets it as
            // the task drops, as when every stream was a task of its own, and the connection
            // and its other streams go on.
            Err(_) => {}
        }
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
            this.slot.budget().stalled.fetch_add(1, Relaxed);
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
