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

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{self, Read};
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use hyper::body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::settings::Exports;

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

/// Pieces handed over on this thread so far: a stream task compares it before and after
/// polling its response.
pub fn progress() -> u64 {
    PROGRESS.with(Cell::get)
}

/// Bytes of decoded text handed to hyper at a time.
const DECODED_CHUNK: usize = 64 * 1024;

/// What a response carries.
#[derive(Debug)]
pub enum Payload {
    Bytes(Bytes),
    /// Slices sent one after the other (a ranged series export, assembled from the stored
    /// series of every company without a copy), `len` bytes in all.
    Pieces {
        pieces: Vec<Bytes>,
        len: u64,
    },
    /// A gzip member whose text is sent from byte `skip`, `len` bytes of it; the permit is
    /// the decoder's place (none for a HEAD, which decodes nothing).
    Gunzip {
        gzip: Bytes,
        skip: u64,
        len: u64,
        permit: Option<DecodePermit>,
    },
    /// A body made a step at a time as it is sent, holding a decoder's place (none for a HEAD,
    /// which makes nothing): a pass over every company's series (a ranged series export, an
    /// index's constituents of a day), each step a few companies' series decoded, so no poll
    /// holds a worker for long. Its length is known only at its end: it is sent without
    /// `Content-Length`.
    Made {
        steps: Steps,
        permit: Option<DecodePermit>,
    },
}

/// What a made body's next step gave: text to send, or work done (bytes decoded) with nothing
/// to send yet.
#[derive(Debug)]
pub enum Step {
    Text(Bytes),
    Worked(u64),
}

/// The steps of a made body, in order.
pub struct Steps(pub Box<dyn Iterator<Item = io::Result<Step>> + Send>);

impl std::fmt::Debug for Steps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Steps")
    }
}

impl Payload {
    /// Bytes of the body as sent (its `Content-Length`), when known before it is sent.
    pub fn known_len(&self) -> Option<u64> {
        match self {
            Payload::Bytes(bytes) => Some(bytes.len() as u64),
            Payload::Pieces { len, .. } | Payload::Gunzip { len, .. } => Some(*len),
            Payload::Made { .. } => None,
        }
    }
}

/// How the exports decoded for clients without gzip are shared out.
///
/// A decoded export holds one of a few places for as long as it streams, so a reader that
/// stops reading, or trickles, could keep a place for good, and a few keys with such readers
/// could hold them all. So:
/// - each key holds at most `per_key` places;
/// - a decoded response that moves less than `floor_bytes_per_sec` over a `floor_window` is
///   cut and its place freed at once (its connection then learns it at its next read), and its
///   key may not start another decoded export for one more window: a client that asks again
///   at once after each cut cannot keep a place by asking first;
/// - a key refused because every place is taken keeps its turn for as long as it asks again
///   within [`TURN_KEPT`], and freed places go to the keys waiting longest first.
///
/// So while other keys hold every place, a waiting key gets one as soon as a place is freed and
/// the keys ahead of it are served: at the latest when a holder finishes, or one floor window
/// after a holder starts reading slower than the floor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// Exports decoded at once across the server.
    pub places: usize,
    /// Places one key may hold at once.
    pub per_key: usize,
    /// The least a decoded response must move, on average over each window.
    pub floor_bytes_per_sec: u64,
    /// Also how long a key whose response was cut waits before its next decoded export.
    pub floor_window: Duration,
}

impl DecodeLimits {
    /// Exports decoded at once across the server: each costs a core for as long as it streams.
    pub const PLACES: usize = 4;
    /// Places only an Enterprise key may take: whatever keys of lower tiers (an index's
    /// constituents of a past day) or keyless clients hold, an Enterprise export finds one.
    pub const RESERVED_FOR_ENTERPRISE: usize = 2;
}

/// How long a key refused for want of a place keeps its turn without asking again: several
/// times the `Retry-After: 1` it is told.
pub const TURN_KEPT: Duration = Duration::from_secs(10);

