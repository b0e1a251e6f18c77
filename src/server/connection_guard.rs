//! Per-connection deadlines, enforced by wrapping the connection's byte stream (above TLS, so
//! it sees HTTP): the idle deadline and the head deadline, one timer per connection, none per
//! request; and for HTTP/2, what counts as activity and how many control frames a peer may
//! send.
//!
//! - idle: no activity in either direction for `idle`. For HTTP/1.1 any byte is activity. For
//!   HTTP/2 only frames that move requests are (HEADERS, DATA, WINDOW_UPDATE, RST_STREAM and
//!   the like, either way): PING and SETTINGS frames alone never keep a connection alive, so a
//!   peer that opens streams, never reads them and pings now and then is closed at the idle
//!   deadline, and the memory its stalled streams held goes with it.
//! - head: one request head has been arriving, unanswered, for `head` (a head trickled in
//!   slowly, the slowloris pattern), counted from accept for the first request, so a socket
//!   that connects and sends nothing is cut at this deadline too. It measures how long *one*
//!   request has waited, never how often a busy connection is found mid-request: a connection
//!   that keeps completing requests is never cut by it, however long it lives. HTTP/2
//!   connections get the idle deadline only once their preface arrives: a client legitimately
//!   sends frames that need no answer.
//! - protocol: decided here, once, whatever the read boundaries. Until the first bytes are the
//!   whole 24-byte HTTP/2 preface or can no longer be one (or the peer closes), the guard holds
//!   them and hands nothing on, under the head deadline; then the connection is HTTP/2, held to
//!   every limit below from its first frame, or HTTP/1.1. A preface split over several reads
//!   (`PR`, a pause, the rest) is judged as a whole one is. The write batch asks the guard
//!   ([`KnowsProtocol`]) rather than judging for itself.
//! - control frames: an HTTP/2 peer may send at most `control_frames_per_sec` PING and SETTINGS
//!   frames a second (each costs the server an acknowledgement); past that the connection is
//!   closed.
//! - response tails: an HTTP/2 response whose HEADERS went out and whose end has not, with no
//!   DATA of it sent for `response_tail` (twice the stream deadline), closes the connection. A
//!   stream still in its task is reset at the stream deadline (`h2_streams`); what this catches
//!   is a last piece h2 holds after the task is gone, for a peer that keeps its window short.
//!
//! I/O only sets flags and counts (no clock read, no timer update on the hot path); the timer
//! ticks every half of the shorter deadline and counts whole ticks, so a deadline is enforced
//! between its length and half a deadline after it, never before.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The limits one connection is held to.
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    pub idle: Duration,
    pub head: Duration,
    /// PING and SETTINGS frames an HTTP/2 peer may send per second.
    pub control_frames_per_sec: u32,
    /// How long an HTTP/2 response may go with none of its DATA sent before its connection
    /// is closed.
    pub response_tail: Duration,
}

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
    /// What the first bytes said: nothing yet, HTTP/1.1 or HTTP/2 (by its preface).
    protocol: Decided,
    /// The first bytes, held while they may still be the start of the preface.
    held: Held,
    /// The frame boundaries of what was written before the protocol was decided.
    early_out: FrameReader,
    idle_ticks: u32,
    unanswered_ticks: u32,
    /// Ticks since the connection opened: the clock of the HTTP/2 responses' progress.
    ticks: u32,
    response_tail_limit: u32,
    /// Set once the HTTP/2 preface is seen: the frames each way, parsed for their types.
    h2: Option<Box<H2Frames>>,
    control_frames_per_tick: u32,
}

/// What an HTTP/2 client sends first (RFC 9113 3.4), over TLS and by prior knowledge alike.
const H2_PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What a connection's first bytes say: HTTP/2 (`Some(true)`) once they hold the whole preface,
/// HTTP/1.1 (`Some(false)`) as soon as they cannot begin it, nothing yet (`None`) before.
pub(crate) fn judge_first_bytes(first: &[u8]) -> Option<bool> {
    let n = first.len().min(H2_PREFACE.len());
    if first[..n] != H2_PREFACE[..n] {
        Some(false)
    } else if n == H2_PREFACE.len() {
        Some(true)
    } else {
        None
    }
}

/// Which protocol a connection speaks, as its [`ConnectionGuard`] decided: the one place the
/// first bytes are judged, for whatever else needs to know (the write batch).
pub trait KnowsProtocol {
    /// `None` while undecided; then whether the connection speaks HTTP/2.
    fn speaks_h2(&self) -> Option<bool>;
}

