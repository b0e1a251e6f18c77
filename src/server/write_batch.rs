//! HTTP/2 responses written in one batch per poll of their connection, not one write each.
//!
//! `h2` writes out its frames whenever a DATA frame larger than 256 bytes is queued ahead of
//! another frame, and hyper polls the connection between the streams it accepts: so a client
//! with sixteen requests in flight got sixteen writes (sixteen TLS records, sixteen syscalls)
//! for the sixteen answers one read brought in. [`WriteBatch`] holds what the connection writes
//! during one poll of its task and writes it out at the first flush of the next poll, which it
//! asks for at once (it wakes the task the moment it holds bytes): one write for all the answers
//! a poll produced. A response waits no longer than the rest of the poll that made it.
//!
//! What is held is bounded: past `WRITE_AT` (32 KiB) the batch is written out within the poll,
//! and a shutdown writes it before closing. HTTP/1.1 connections pass through untouched: one
//! request at a time gains nothing from it. Which a connection is, the batch asks the
//! connection guard beneath it ([`KnowsProtocol`]), the one place its first bytes are judged.
//!
//! `benches/lab/production.sh` measures it (docs/performance.md).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::server::connection_guard::KnowsProtocol;

/// A batch this large is written out without waiting for the next poll.
const WRITE_AT: usize = 32 * 1024;
/// What a batch's buffer starts with: room for several answers before it grows. It is freed
/// once written, so an idle connection holds none.
const FIRST_CAPACITY: usize = 8 * 1024;

/// Counts the polls of the connection's task: the clock a batch is held by.
#[derive(Clone, Debug, Default)]
pub struct TaskPolls(Arc<AtomicU32>);

impl TaskPolls {
    /// `connection`, counting each of its polls.
    pub fn count<F: Future>(&self, connection: F) -> Counted<F> {
        Counted {
            connection,
            polls: self.clone(),
        }
    }

    fn current(&self) -> u32 {
        self.0.load(Relaxed)
    }
}

pin_project_lite::pin_project! {
    /// A connection future whose polls are counted ([`TaskPolls::count`]).
    #[derive(Debug)]
    pub struct Counted<F> {
        #[pin]
        connection: F,
        polls: TaskPolls,
    }
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        this.polls.0.fetch_add(1, Relaxed);
        this.connection.poll(cx)
    }
}

/// A connection's byte stream whose HTTP/2 writes are batched per poll (see the module's notes).
#[derive(Debug)]
pub struct WriteBatch<S> {
    inner: S,
    held: Vec<u8>,
    /// Bytes of `held` already written (a write may take part of it).
    written: usize,
    polls: TaskPolls,
    /// The poll in which `held` took its first byte.
    held_since: Option<u32>,
}

impl<S: KnowsProtocol> WriteBatch<S> {
    /// Whether writes are batched: only once the connection is known to speak HTTP/2 (nothing
    /// is written before its first bytes decide it).
    fn batches(&self) -> bool {
        self.inner.speaks_h2() == Some(true)
    }
}

impl<S> WriteBatch<S> {
    /// `inner`, batched by the polls `polls` counts: the caller wraps the connection's future
    /// in [`TaskPolls::count`] of the same `polls`.
    pub fn new(inner: S, polls: TaskPolls) -> WriteBatch<S> {
        WriteBatch {
            inner,
            held: Vec::new(),
            written: 0,
            polls,
            held_since: None,
        }
    }

    /// Takes `bytes` into the batch; the first byte of a batch wakes the task, so that the
    /// next poll, which writes the batch out, comes right after this one.
    fn hold(&mut self, bytes: &[u8], cx: &Context<'_>) {
        if self.held_since.is_none() {
            self.held_since = Some(self.polls.current());
            cx.waker().wake_by_ref();
        }
        if self.held.capacity() == 0 {
            self.held.reserve(FIRST_CAPACITY.max(bytes.len()));
        }
        self.held.extend_from_slice(bytes);
    }
}