/// The floor is 256 KiB/s over 30 s by default (`settings::Exports`): a 2 Mbit/s link clears
/// it with room, the 222 MB decoded companies export of 10,000 companies then takes at most 15
/// minutes, and a client slower than that is better served by the stored gzip bytes (a tenth
/// of the size, and no place held).
impl From<&Exports> for DecodeLimits {
    fn from(exports: &Exports) -> DecodeLimits {
        DecodeLimits {
            places: DecodeLimits::PLACES,
            per_key: usize::from(exports.export_decoders_per_key),
            floor_bytes_per_sec: u64::from(exports.export_decode_floor_kib_per_sec) * 1024,
            floor_window: exports.export_decode_window,
        }
    }
}

/// The exports being decoded at once, by key, within [`DecodeLimits`].
#[derive(Debug)]
pub struct Decoders {
    places: Arc<Semaphore>,
    book: Arc<Mutex<Book>>,
    limits: DecodeLimits,
    /// Decoded exports refused because their key held its share.
    pub refused_for_share: AtomicU64,
    /// Decoded exports cut for moving less than the floor rate.
    pub cut_slow: Arc<AtomicU64>,
}

/// Who holds places, who waits for one, and who was cut: decided together under one lock.
#[derive(Debug, Default)]
struct Book {
    holders: HashMap<Arc<str>, usize>,
    /// Places held by callers below Enterprise, who may never take the last
    /// [`DecodeLimits::RESERVED_FOR_ENTERPRISE`].
    below_enterprise: usize,
    /// Keys refused for want of a place, longest waiting first, with when each last asked and
    /// whether it is an Enterprise key's.
    waiting: std::collections::VecDeque<(Arc<str>, Instant, bool)>,
    /// Who was cut for slowness (a key, or a keyless client's address: [`DecodeHolder`]), and
    /// until when they wait.
    cooling: HashMap<Arc<str>, Instant>,
}

/// Why a decoded export was not started.
#[derive(Debug, PartialEq, Eq)]
pub enum DecodeRefused {
    /// The key holds its share already.
    KeyShare { held: usize },
    /// Every place is taken (by other keys), or promised to keys that waited longer.
    AllTaken { active: usize, turn: usize },
    /// The key's last decoded response was cut for slowness; it may start another in this many
    /// seconds.
    CoolingDown { retry_after: u64 },
}

/// Who asks for a decoder's place: the key whose share it counts against, who waits after a
/// cut for slowness, and whether the places kept for Enterprise are open to it.
#[derive(Clone, Debug)]
pub struct DecodeHolder {
    pub key: Arc<str>,
    pub cooled_as: Arc<str>,
    pub enterprise: bool,
}

impl DecodeHolder {
    /// A key: its share, and its cooling after a cut.
    pub fn key(key: &Arc<str>, enterprise: bool) -> DecodeHolder {
        DecodeHolder {
            key: key.clone(),
            cooled_as: key.clone(),
            enterprise,
        }
    }

    /// A keyless client: every keyless client shares one share (`key`, one name for them all),
    /// so together they hold at most one key's places; but a cut lands on the address that was
    /// cut (an IPv6 client's /64, which one subscriber commonly holds), not on every keyless
    /// client.
    pub fn keyless(key: &Arc<str>, peer: std::net::IpAddr) -> DecodeHolder {
        let address = match peer.to_canonical() {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        };
        DecodeHolder {
            key: key.clone(),
            cooled_as: Arc::from(format!("{key} at {address}")),
            enterprise: false,
        }
    }
}

/// One decode's place among [`Decoders`], given back when dropped: when its body is done or
/// dropped, or when it is cut for moving too slowly.
#[derive(Debug)]
pub struct DecodePermit {
    _place: OwnedSemaphorePermit,
    key: Arc<str>,
    /// Who waits if this body is cut.
    cooled_as: Arc<str>,
    /// Held by a caller below Enterprise (counted in `Book::below_enterprise`).
    below_enterprise: bool,
    book: Arc<Mutex<Book>>,
    /// The floor the body is held to, and where a cut is counted.
    limits: DecodeLimits,
    cut_slow: Arc<AtomicU64>,
}

impl DecodePermit {
    /// The body was cut for slowness: its key (or keyless address) waits one floor window
    /// before decoding again.
    fn cut(self) {
        if let Ok(mut book) = self.book.lock() {
            let now = Instant::now();
            book.cooling.retain(|_, until| *until > now);
            book.cooling
                .insert(self.cooled_as.clone(), now + self.limits.floor_window);
        }
        self.cut_slow.fetch_add(1, Relaxed);
    }
}