/// A connection's protocol, as far as its first bytes have decided it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decided {
    Not,
    Http1,
    Http2,
}

/// The first bytes of a connection, held until they decide its protocol, then handed on (over
/// several reads, if the reader has little room).
#[derive(Debug, Default)]
struct Held {
    bytes: [u8; H2_PREFACE.len()],
    len: usize,
    /// How many of them have been handed on.
    given: usize,
    /// The peer closed while they were held: an end of file follows them.
    eof: bool,
}

/// The frame boundaries of both directions of an HTTP/2 connection.
#[derive(Debug)]
struct H2Frames {
    incoming: FrameReader,
    outgoing: FrameReader,
    /// PING and SETTINGS frames received since the last tick.
    control_frames: u32,
    responses: Responses,
}

/// The responses of an HTTP/2 connection that have begun (HEADERS sent) and not ended.
#[derive(Debug, Default)]
struct Responses {
    /// By stream: the tick their last DATA (or their HEADERS) went out in.
    open: Vec<(u32, u32)>,
    /// Streams the peer reset before their response began: h2 may still write HEADERS it had
    /// encoded for them, which begin nothing.
    reset_early: Vec<u32>,
}

impl Responses {
    /// At most this many early resets are remembered (the streams a connection may have open).
    const RESET_EARLY_KEPT: usize = 256;

    /// The peer reset `stream`.
    fn peer_reset(&mut self, stream: u32) {
        let before = self.open.len();
        self.open.retain(|&(open, _)| open != stream);
        if self.open.len() == before {
            if self.reset_early.len() == Self::RESET_EARLY_KEPT {
                self.reset_early.remove(0);
            }
            self.reset_early.push(stream);
        }
    }

    /// A frame the server sent, at tick `now`.
    fn sent(&mut self, frame: FrameHead, now: u32) {
        let position = self.open.iter().position(|&(stream, _)| stream == frame.stream);
        match (frame.kind, position) {
            (FRAME_RST_STREAM, Some(i)) => {
                self.open.swap_remove(i);
            }
            (_, Some(i)) if frame.ends_stream() => {
                self.open.swap_remove(i);
            }
            (FRAME_DATA, Some(i)) => self.open[i].1 = now,
            (FRAME_HEADERS, None) if !frame.ends_stream() && frame.stream != 0 => {
                match self.reset_early.iter().position(|&reset| reset == frame.stream) {
                    Some(i) => {
                        self.reset_early.swap_remove(i);
                    }
                    None => self.open.push((frame.stream, now)),
                }
            }
            _ => {}
        }
    }

    /// Whether a response has sent nothing for more than `limit` ticks. A response is stamped
    /// during the tick it moved in, so a whole `limit` has passed only once the count is past it.
    fn stalled(&self, now: u32, limit: u32) -> bool {
        self.open.iter().any(|&(_, moved)| now.wrapping_sub(moved) > limit)
    }
}

/// What a frame header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FrameHead {
    kind: u8,
    flags: u8,
    stream: u32,
}

impl FrameHead {
    fn is_control(self) -> bool {
        self.kind == FRAME_PING || self.kind == FRAME_SETTINGS
    }

    fn ends_stream(self) -> bool {
        (self.kind == FRAME_DATA || self.kind == FRAME_HEADERS) && self.flags & FLAG_END_STREAM != 0
    }
}

/// Follows frame headers (RFC 9113 4.1: 24-bit length, type, flags, stream) through a byte
/// stream that arrives in pieces of any size, skipping payloads.
#[derive(Debug, Default)]
struct FrameReader {
    /// Bytes of the preface still to skip (incoming only).
    preface_left: usize,
    header: [u8; 9],
    header_filled: usize,
    payload_left: usize,
}

const FRAME_DATA: u8 = 0x0;
const FRAME_HEADERS: u8 = 0x1;
const FRAME_RST_STREAM: u8 = 0x3;
const FRAME_SETTINGS: u8 = 0x4;
const FRAME_PING: u8 = 0x6;
const FLAG_END_STREAM: u8 = 0x1;