impl<S: AsyncWrite + Unpin> WriteBatch<S> {
    /// Writes out everything held.
    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.held.len() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.held = Vec::new();
        self.written = 0;
        self.held_since = None;
        Poll::Ready(Ok(()))
    }

    /// Room for more: a full batch is written out first.
    fn poll_room(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.held.len() >= WRITE_AT {
            std::task::ready!(self.poll_write_held(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteBatch<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + KnowsProtocol + Unpin> AsyncWrite for WriteBatch<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.batches() {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        std::task::ready!(this.poll_room(cx))?;
        this.hold(buf, cx);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if !this.batches() {
            return Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        }
        std::task::ready!(this.poll_room(cx))?;
        let mut taken = 0;
        for buf in bufs {
            this.hold(buf, cx);
            taken += buf.len();
        }
        Poll::Ready(Ok(taken))
    }

    fn is_write_vectored(&self) -> bool {
        // Slices are copied into the batch; h2 then keeps large DATA payloads out of its own
        // buffer, as it does over a vectored socket. Undecided counts as batched: h2 asks once,
        // when it is built, which over ALPN is before the preface has been read (until then
        // its writes pass through, slice by slice).
        self.inner.speaks_h2() != Some(false) || self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(since) = this.held_since {
            if since == this.polls.current() {
                // Still the poll that made these bytes: the task is already woken for the next.
                return Poll::Ready(Ok(()));
            }
            std::task::ready!(this.poll_write_held(cx))?;
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::Wake;

    /// A byte sink that keeps each write it is given, as the socket would see them; whether it
    /// shut down; and what it says the connection speaks, as the guard would.
    #[derive(Default)]
    struct Writes(Vec<Vec<u8>>, bool, Option<bool>);

    impl KnowsProtocol for Writes {
        fn speaks_h2(&self) -> Option<bool> {
            self.2
        }
    }

    impl AsyncRead for Writes {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            buf.put_slice(b"GET / HTTP/1.1\r\n\r\n");
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Writes {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.get_mut().0.push(buf.to_vec());
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.get_mut().1 = true;
            Poll::Ready(Ok(()))
        }
    }

    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Relaxed);
        }
    }

    /// A waker that counts its wakes.
    fn counting_waker() -> (Arc<Wakes>, std::task::Waker) {
        let wakes = Arc::new(Wakes::default());
        (wakes.clone(), std::task::Waker::from(wakes))
    }

    /// A batch over a fresh sink, and the poll counter it is held by.
    fn batch(speaks_h2: Option<bool>) -> (WriteBatch<Writes>, TaskPolls) {
        let polls = TaskPolls::default();
        let sink = Writes(Vec::new(), false, speaks_h2);
        (WriteBatch::new(sink, polls.clone()), polls)
    }

    /// One poll of the connection's task: what `Counted` does before the connection runs.
    fn next_poll(polls: &TaskPolls) {
        polls.0.fetch_add(1, Relaxed);
    }

    fn write_and_flush(io: &mut WriteBatch<Writes>, cx: &mut Context<'_>, bytes: &[u8]) {
        let parts = [io::IoSlice::new(&bytes[..1]), io::IoSlice::new(&bytes[1..])];
        assert!(matches!(Pin::new(&mut *io).poll_write_vectored(cx, &parts), Poll::Ready(Ok(n)) if n == bytes.len()));
        assert!(matches!(Pin::new(&mut *io).poll_flush(cx), Poll::Ready(Ok(()))));
    }

    #[test]
    fn what_one_poll_writes_goes_out_in_one_write_at_the_next() {
        let (wakes, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let (mut io, polls) = batch(Some(true));
        next_poll(&polls);
        for answer in [&b"first answer"[..], b"second", b"third"] {
            write_and_flush(&mut io, &mut cx, answer);
        }
        assert!(io.inner.0.is_empty(), "written within the poll that made them");
        assert_eq!(wakes.0.load(Relaxed), 1, "the task is woken once, for the next poll");
        next_poll(&polls);
        assert!(matches!(Pin::new(&mut io).poll_flush(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(io.inner.0, [b"first answersecondthird".to_vec()]);
        assert_eq!(io.held.capacity(), 0, "a written batch's buffer is freed");
        // Nothing held: a flush writes nothing more, and a new batch wakes the task again.
        assert!(matches!(Pin::new(&mut io).poll_flush(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(io.inner.0.len(), 1);
        write_and_flush(&mut io, &mut cx, b"later");
        assert_eq!(wakes.0.load(Relaxed), 2);
    }

    #[test]
    fn a_full_batch_goes_out_within_the_poll_and_a_shutdown_writes_what_is_held() {
        let (_, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let (mut io, polls) = batch(Some(true));
        next_poll(&polls);
        let frame = vec![7u8; 16 * 1024];
        for _ in 0..3 {
            write_and_flush(&mut io, &mut cx, &frame);
        }
        assert_eq!(
            io.inner.0.len(),
            1,
            "the batch reached {WRITE_AT} bytes and was written"
        );
        assert_eq!(io.inner.0[0].len(), 2 * frame.len());
        assert!(matches!(Pin::new(&mut io).poll_shutdown(&mut cx), Poll::Ready(Ok(()))));
        assert_eq!(io.inner.0.len(), 2);
        assert_eq!(io.inner.0[1].len(), frame.len());
        assert!(io.inner.1, "shut down after the last bytes");
    }

    #[test]
    fn http1_connections_and_undecided_ones_pass_through() {
        let (_, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        for speaks_h2 in [Some(false), None] {
            let (mut io, polls) = batch(speaks_h2);
            let mut space = [0u8; 64];
            let mut read = ReadBuf::new(&mut space);
            assert!(matches!(
                Pin::new(&mut io).poll_read(&mut cx, &mut read),
                Poll::Ready(Ok(()))
            ));
            next_poll(&polls);
            for part in [&b"HTTP/1.1 200 OK\r\n\r\n"[..], b"{}"] {
                assert!(matches!(Pin::new(&mut io).poll_write(&mut cx, part), Poll::Ready(Ok(n)) if n == part.len()));
            }
            assert_eq!(io.inner.0.len(), 2, "each write straight to the socket ({speaks_h2:?})");
        }
    }

    #[test]
    fn the_batch_follows_the_guards_decision() {
        let (_, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let (mut io, polls) = batch(None);
        next_poll(&polls);
        let settings = b"SETTINGS before the preface";
        assert!(matches!(Pin::new(&mut io).poll_write(&mut cx, settings), Poll::Ready(Ok(n)) if n == settings.len()));
        assert_eq!(io.inner.0.len(), 1, "undecided: straight to the socket");
        assert!(
            io.is_write_vectored(),
            "h2 asks once, before the preface is read: undecided counts as batched"
        );
        io.inner.2 = Some(true);
        write_and_flush(&mut io, &mut cx, b"an answer");
        assert_eq!(io.inner.0.len(), 1, "HTTP/2: held for the next poll");
        io.inner.2 = Some(false);
        assert!(!io.is_write_vectored());
    }
}