impl Drop for DecodePermit {
    fn drop(&mut self) {
        if let Ok(mut book) = self.book.lock() {
            if self.below_enterprise {
                book.below_enterprise = book.below_enterprise.saturating_sub(1);
            }
            if let Some(held) = book.holders.get_mut(&self.key) {
                *held -= 1;
                if *held == 0 {
                    book.holders.remove(&self.key);
                }
            }
        }
    }
}

impl Decoders {
    pub fn new(limits: DecodeLimits) -> Decoders {
        Decoders {
            places: Arc::new(Semaphore::new(limits.places)),
            book: Arc::default(),
            limits,
            refused_for_share: AtomicU64::new(0),
            cut_slow: Arc::default(),
        }
    }

    pub fn limits(&self) -> DecodeLimits {
        self.limits
    }

    /// A place for `holder`, unless it is cooling down after a cut, its key holds its share, or
    /// every free place is owed to keys that have waited longer; for a caller below Enterprise,
    /// also unless taking it would leave fewer free places than
    /// [`DecodeLimits::RESERVED_FOR_ENTERPRISE`] for Enterprise keys.
    pub fn try_acquire(&self, holder: &DecodeHolder) -> Result<DecodePermit, DecodeRefused> {
        let (key, enterprise) = (&holder.key, holder.enterprise);
        let all_taken = |turn| DecodeRefused::AllTaken {
            active: self.active(),
            turn,
        };
        let mut book = self.book.lock().map_err(|_| all_taken(0))?;
        let now = Instant::now();
        if let Some(&until) = book.cooling.get(&holder.cooled_as) {
            if until > now {
                let retry_after = (until - now).as_secs_f64().ceil().max(1.0) as u64;
                return Err(DecodeRefused::CoolingDown { retry_after });
            }
            book.cooling.remove(&holder.cooled_as);
        }
        let held = book.holders.get(key).copied().unwrap_or(0);
        if held >= self.limits.per_key {
            self.refused_for_share.fetch_add(1, Relaxed);
            return Err(DecodeRefused::KeyShare { held });
        }
        book.waiting
            .retain(|(_, asked, _)| now.duration_since(*asked) < TURN_KEPT);
        let turn = book.waiting.iter().position(|(waiting, _, _)| waiting == key);
        // While the lower tiers hold all the places open to them, a freed place can only be
        // an Enterprise key's: lower keys waiting are not ahead of one.
        let open_to_lower = self.limits.places.saturating_sub(DecodeLimits::RESERVED_FOR_ENTERPRISE);
        let lower_full = book.below_enterprise >= open_to_lower;
        let ahead = book
            .waiting
            .iter()
            .take(turn.unwrap_or(book.waiting.len()))
            .filter(|(_, _, waiter_enterprise)| *waiter_enterprise || !lower_full)
            .count();
        let place = match ahead < self.places.available_permits() && (enterprise || !lower_full) {
            true => self.places.clone().try_acquire_owned().ok(),
            false => None,
        };
        let Some(place) = place else {
            match turn {
                Some(turn) => book.waiting[turn].1 = now,
                None => book.waiting.push_back((key.clone(), now, enterprise)),
            }
            return Err(all_taken(ahead + 1));
        };
        if let Some(turn) = turn {
            book.waiting.remove(turn);
        }
        *book.holders.entry(key.clone()).or_insert(0) += 1;
        if !enterprise {
            book.below_enterprise += 1;
        }
        Ok(DecodePermit {
            _place: place,
            key: key.clone(),
            cooled_as: holder.cooled_as.clone(),
            below_enterprise: !enterprise,
            book: self.book.clone(),
            limits: self.limits,
            cut_slow: self.cut_slow.clone(),
        })
    }

    pub fn active(&self) -> usize {
        self.limits.places - self.places.available_permits()
    }
}

/// What a decoded body and its floor-rate watchdog share.
#[derive(Debug, Default)]
struct Progress {
    /// Bytes of text handed to hyper so far.
    sent: AtomicU64,
    /// Set by the watchdog: the body ends in an error at its next poll.
    cut: AtomicBool,
    /// Set by the body when it is done or dropped: the watchdog stops.
    over: AtomicBool,
    /// The place, held until the body is done or the watchdog cuts it.
    permit: Mutex<Option<DecodePermit>>,
}

