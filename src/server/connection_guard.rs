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
    /// Nothing read yet: the first bytes tell an HTTP/2 client (by its preface).
    first_read: bool,
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
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether a connection's first bytes read are the start of the HTTP/2 preface.
pub(crate) fn starts_h2_preface(first: &[u8]) -> bool {
    H2_PREFACE.starts_with(&first[..first.len().min(H2_PREFACE.len())])
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
            first_read: true,
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
            outgoing: FrameReader::default(),
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

    fn note_read(&mut self, read: &[u8]) -> io::Result<()> {
        if self.first_read {
            self.first_read = false;
            if read.len() >= 3 && starts_h2_preface(read) {
                self.become_h2();
            }
        }
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

impl<S: AsyncRead + Unpin> AsyncRead for ConnectionGuard<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
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