impl FrameReader {
    /// Feeds `bytes`, calling `frame` with the header of each frame that begins in them.
    fn feed(&mut self, mut bytes: &[u8], mut frame: impl FnMut(FrameHead)) {
        let skip = self.preface_left.min(bytes.len());
        self.preface_left -= skip;
        bytes = &bytes[skip..];
        while !bytes.is_empty() {
            if self.payload_left > 0 {
                let skip = self.payload_left.min(bytes.len());
                self.payload_left -= skip;
                bytes = &bytes[skip..];
                continue;
            }
            let take = (9 - self.header_filled).min(bytes.len());
            self.header[self.header_filled..self.header_filled + take].copy_from_slice(&bytes[..take]);
            self.header_filled += take;
            bytes = &bytes[take..];
            if self.header_filled == 9 {
                self.header_filled = 0;
                let [a, b, c, kind, flags, s0, s1, s2, s3] = self.header;
                self.payload_left = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
                let stream = u32::from_be_bytes([s0 & 0x7f, s1, s2, s3]);
                frame(FrameHead { kind, flags, stream });
            }
        }
    }
}

impl<S> ConnectionGuard<S> {
    pub fn new(inner: S, deadlines: Deadlines) -> ConnectionGuard<S> {
        let Deadlines {
            idle,
            head,
            control_frames_per_sec,
            response_tail,
        } = deadlines;
        let tick = (idle.min(head).min(response_tail) / 2).max(Duration::from_millis(10));
        let ticks = |deadline: Duration| (deadline.as_nanos() / tick.as_nanos()).max(1) as u32;
        let per_tick = (f64::from(control_frames_per_sec) * tick.as_secs_f64()).ceil();
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
            protocol: Decided::Not,
            held: Held::default(),
            early_out: FrameReader::default(),
            idle_ticks: 0,
            unanswered_ticks: 0,
            ticks: 0,
            response_tail_limit: ticks(response_tail),
            h2: None,
            control_frames_per_tick: (per_tick as u32).max(1),
        }
    }

    /// From here on the connection speaks HTTP/2: idle deadline only, activity by frame type.
    fn become_h2(&mut self) {
        self.head_limit = u32::MAX;
        self.h2 = Some(Box::new(H2Frames {
            incoming: FrameReader {
                preface_left: H2_PREFACE.len(),
                ..FrameReader::default()
            },
            outgoing: std::mem::take(&mut self.early_out),
            control_frames: 0,
            responses: Responses::default(),
        }));
    }

    /// Counts elapsed ticks; the reason when a limit has been passed.
    fn expired(&mut self, cx: &mut Context<'_>) -> Option<&'static str> {
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
            self.ticks = self.ticks.wrapping_add(1);
            if let Some(h2) = &mut self.h2 {
                h2.control_frames = 0;
                if h2.responses.stalled(self.ticks, self.response_tail_limit) {
                    return Some("an HTTP/2 response made no progress for too long");
                }
            }
            if self.idle_ticks >= self.idle_limit {
                return Some("connection idle for too long");
            }
            if self.unanswered_ticks >= self.head_limit {
                return Some("request head unfinished for too long");
            }
            let next = tokio::time::Instant::now() + self.tick;
            self.timer.as_mut().reset(next);
        }
        None
    }

    /// Passes a ready result through; turns a passed deadline into an error.
    fn track<T>(&mut self, poll: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match poll {
            Poll::Pending => match self.expired(cx) {
                Some(reason) => Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, reason))),
                None => Poll::Pending,
            },
            other => other,
        }
    }

    /// The first bytes have decided the protocol.
    fn decide(&mut self, h2: bool) {
        if h2 {
            self.protocol = Decided::Http2;
            self.become_h2();
        } else {
            self.protocol = Decided::Http1;
        }
    }

    /// Hands what is held to `buf`, as much as it has room for, counting it as read.
    fn give_held(&mut self, buf: &mut ReadBuf<'_>) -> io::Result<()> {
        let (from, bytes) = (self.held.given, self.held.bytes);
        let n = (self.held.len - from).min(buf.remaining());
        buf.put_slice(&bytes[from..from + n]);
        self.held.given += n;
        self.note_read(&bytes[from..from + n])
    }

    /// Whether held bytes (or the end of file behind them) are still to be handed on.
    fn holds(&self) -> bool {
        self.held.given < self.held.len || self.held.eof
    }

    fn note_read(&mut self, read: &[u8]) -> io::Result<()> {
        self.awaiting_response = true;
        let Some(h2) = &mut self.h2 else {
            self.moved = true;
            return Ok(());
        };
        let (mut control, mut other) = (0, 0);
        let responses = &mut h2.responses;
        h2.incoming.feed(read, |frame| {
            if frame.is_control() {
                control += 1;
            } else {
                other += 1;
            }
            if frame.kind == FRAME_RST_STREAM {
                responses.peer_reset(frame.stream);
            }
        });
        h2.control_frames += control;
        if other > 0 {
            self.moved = true;
        }
        if h2.control_frames > self.control_frames_per_tick {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "too many PING and SETTINGS frames",
            ));
        }
        Ok(())
    }

    fn note_written(&mut self, written: &[u8]) {
        if self.protocol == Decided::Not {
            // HTTP/2's own SETTINGS, written (over ALPN h2) before the peer's preface is read:
            // they answer no request, so the head deadline runs on, and their frames are
            // followed from here so the count of what went out stays whole.
            self.early_out.feed(written, |_| {});
            return;
        }
        self.awaiting_response = false;
        self.answered = true;
        let now = self.ticks;
        match &mut self.h2 {
            // A server's own PING and SETTINGS acknowledgements are not progress.
            Some(h2) => {
                let mut moved = false;
                let responses = &mut h2.responses;
                h2.outgoing.feed(written, |frame| {
                    moved |= !frame.is_control();
                    responses.sent(frame, now);
                });
                self.moved |= moved;
            }
            None => self.moved = true,
        }
    }
}