/// A decoded body's floor: every window, the body must have moved `floor_bytes_per_sec` times
/// the window's seconds; if not, it is cut and its place freed at once. It runs as a task of
/// its own because a body whose reader stopped is never polled (hyper polls a body only when
/// the connection can take more), so the body itself cannot notice.
fn watch_floor(progress: Arc<Progress>, limits: DecodeLimits) {
    let window = limits.floor_window;
    let least = (limits.floor_bytes_per_sec as f64 * window.as_secs_f64()) as u64;
    tokio::spawn(async move {
        let mut before = 0;
        loop {
            tokio::time::sleep(window).await;
            if progress.over.load(Acquire) {
                return;
            }
            let sent = progress.sent.load(Acquire);
            if sent - before < least {
                progress.cut.store(true, Release);
                let freed = progress.permit.lock().ok().and_then(|mut permit| permit.take());
                if let Some(permit) = freed {
                    permit.cut();
                }
                tracing::info!(
                    sent_in_window = sent - before,
                    floor_bytes = least,
                    window_secs = window.as_secs_f64(),
                    "decoded export cut: its reader took less than the floor rate; its place is freed and its key waits a window"
                );
                return;
            }
            before = sent;
        }
    });
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
    /// What is left to send, in order (reversed, so the next is popped from the end), and
    /// how many bytes that is.
    Pieces {
        rest: Vec<Bytes>,
        left: u64,
    },
    Gunzip(Box<Decoding>),
    Made(Box<Making>),
    /// A body made elsewhere as it goes (the MCP transport's).
    Streamed(http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>),
}

struct Decoding {
    decoder: flate2::bufread::GzDecoder<io::Cursor<Bytes>>,
    skip: u64,
    left: u64,
    place: Place,
}

/// A made body ([`Payload::Made`]) as it goes.
#[derive(Debug)]
struct Making {
    steps: Steps,
    /// What is left of the text being handed over (HTTP/2 hands at most [`PIECE`] at once).
    pending: Option<Bytes>,
    /// A step was taken at the last poll: this one yields the worker first. hyper asks a body
    /// for frame after frame while the socket takes them, so without this a fast reader would
    /// keep a worker on one pass for as long as it lasts.
    stepped: bool,
    place: Place,
}

/// Gives the worker back after a step of the server's own work, to be polled again once the
/// worker has run what else is ready and polled its sockets and timers. Waking at once would
/// not do: the task would be queued again behind only the tasks already ready, and a worker
/// busy with a pass looks at its sockets only every 61 polls, so a getCompany arriving
/// meanwhile would wait for some 60 steps (90 ms on the sample, 200 ms at 2,000 companies).
/// `yield_now` hands the waker to the scheduler to wake after the I/O driver has run.
fn yield_to_io<T>(cx: &mut Context<'_>) -> Poll<T> {
    let mut yielded = std::pin::pin!(tokio::task::yield_now());
    // Its first poll always defers the wake and is pending; the future itself is not needed
    // after it.
    let _ = std::future::Future::poll(yielded.as_mut(), cx);
    Poll::Pending
}

/// A decoder's place held by a body, shared with the floor's watchdog (none for a HEAD, which
/// decodes nothing); given back when the body is done, broken or dropped, not when the
/// watchdog next wakes.
#[derive(Debug)]
struct Place(Option<Arc<Progress>>);

impl Place {
    fn new(permit: Option<DecodePermit>) -> Place {
        Place(permit.map(|permit| {
            let limits = permit.limits;
            let progress = Arc::new(Progress {
                permit: Mutex::new(Some(permit)),
                ..Progress::default()
            });
            watch_floor(progress.clone(), limits);
            progress
        }))
    }

    /// Whether the watchdog cut this body for moving too slowly.
    fn is_cut(&self) -> bool {
        self.0.as_ref().is_some_and(|p| p.cut.load(Acquire))
    }

