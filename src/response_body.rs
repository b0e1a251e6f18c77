//! The body of every response: bytes (a slice of the mapped snapshot, or made for the
//! request), or a stored export decoded from gzip as it is sent, for a client that does not
//! accept gzip.
//!
//! Exports are stored only compressed; decoding one costs CPU for as long as it streams, so
//! the number decoded at once is capped ([`Decoders`]), and a client that accepts gzip, which
//! every HTTP library does, is always served the stored bytes without a copy.
//!
//! Over HTTP/1.1 a body is handed to hyper whole. Over HTTP/2 it is paced
//! ([`ResponseBody::paced`]): handed over a piece at a time, each piece a sign of progress for
//! the stream's stall deadline (`h2_streams` says why).

use std::io::{self, Read};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use hyper::body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::h2_streams::{note_progress, PIECE};

/// Bytes of decoded text handed to hyper at a time.
const DECODED_CHUNK: usize = 64 * 1024;

/// What a response carries.
#[derive(Debug)]
pub enum Payload {
    Bytes(Bytes),
    /// A gzip member whose text is sent from byte `skip`, `len` bytes of it; the permit is
    /// the decoder's place (none for a HEAD, which decodes nothing).
    Gunzip {
        gzip: Bytes,
        skip: u64,
        len: u64,
        permit: Option<DecodePermit>,
    },
}

impl Payload {
    /// Bytes of the body as sent (its `Content-Length`).
    pub fn len(&self) -> u64 {
        match self {
            Payload::Bytes(bytes) => bytes.len() as u64,
            Payload::Gunzip { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The exports being decoded at once, and how many may be.
#[derive(Debug)]
pub struct Decoders {
    places: Arc<Semaphore>,
    limit: usize,
}

/// One decode's place among [`Decoders`], given back when its body is dropped.
pub type DecodePermit = OwnedSemaphorePermit;

impl Decoders {
    pub fn new(limit: usize) -> Decoders {
        Decoders {
            places: Arc::new(Semaphore::new(limit)),
            limit,
        }
    }

    /// A place, unless `limit` decodes are running.
    pub fn try_acquire(&self) -> Option<DecodePermit> {
        self.places.clone().try_acquire_owned().ok()
    }

    pub fn active(&self) -> usize {
        self.limit - self.places.available_permits()
    }
}

/// The `hyper` body of a response.
#[derive(Debug)]
pub struct ResponseBody {
    state: State,
    /// HTTP/2: handed over a piece at a time, progress noted.
    paced: bool,
}

#[derive(Debug)]
enum State {
    Bytes(Option<Bytes>),
    Gunzip(Box<Decoding>),
}

struct Decoding {
    decoder: flate2::bufread::GzDecoder<io::Cursor<Bytes>>,
    skip: u64,
    left: u64,
    _permit: Option<DecodePermit>,
}

impl std::fmt::Debug for Decoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoding").field("left", &self.left).finish()
    }
}

impl ResponseBody {
    pub fn new(payload: Payload) -> ResponseBody {
        let state = match payload {
            Payload::Bytes(bytes) => State::Bytes((!bytes.is_empty()).then_some(bytes)),
            Payload::Gunzip { len: 0, .. } => State::Bytes(None),
            Payload::Gunzip {
                gzip,
                skip,
                len,
                permit,
            } => State::Gunzip(Box::new(Decoding {
                decoder: flate2::bufread::GzDecoder::new(io::Cursor::new(gzip)),
                skip,
                left: len,
                _permit: permit,
            })),
        };
        ResponseBody { state, paced: false }
    }

    pub fn empty() -> ResponseBody {
        ResponseBody::new(Payload::Bytes(Bytes::new()))
    }

    /// The same body, sent the HTTP/2 way: pieces of at most [`PIECE`] bytes, each noted as
    /// progress of its stream.
    pub fn paced(self) -> ResponseBody {
        ResponseBody { paced: true, ..self }
    }
}

/// How much of the `left` bytes to hand over next.
fn next_piece(paced: bool, left: usize) -> usize {
    if paced {
        PIECE.min(left)
    } else {
        left
    }
}

/// Text decoded and thrown away per poll on the way to a range's start: a range deep into an
/// export is reached over many polls, never in one long stretch of a worker thread.
const SKIP_PER_POLL: u64 = 256 * 1024;

impl Decoding {
    /// Decodes and drops up to [`SKIP_PER_POLL`] bytes of what comes before the range.
    fn skip_some(&mut self) -> io::Result<()> {
        let mut sink = [0u8; 16 * 1024];
        let mut skipped = 0;
        while self.skip > 0 && skipped < SKIP_PER_POLL {
            let want = usize::try_from(self.skip).unwrap_or(usize::MAX).min(sink.len());
            let n = self.decoder.read(&mut sink[..want])?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "export ends before its range",
                ));
            }
            self.skip -= n as u64;
            skipped += n as u64;
        }
        Ok(())
    }

    /// The next `most` bytes (or fewer, at the end) of text, once the skip is done.
    fn next_chunk(&mut self, most: usize) -> io::Result<Bytes> {
        let want = (self.left as usize).min(most);
        let mut chunk = BytesMut::zeroed(want);
        let mut filled = 0;
        while filled < want {
            let n = self.decoder.read(&mut chunk[filled..])?;
            if n == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "export ends early"));
            }
            filled += n;
        }
        self.left -= want as u64;
        Ok(chunk.freeze())
    }
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        let paced = this.paced;
        let piece = match &mut this.state {
            State::Bytes(None) => return Poll::Ready(None),
            State::Bytes(Some(bytes)) if next_piece(paced, bytes.len()) < bytes.len() => {
                Ok(bytes.split_to(next_piece(paced, bytes.len())))
            }
            State::Bytes(last) => Ok(last.take().unwrap_or_default()),
            State::Gunzip(decoding) if decoding.skip > 0 => {
                // The server's own work, not the peer's to wait for: it counts as progress.
                if paced {
                    note_progress();
                }
                if let Err(error) = decoding.skip_some() {
                    this.state = State::Bytes(None);
                    return Poll::Ready(Some(Err(error)));
                }
                // The rest at the next poll, after whatever else the worker has to do.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            State::Gunzip(decoding) => {
                let left = usize::try_from(decoding.left).unwrap_or(usize::MAX);
                let chunk = decoding.next_chunk(next_piece(paced, left).min(DECODED_CHUNK));
                if decoding.left == 0 || chunk.is_err() {
                    // Done (or broken): the decoder and its permit go now, not when hyper
                    // drops the body.
                    this.state = State::Bytes(None);
                }
                chunk
            }
        };
        if paced {
            note_progress();
        }
        Poll::Ready(Some(piece.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.state, State::Bytes(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Bytes(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            State::Gunzip(decoding) => SizeHint::with_exact(decoding.left),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoders_are_capped_and_a_dropped_body_gives_its_place_back() {
        let decoders = Decoders::new(2);
        let first = decoders.try_acquire().unwrap();
        let second = decoders.try_acquire().unwrap();
        assert!(decoders.try_acquire().is_none());
        drop(first);
        let third = decoders.try_acquire().unwrap();
        let body = ResponseBody::new(Payload::Gunzip {
            gzip: Bytes::new(),
            skip: 0,
            len: 10,
            permit: Some(third),
        });
        assert_eq!(decoders.active(), 2);
        drop(body);
        drop(second);
        assert_eq!(decoders.active(), 0);
    }
}