impl<S: AsyncRead + Unpin> ConnectionGuard<S> {
    /// Reads until the first bytes decide the protocol, holding them meanwhile, then hands them
    /// on. The first read goes into the reader's own buffer, so a connection decided by it (any
    /// HTTP/1.1 request, a whole preface) has nothing copied; only bytes that may still begin
    /// the preface are taken back and held.
    fn poll_decide(&mut self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        while self.protocol == Decided::Not {
            if self.held.len == 0 {
                let before = buf.filled().len();
                std::task::ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
                let read = &buf.filled()[before..];
                match (read.is_empty(), judge_first_bytes(read)) {
                    // Closed before a byte: nothing to decide, nothing to hold.
                    (true, _) => self.decide(false),
                    (false, Some(h2)) => {
                        self.decide(h2);
                        self.note_read(&buf.filled()[before..])?;
                    }
                    (false, None) => {
                        self.held.bytes[..read.len()].copy_from_slice(read);
                        self.held.len = read.len();
                        buf.set_filled(before);
                        self.moved = true;
                    }
                }
                if self.protocol != Decided::Not {
                    return Poll::Ready(Ok(()));
                }
            } else {
                let mut room = ReadBuf::new(&mut self.held.bytes[self.held.len..]);
                std::task::ready!(Pin::new(&mut self.inner).poll_read(cx, &mut room))?;
                let n = room.filled().len();
                if n == 0 {
                    // Closed with the preface unfinished: what came is HTTP/1.1's to refuse.
                    self.held.eof = true;
                    self.decide(false);
                } else {
                    self.held.len += n;
                    self.moved = true;
                    if let Some(h2) = judge_first_bytes(&self.held.bytes[..self.held.len]) {
                        self.decide(h2);
                    }
                }
            }
        }
        self.give_held(buf)?;
        Poll::Ready(Ok(()))
    }
}