    fn moved(&self, bytes: u64) {
        if let Some(progress) = &self.0 {
            progress.sent.fetch_add(bytes, Release);
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if let Some(progress) = &self.0 {
            progress.over.store(true, Release);
            let permit = progress.permit.lock().ok().and_then(|mut permit| permit.take());
            drop(permit);
        }
    }
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
            Payload::Pieces { len: 0, .. } | Payload::Gunzip { len: 0, .. } => State::Bytes(None),
            Payload::Pieces { mut pieces, len } => {
                pieces.retain(|piece| !piece.is_empty());
                pieces.reverse();
                State::Pieces {
                    rest: pieces,
                    left: len,
                }
            }
            Payload::Gunzip {
                gzip,
                skip,
                len,
                permit,
            } => State::Gunzip(Box::new(Decoding {
                decoder: flate2::bufread::GzDecoder::new(io::Cursor::new(gzip)),
                skip,
                left: len,
                place: Place::new(permit),
            })),
            Payload::Made { steps, permit } => State::Made(Box::new(Making {
                steps,
                pending: None,
                stepped: false,
                place: Place::new(permit),
            })),
        };
        ResponseBody { state, paced: false }
    }

    /// A body another library makes as it goes.
    pub fn streamed(body: http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>) -> ResponseBody {
        ResponseBody {
            state: State::Streamed(body),
            paced: false,
        }
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
            // The server's own work: it counts as progress against the floor rate.
            self.place.moved(n as u64);
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
        self.place.moved(want as u64);
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
            State::Pieces { rest, left } => {
                let Some(mut next) = rest.pop() else {
                    this.state = State::Bytes(None);
                    return Poll::Ready(None);
                };
                let take = next_piece(paced, next.len());
                if take < next.len() {
                    rest.push(next.split_off(take));
                }
                *left = left.saturating_sub(next.len() as u64);
                if rest.is_empty() {
                    this.state = State::Bytes(None);
                }
                Ok(next)
            }
            State::Streamed(body) => {
                let polled = Pin::new(body).poll_frame(cx);
                if paced && matches!(polled, Poll::Ready(_)) {
                    note_progress();
                }
                return polled.map(|frame| frame.map(|frame| frame.map_err(|never| match never {})));
            }
            State::Made(making) if making.place.is_cut() => {
                this.state = State::Bytes(None);
                return Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "decoded export cut: the reader took less than the floor rate",
                ))));
            }
            State::Made(making) if making.stepped => {
                making.stepped = false;
                return yield_to_io(cx);
            }
            State::Made(making) => {
                making.stepped = making.pending.is_none();
                let next = match making.pending.take() {
                    Some(text) => Some(Ok(Step::Text(text))),
                    None => making.steps.0.next(),
                };
                match next {
                    None => {
                        this.state = State::Bytes(None);
                        return Poll::Ready(None);
                    }
                    Some(Err(error)) => {
                        this.state = State::Bytes(None);
                        Err(error)
                    }
                    Some(Ok(Step::Worked(bytes))) => {
                        // The server's own work: progress against the floor and the stream's
                        // stall deadline; the next step at the next poll, after whatever else
                        // the worker has to do.
                        making.place.moved(bytes);
                        if paced {
                            note_progress();
                        }
                        making.stepped = false;
                        return yield_to_io(cx);
                    }
                    Some(Ok(Step::Text(mut text))) => {
                        let take = next_piece(paced, text.len());
                        if take < text.len() {
                            making.pending = Some(text.split_off(take));
                        }
                        making.place.moved(text.len() as u64);
                        Ok(text)
                    }
                }
            }
            State::Gunzip(decoding) if decoding.place.is_cut() => {
                this.state = State::Bytes(None);
                return Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "decoded export cut: the reader took less than the floor rate",
                ))));
            }
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
                return yield_to_io(cx);
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
        match &self.state {
            State::Streamed(body) => body.is_end_stream(),
            state => matches!(state, State::Bytes(None)),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.state {
            State::Made(_) => SizeHint::default(),
            State::Bytes(bytes) => SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64)),
            State::Pieces { left, .. } => SizeHint::with_exact(*left),
            State::Streamed(body) => body.size_hint(),
            State::Gunzip(decoding) => SizeHint::with_exact(decoding.left),
        }
    }
}

