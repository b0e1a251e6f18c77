//! Per-connection deadlines, enforced by wrapping the connection's socket: the idle deadline
//! (no byte moving either way) and the head deadline (one request head arriving too slowly,
//! counted from accept for the first). One timer per connection, none per request.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Both per-connection deadlines on one timer per connection, none per request:
/// - idle: no byte moved in either direction for `idle` (a keep-alive connection nobody uses,
///   a client that stopped sending, or one that stopped reading a response);
/// - head: one request head has been arriving, unanswered, for `head` (a head trickled in
///   slowly, the slowloris pattern), counted from accept for the first request, so a socket
///   that connects and sends nothing is cut at this deadline too.
///
/// The head deadline measures how long *one* request has waited, never how often a busy
/// connection is found mid-request: a connection that keeps completing requests is never cut
/// by it, however long it lives. I/O only sets flags (no clock read, no timer update on the
/// hot path); the timer ticks every half of the shorter deadline and counts whole ticks during
/// which the same request stayed pending with no response byte going out, so a deadline is
/// enforced between its length and half a deadline after it, never before.
///
/// HTTP/2 connections get the idle deadline only: a client legitimately sends frames that need
/// no answer (window updates, settings and ping acknowledgements), and hyper's HTTP/2 layer
/// bounds header sizes and pings idle peers itself.
#[allow(missing_debug_implementations)] // holds a timer and a socket; nothing to show
pub struct ConnectionGuard<S> {
    inner: S,
    timer: Pin<Box<Sleep>>,
    tick: Duration,
    idle_limit: u32,
    head_limit: u32,
    moved: bool,
    /// Request bytes arrived after the last response byte went out.
    awaiting_response: bool,
    /// A response byte went out since the last tick.
    answered: bool,
    /// `awaiting_response` as it was at the last tick: a request pending then and still
    /// pending now, with nothing answered between, has waited at least one whole tick.
    awaiting_at_last_tick: bool,
    /// Nothing read yet: the first bytes tell an HTTP/2 prior-knowledge client.
    first_read: bool,
    idle_ticks: u32,
    unanswered_ticks: u32,
}

/// What an HTTP/2 client sends first over plain TCP (RFC 9113 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl<S> ConnectionGuard<S> {
    pub fn new(inner: S, idle: Duration, head: Duration) -> ConnectionGuard<S> {
        let tick = (idle.min(head) / 2).max(Duration::from_millis(10));
        let ticks = |deadline: Duration| (deadline.as_nanos() / tick.as_nanos()).max(1) as u32;
        ConnectionGuard {
            inner,
            timer: Box::pin(tokio::time::sleep(tick)),
            tick,
            idle_limit: ticks(idle),
            head_limit: ticks(head),
            moved: false,
            // From accept: the first request head is due within the head deadline.
            awaiting_response: true,
            answered: false,
            awaiting_at_last_tick: true,
            first_read: true,
            idle_ticks: 0,
            unanswered_ticks: 0,
        }
    }

    /// From now on only the idle deadline applies (an HTTP/2 connection).
    pub fn idle_deadline_only(&mut self) {
        self.head_limit = u32::MAX;
    }

    /// Counts elapsed ticks; true when a deadline has passed.
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        while self.timer.as_mut().poll(cx).is_ready() {
            self.idle_ticks = if self.moved { 0 } else { self.idle_ticks + 1 };
            let still_waiting = self.awaiting_response && self.awaiting_at_last_tick && !self.answered;
            self.unanswered_ticks = if still_waiting {
                self.unanswered_ticks.saturating_add(1)
            } else {
                0
            };
            self.awaiting_at_last_tick = self.awaiting_response;
            self.answered = false;
            self.moved = false;
            if self.idle_ticks >= self.idle_limit || self.unanswered_ticks >= self.head_limit {
                return true;
            }
            let next = tokio::time::Instant::now() + self.tick;
            self.timer.as_mut().reset(next);
        }
        false
    }

    /// Passes a ready result through, noting activity; turns a passed deadline into an error.
    fn track<T>(&mut self, poll: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match poll {
            Poll::Pending if self.expired(cx) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection idle, or request unanswered, for too long",
            ))),
            other => other,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ConnectionGuard<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            if this.first_read {
                this.first_read = false;
                let read = &buf.filled()[before..];
                if read.len() >= 3 && H2_PREFACE.starts_with(&read[..read.len().min(H2_PREFACE.len())]) {
                    this.idle_deadline_only();
                }
            }
            this.moved = true;
            this.awaiting_response = true;
        }
        this.track(poll, cx)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ConnectionGuard<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.moved = true;
            this.awaiting_response = false;
            this.answered = true;
        }
        this.track(poll, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            this.moved = true;
            this.awaiting_response = false;
            this.answered = true;
        }
        this.track(poll, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