impl<S> KnowsProtocol for ConnectionGuard<S> {
    fn speaks_h2(&self) -> Option<bool> {
        match self.protocol {
            Decided::Not => None,
            Decided::Http1 => Some(false),
            Decided::Http2 => Some(true),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ConnectionGuard<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.protocol == Decided::Not {
            let poll = this.poll_decide(cx, buf);
            return this.track(poll, cx);
        }
        if this.holds() {
            if this.held.given < this.held.len {
                this.give_held(buf)?;
            }
            // Past the held bytes, the end of file the peer sent behind them (an empty read).
            else {
                this.held.eof = false;
            }
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.note_read(&buf.filled()[before..])?;
        }
        this.track(poll, cx)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ConnectionGuard<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = poll {
            if n > 0 {
                this.note_written(&buf[..n]);
            }
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
        if let Poll::Ready(Ok(n)) = poll {
            let mut left = n;
            for buf in bufs {
                if left == 0 {
                    break;
                }
                let part = left.min(buf.len());
                this.note_written(&buf[..part]);
                left -= part;
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut bytes = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, 0, 0, 0, 0, 1];
        bytes.extend_from_slice(payload);
        bytes
    }

    /// A peer whose bytes arrive in the pieces given, one piece a read: `None` is a read that
    /// finds nothing yet (then the next piece arrives), an empty piece the end of file; past
    /// the last piece, nothing more arrives.
    struct Pieces(std::collections::VecDeque<Option<Vec<u8>>>);

    impl AsyncRead for Pieces {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let pieces = &mut self.get_mut().0;
            match pieces.pop_front() {
                Some(Some(mut piece)) => {
                    let n = piece.len().min(buf.remaining());
                    buf.put_slice(&piece[..n]);
                    if n < piece.len() {
                        pieces.push_front(Some(piece.split_off(n)));
                    }
                    Poll::Ready(Ok(()))
                }
                Some(None) | None => Poll::Pending,
            }
        }
    }

    impl AsyncWrite for Pieces {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(buf.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn guard(pieces: Vec<Option<Vec<u8>>>, control_frames_per_sec: u32) -> ConnectionGuard<Pieces> {
        let deadlines = Deadlines {
            idle: Duration::from_secs(10),
            head: Duration::from_secs(10),
            control_frames_per_sec,
            response_tail: Duration::from_secs(20),
        };
        ConnectionGuard::new(Pieces(pieces.into()), deadlines)
    }

    /// What reading `guard` with `room` bytes a read hands on until it has nothing more for now;
    /// whether it reached the end of file; the error that ended it, if one did.
    fn read_now(guard: &mut ConnectionGuard<Pieces>, room: usize) -> (Vec<u8>, bool, Option<io::Error>) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        loop {
            let mut space = vec![0u8; room];
            let mut buf = ReadBuf::new(&mut space);
            match Pin::new(&mut *guard).poll_read(&mut cx, &mut buf) {
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return (out, true, None),
                Poll::Ready(Ok(())) => out.extend_from_slice(buf.filled()),
                Poll::Ready(Err(error)) => return (out, false, Some(error)),
                Poll::Pending => return (out, false, None),
            }
        }
    }

    #[test]
    fn the_first_bytes_decide_the_protocol_once_whole_or_impossible() {
        assert_eq!(judge_first_bytes(b""), None);
        assert_eq!(judge_first_bytes(b"PR"), None);
        assert_eq!(judge_first_bytes(&H2_PREFACE[..23]), None);
        assert_eq!(judge_first_bytes(H2_PREFACE), Some(true));
        assert_eq!(
            judge_first_bytes(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04"),
            Some(true)
        );
        assert_eq!(judge_first_bytes(b"G"), Some(false));
        assert_eq!(judge_first_bytes(b"PUT / HTTP/1.1"), Some(false));
        assert_eq!(judge_first_bytes(b"PRI * HTTP/2.0\r\n\r\nXX"), Some(false));
    }

    /// The preface cut at every offset, read with ample and with little room: nothing is handed
    /// on until the preface is whole, then everything is, in order, and the connection is
    /// HTTP/2 from its first frame (a PING flood right behind the preface is refused).
    #[tokio::test]
    async fn a_preface_split_anywhere_is_held_then_judged_whole() {
        let mut frames = frame(FRAME_SETTINGS, &[0; 6]);
        frames.extend(frame(0x1, &[7; 40])); // HEADERS
        let mut flood = frames.clone();
        for _ in 0..40 {
            flood.extend(frame(FRAME_PING, &[1; 8]));
        }
        for split in 1..H2_PREFACE.len() {
            for room in [3, 5, 4096] {
                let rest = [&H2_PREFACE[split..], &frames[..]].concat();
                let mut io = guard(vec![Some(H2_PREFACE[..split].to_vec()), None, Some(rest)], 1000);
                let (first, eof, error) = read_now(&mut io, room);
                assert!(
                    first.is_empty() && !eof && error.is_none(),
                    "split {split}: handed on {first:?}"
                );
                assert_eq!(io.speaks_h2(), None, "split {split}");
                let (rest, _, error) = read_now(&mut io, room);
                assert!(error.is_none(), "split {split}, room {room}: {error:?}");
                assert_eq!(
                    rest,
                    [&H2_PREFACE[..], &frames[..]].concat(),
                    "split {split}, room {room}"
                );
                assert_eq!(io.speaks_h2(), Some(true), "split {split}");
                assert_eq!(io.head_limit, u32::MAX, "HTTP/2 has the idle deadline only");

                let rest = [&H2_PREFACE[split..], &flood[..]].concat();
                let mut io = guard(vec![Some(H2_PREFACE[..split].to_vec()), None, Some(rest)], 1);
                read_now(&mut io, room);
                let (_, _, error) = read_now(&mut io, room);
                let error = error.unwrap_or_else(|| panic!("split {split}, room {room}: a PING flood was read"));
                assert_eq!(error.kind(), io::ErrorKind::InvalidData, "split {split}");
            }
        }
    }

    /// Bytes that stop matching the preface decide HTTP/1.1 at the byte that differs; a peer
    /// that closes mid-preface gets its bytes handed on, then the end of file.
    #[tokio::test]
    async fn what_cannot_be_the_preface_is_http1_and_an_early_close_ends_it() {
        for split in 1..H2_PREFACE.len() {
            let mut other = H2_PREFACE.to_vec();
            other[split] = b'X';
            let mut io = guard(
                vec![Some(other[..split].to_vec()), None, Some(other[split..].to_vec())],
                1,
            );
            assert!(read_now(&mut io, 4096).0.is_empty());
            assert_eq!(read_now(&mut io, 4096).0, other, "split {split}");
            assert_eq!(io.speaks_h2(), Some(false), "split {split}");

            let mut io = guard(vec![Some(H2_PREFACE[..split].to_vec()), None, Some(Vec::new())], 1);
            assert!(read_now(&mut io, 4096).0.is_empty());
            let (read, eof, _) = read_now(&mut io, 4096);
            assert_eq!((&read[..], eof), (&H2_PREFACE[..split], true), "split {split}");
            assert_eq!(io.speaks_h2(), Some(false));
        }
        // A request in its first read is decided by it, and nothing is held.
        let mut io = guard(vec![Some(b"GET / HTTP/1.1\r\n\r\n".to_vec())], 1);
        assert_eq!(read_now(&mut io, 4096).0, b"GET / HTTP/1.1\r\n\r\n");
        assert_eq!((io.speaks_h2(), io.held.len), (Some(false), 0));
    }

    #[test]
    fn responses_are_followed_from_headers_to_their_end() {
        let head = |kind, flags, stream| FrameHead { kind, flags, stream };
        let mut responses = Responses::default();
        responses.sent(head(FRAME_HEADERS, 0, 1), 0);
        responses.sent(head(FRAME_HEADERS, 0, 3), 0);
        // A response without a body ends with its HEADERS and is never followed.
        responses.sent(head(FRAME_HEADERS, FLAG_END_STREAM, 5), 0);
        responses.sent(head(FRAME_DATA, 0, 1), 4);
        assert_eq!(responses.open, [(1, 4), (3, 0)]);
        assert!(!responses.stalled(4, 4) && responses.stalled(5, 4));
        responses.sent(head(FRAME_DATA, FLAG_END_STREAM, 1), 5);
        responses.sent(head(FRAME_RST_STREAM, 0, 3), 5);
        responses.sent(head(FRAME_PING, 0, 0), 5);
        assert!(responses.open.is_empty());
        // The peer resets stream 7 before its HEADERS went out: they begin nothing.
        responses.peer_reset(7);
        responses.sent(head(FRAME_HEADERS, 0, 7), 6);
        assert!(responses.open.is_empty() && responses.reset_early.is_empty());
        // A reset of a response under way ends it.
        responses.sent(head(FRAME_HEADERS, 0, 9), 6);
        responses.peer_reset(9);
        assert!(responses.open.is_empty() && responses.reset_early.is_empty());
    }

    #[test]
    fn frames_are_told_apart_however_the_bytes_are_cut() {
        let mut stream = H2_PREFACE.to_vec();
        stream.extend(frame(FRAME_SETTINGS, &[0; 6]));
        stream.extend(frame(0x1, &[7; 40])); // HEADERS
        stream.extend(frame(FRAME_PING, &[1; 8]));
        stream.extend(frame(0x8, &[0, 0, 1, 0])); // WINDOW_UPDATE
        stream.extend(frame(FRAME_PING, &[2; 8]));
        for piece in [1, 2, 5, 9, 10, 1000] {
            let mut reader = FrameReader {
                preface_left: H2_PREFACE.len(),
                ..FrameReader::default()
            };
            let (mut control, mut other) = (0, 0);
            for chunk in stream.chunks(piece) {
                reader.feed(chunk, |frame| {
                    if frame.is_control() {
                        control += 1;
                    } else {
                        other += 1;
                    }
                });
            }
            assert_eq!((control, other), (3, 2), "pieces of {piece}");
        }
    }
}