impl crate::metric::Report for Decoders {
    fn metrics(&self) -> Vec<crate::metric::Metric> {
        use crate::metric::Metric;
        vec![
            Metric::counter(
                "marks_export_decodes_refused_for_share_total",
                "Decoded exports answered 429 because their key already held its share of the decoders.",
                self.refused_for_share.load(Relaxed),
            ),
            Metric::counter(
                "marks_export_decodes_cut_slow_total",
                "Decoded exports cut because their reader took less than the floor rate; their place was freed.",
                self.cut_slow.load(Relaxed),
            ),
            Metric::gauge(
                "marks_export_decodes_active",
                "Exports being decoded now for clients that do not accept gzip.",
                self.active() as u64,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(places: usize, per_key: usize) -> DecodeLimits {
        DecodeLimits {
            places,
            per_key,
            ..DecodeLimits::from(&crate::settings::Settings::default().exports)
        }
    }

    #[tokio::test]
    async fn places_below_enterprise_leave_the_reserved_ones_free() {
        let decoders = Decoders::new(limits(DecodeLimits::PLACES, 1));
        let lower: Vec<Arc<str>> = ["research-1", "research-2", "free-3", "keyless"]
            .map(Arc::from)
            .to_vec();
        let first = decoders.try_acquire(&DecodeHolder::key(&lower[0], false)).unwrap();
        let second = decoders.try_acquire(&DecodeHolder::key(&lower[1], false)).unwrap();
        // Two places are free, and both are Enterprise's.
        assert!(matches!(
            decoders.try_acquire(&DecodeHolder::key(&lower[2], false)),
            Err(DecodeRefused::AllTaken { .. })
        ));
        assert!(decoders.try_acquire(&DecodeHolder::key(&lower[3], false)).is_err());
        let enterprise = decoders
            .try_acquire(&DecodeHolder::key(&Arc::from("enterprise-1"), true))
            .unwrap();
        let another = decoders
            .try_acquire(&DecodeHolder::key(&Arc::from("enterprise-2"), true))
            .unwrap();
        assert_eq!(decoders.active(), 4);
        // A lower place given back opens one to the lower tiers again (the longest waiting).
        drop(first);
        assert!(
            decoders.try_acquire(&DecodeHolder::key(&lower[3], false)).is_err(),
            "owed to free-3, which asked first"
        );
        assert!(decoders.try_acquire(&DecodeHolder::key(&lower[2], false)).is_ok());
        // One at a time for a key: its share is one.
        drop(second);
        assert!(matches!(
            decoders.try_acquire(&DecodeHolder::key(&Arc::from("enterprise-1"), true)),
            Err(DecodeRefused::KeyShare { held: 1 })
        ));
        drop((enterprise, another));
    }

    #[tokio::test]
    async fn decoders_are_capped_and_a_dropped_body_gives_its_place_back() {
        let decoders = Decoders::new(limits(2, 2));
        let key: Arc<str> = Arc::from("k1");
        let first = decoders.try_acquire(&DecodeHolder::key(&key, true)).unwrap();
        let second = decoders.try_acquire(&DecodeHolder::key(&key, true)).unwrap();
        assert_eq!(
            decoders
                .try_acquire(&DecodeHolder::key(&Arc::from("k2"), true))
                .unwrap_err(),
            DecodeRefused::AllTaken { active: 2, turn: 1 }
        );
        drop(first);
        // The freed place is owed to k2, which asked first.
        assert!(decoders.try_acquire(&DecodeHolder::key(&key, true)).is_err());
        let third = decoders
            .try_acquire(&DecodeHolder::key(&Arc::from("k2"), true))
            .unwrap();
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

    #[test]
    fn a_key_holds_at_most_its_share_and_others_still_get_places() {
        let decoders = Decoders::new(limits(4, 1));
        let (greedy, other): (Arc<str>, Arc<str>) = (Arc::from("greedy"), Arc::from("other"));
        let held = decoders.try_acquire(&DecodeHolder::key(&greedy, true)).unwrap();
        for _ in 0..3 {
            assert_eq!(
                decoders.try_acquire(&DecodeHolder::key(&greedy, true)).unwrap_err(),
                DecodeRefused::KeyShare { held: 1 }
            );
        }
        assert_eq!(decoders.refused_for_share.load(Relaxed), 3);
        let theirs = decoders.try_acquire(&DecodeHolder::key(&other, true)).unwrap();
        assert_eq!(decoders.active(), 2);
        drop(held);
        drop(theirs);
        assert!(decoders.try_acquire(&DecodeHolder::key(&greedy, true)).is_ok());
    }

    #[test]
    fn freed_places_go_to_the_keys_that_waited_longest() {
        let decoders = Decoders::new(limits(2, 1));
        let key = |name: &str| -> Arc<str> { Arc::from(name) };
        let (a, b) = (
            decoders.try_acquire(&DecodeHolder::key(&key("a"), true)).unwrap(),
            decoders.try_acquire(&DecodeHolder::key(&key("b"), true)).unwrap(),
        );
        let refused = |name: &str| decoders.try_acquire(&DecodeHolder::key(&key(name), true)).unwrap_err();
        assert_eq!(refused("c"), DecodeRefused::AllTaken { active: 2, turn: 1 });
        assert_eq!(refused("d"), DecodeRefused::AllTaken { active: 2, turn: 2 });
        drop(a);
        // The holder that just let go, and anyone behind c, wait; c gets the place.
        assert_eq!(refused("a"), DecodeRefused::AllTaken { active: 1, turn: 3 });
        assert_eq!(refused("d"), DecodeRefused::AllTaken { active: 1, turn: 2 });
        let c = decoders.try_acquire(&DecodeHolder::key(&key("c"), true)).unwrap();
        drop(b);
        assert_eq!(refused("a"), DecodeRefused::AllTaken { active: 1, turn: 2 });
        let d = decoders.try_acquire(&DecodeHolder::key(&key("d"), true)).unwrap();
        drop((c, d));
        assert!(decoders.try_acquire(&DecodeHolder::key(&key("a"), true)).is_ok());
    }

    #[test]
    fn a_key_cut_for_slowness_waits_a_window_before_decoding_again() {
        let decoders = Decoders::new(DecodeLimits {
            floor_window: Duration::from_millis(200),
            ..limits(4, 1)
        });
        let key: Arc<str> = Arc::from("slow");
        decoders.try_acquire(&DecodeHolder::key(&key, true)).unwrap().cut();
        assert_eq!(decoders.cut_slow.load(Relaxed), 1);
        assert_eq!(decoders.active(), 0, "its place is free at once");
        assert_eq!(
            decoders.try_acquire(&DecodeHolder::key(&key, true)).unwrap_err(),
            DecodeRefused::CoolingDown { retry_after: 1 }
        );
        assert!(decoders
            .try_acquire(&DecodeHolder::key(&Arc::from("other"), true))
            .is_ok());
        std::thread::sleep(Duration::from_millis(250));
        assert!(
            decoders.try_acquire(&DecodeHolder::key(&key, true)).is_ok(),
            "after the window"
        );
    }

    #[tokio::test]
    async fn a_keyless_cut_lands_on_its_address_and_keyless_clients_share_one_place() {
        let decoders = Decoders::new(limits(4, 1));
        let keyless: Arc<str> = Arc::from("keyless clients");
        let at = |address: &str| DecodeHolder::keyless(&keyless, address.parse().unwrap());
        decoders.try_acquire(&at("192.0.2.7")).unwrap().cut();
        assert!(matches!(
            decoders.try_acquire(&at("192.0.2.7")),
            Err(DecodeRefused::CoolingDown { .. })
        ));
        // Another address, and an IPv6 client, are not cooled by it.
        let other = decoders.try_acquire(&at("192.0.2.8")).unwrap();
        // But keyless clients together hold one share: a second keyless client waits for it.
        assert!(matches!(
            decoders.try_acquire(&at("2001:db8:1:2::9")),
            Err(DecodeRefused::KeyShare { held: 1 })
        ));
        drop(other);
        decoders.try_acquire(&at("2001:db8:1:2::9")).unwrap().cut();
        // An IPv6 cut covers its /64, and only that.
        assert!(decoders.try_acquire(&at("2001:db8:1:2:ffff::1")).is_err());
        assert!(decoders.try_acquire(&at("2001:db8:1:3::9")).is_ok());
        // An IPv4 client seen through an IPv4-mapped IPv6 address is the same address.
        assert!(decoders.try_acquire(&at("::ffff:192.0.2.7")).is_err());
    }
}
