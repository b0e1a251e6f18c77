//! The access log: one line per request, at a small fraction of what the general logging
//! machinery costs per line, never blocking a request on the log's destination.
//!
//! A request formats its line itself, from fixed fields (digits by `itoa`, the timestamp's
//! seconds formatted once a second), straight into a shared buffer under a short lock. A
//! writer thread takes the whole buffer every 50 ms, or as soon as it passes 64 KiB, and writes
//! it out: to a file in one write (appends are whole), to standard output in pieces that end at
//! line boundaries (each at most `PIPE_BUF`, so a line never interleaves with another writer's
//! on a pipe). When the destination falls so far behind that
//! 8 MiB are waiting, lines are dropped, not requests delayed, and counted
//! (`marks_access_log_dropped_total`). The fields, and the text and JSON shapes, are those of
//! the operational log lines.
//!
//! With `--access-log PATH` lines are appended to a file; SIGUSR1 makes the writer reopen the
//! path (the logrotate convention nginx uses: rotate by renaming, then signal), and no line is
//! lost across the switch.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often the writer takes what has been logged.
const WRITE_INTERVAL: Duration = Duration::from_millis(50);
/// A buffer this full wakes the writer at once.
const WAKE_AT: usize = 64 * 1024;
/// A buffer this full drops further lines until the writer catches up.
const DROP_AT: usize = 8 * 1024 * 1024;
/// Writes to a pipe of at most this many bytes are atomic (POSIX `PIPE_BUF` on Linux).
const ATOMIC_WRITE: usize = 4096;

/// Where access lines go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

/// What one request's line says.
#[derive(Debug)]
pub struct Entry<'a> {
    pub request_id: &'a str,
    pub key_id: &'a str,
    pub operation: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub bytes: usize,
    pub latency_us: u64,
    pub peer: std::net::IpAddr,
}

/// The access log; cheap to clone, one writer thread behind all clones.
#[derive(Clone, Debug)]
pub struct AccessLog {
    shared: Arc<Shared>,
    writer: Arc<WriterThread>,
}

#[derive(Debug)]
struct Shared {
    json: bool,
    pending: Mutex<Pending>,
    reopen: AtomicBool,
    stop: AtomicBool,
}

#[derive(Debug, Default)]
struct Pending {
    lines: Vec<u8>,
    /// The epoch second `stamp` was formatted for, and `YYYY-MM-DDTHH:MM:SS`.
    second: u64,
    stamp: String,
}

/// Joins the writer (after a last write) when the last clone goes.
#[derive(Debug)]
struct WriterThread {
    shared: Arc<Shared>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl AccessLog {
    /// Opens the destination (a file is created or appended to) and starts the writer.
    pub fn start(destination: Destination, json: bool) -> io::Result<AccessLog> {
        let sink = Sink::open(&destination)?;
        let shared = Arc::new(Shared {
            json,
            pending: Mutex::new(Pending::default()),
            reopen: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let writer_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("marks-access-log".into())
            .spawn(move || write_until_stopped(&writer_shared, sink, &destination))?;
        Ok(AccessLog {
            writer: Arc::new(WriterThread {
                shared: shared.clone(),
                handle: Mutex::new(Some(handle)),
            }),
            shared,
        })
    }

    /// Appends one request's line. Never blocks on the destination; false when the line was
    /// dropped because the destination has fallen too far behind.
    pub fn record(&self, entry: &Entry<'_>) -> bool {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let Ok(mut pending) = self.shared.pending.lock() else {
            return false;
        };
        if pending.lines.len() >= DROP_AT {
            return false;
        }
        if pending.second != now.as_secs() || pending.stamp.is_empty() {
            pending.second = now.as_secs();
            pending.stamp = seconds_stamp(now.as_secs());
        }
        let Pending { lines, stamp, .. } = &mut *pending;
        let mut millis = [b'.', b'0', b'0', b'0', b'Z'];
        let ms = now.subsec_millis();
        millis[1] += (ms / 100) as u8;
        millis[2] += (ms / 10 % 10) as u8;
        millis[3] += (ms % 10) as u8;
        if self.shared.json {
            write_json(lines, stamp, &millis, entry);
        } else {
            write_text(lines, stamp, &millis, entry);
        }
        let wake = lines.len() >= WAKE_AT;
        drop(pending);
        if wake {
            self.writer.wake();
        }
        true
    }

    /// Makes the writer reopen a file destination (after a rotation), before its next write.
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Relaxed);
        self.writer.wake();
    }

    /// Writes out everything logged so far and stops the writer; later lines are dropped.
    pub fn finish(&self) {
        self.shared.stop.store(true, Relaxed);
        self.writer.wake();
        let handle = self.writer.handle.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl WriterThread {
    fn wake(&self) {
        if let Ok(handle) = self.handle.lock() {
            if let Some(handle) = handle.as_ref() {
                handle.thread().unpark();
            }
        }
    }
}

impl Drop for WriterThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        if let Some(handle) = self.handle.get_mut().ok().and_then(Option::take) {
            handle.thread().unpark();
            let _ = handle.join();
        }
    }
}

enum Sink {
    Stdout(io::Stdout),
    File(File),
}

impl Sink {
    fn open(destination: &Destination) -> io::Result<Sink> {
        Ok(match destination {
            Destination::Stdout => Sink::Stdout(io::stdout()),
            Destination::File(path) => Sink::File(OpenOptions::new().create(true).append(true).open(path)?),
        })
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sink::Stdout(out) => out.lock().write_all(bytes),
            Sink::File(file) => file.write_all(bytes),
        }
    }
}

fn write_until_stopped(shared: &Shared, mut sink: Sink, destination: &Destination) {
    let mut taken = Vec::new();
    loop {
        let stopping = shared.stop.load(Relaxed);
        if let Ok(mut pending) = shared.pending.lock() {
            std::mem::swap(&mut pending.lines, &mut taken);
        }
        // Lines logged before a rotation go to the old file, later ones to the new.
        write_in_whole_lines(&mut sink, &taken);
        taken.clear();
        if shared.reopen.swap(false, Relaxed) {
            match Sink::open(destination) {
                Ok(reopened) => sink = reopened,
                Err(err) => tracing::error!(error = %err, "cannot reopen the access log; still writing the old file"),
            }
        }
        if stopping {
            return;
        }
        std::thread::park_timeout(WRITE_INTERVAL);
    }
}

/// Writes `bytes`: to a file at once, to standard output in pieces of at most `ATOMIC_WRITE`
/// that end at a newline.
fn write_in_whole_lines(sink: &mut Sink, mut bytes: &[u8]) {
    if let Sink::File(file) = sink {
        // Nowhere to report a failure but the destination that failed; the lines are lost.
        let _ = file.write_all(bytes);
        return;
    }
    while !bytes.is_empty() {
        let end = if bytes.len() <= ATOMIC_WRITE {
            bytes.len()
        } else {
            bytes[..ATOMIC_WRITE]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(ATOMIC_WRITE, |i| i + 1)
        };
        if sink.write_all(&bytes[..end]).is_err() {
            // Nowhere to report it but the destination that failed; the lines are lost.
            return;
        }
        bytes = &bytes[end..];
    }
}

/// `YYYY-MM-DDTHH:MM:SS` of an epoch second.
fn seconds_stamp(epoch: u64) -> String {
    let format = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    time::OffsetDateTime::from_unix_timestamp(epoch as i64)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| "1970-01-01T00:00:00".into())
}

fn write_text(out: &mut Vec<u8>, stamp: &str, millis: &[u8], e: &Entry<'_>) {
    out.extend_from_slice(stamp.as_bytes());
    out.extend_from_slice(millis);
    // What the client chose (its request id, the method, the path) is quoted, so that a value
    // like `key_id=demo-enterprise` can never read as another field.
    out.extend_from_slice(b"  INFO marks::api::access: request_id=");
    push_quoted(out, e.request_id);
    out.extend_from_slice(b" key_id=");
    push_plain(out, e.key_id);
    out.extend_from_slice(b" operation=");
    out.extend_from_slice(e.operation.as_bytes());
    out.extend_from_slice(b" method=");
    push_quoted(out, e.method);
    out.extend_from_slice(b" path=");
    push_quoted(out, e.path);
    push_number(out, b" status=", e.status.into());
    push_number(out, b" bytes=", e.bytes as u64);
    push_number(out, b" latency_us=", e.latency_us);
    out.extend_from_slice(b" peer=");
    push_ip(out, e.peer);
    out.push(b'\n');
}

fn write_json(out: &mut Vec<u8>, stamp: &str, millis: &[u8], e: &Entry<'_>) {
    out.extend_from_slice(b"{\"timestamp\":\"");
    out.extend_from_slice(stamp.as_bytes());
    out.extend_from_slice(millis);
    out.extend_from_slice(b"\",\"level\":\"INFO\",\"target\":\"marks::api::access\",\"request_id\":\"");
    push_json(out, e.request_id);
    out.extend_from_slice(b"\",\"key_id\":\"");
    push_json(out, e.key_id);
    out.extend_from_slice(b"\",\"operation\":\"");
    out.extend_from_slice(e.operation.as_bytes());
    out.extend_from_slice(b"\",\"method\":\"");
    push_json(out, e.method);
    out.extend_from_slice(b"\",\"path\":\"");
    push_json(out, e.path);
    push_number(out, b"\",\"status\":", e.status.into());
    push_number(out, b",\"bytes\":", e.bytes as u64);
    push_number(out, b",\"latency_us\":", e.latency_us);
    out.extend_from_slice(b",\"peer\":\"");
    push_ip(out, e.peer);
    out.extend_from_slice(b"\"}\n");
}

fn push_number(out: &mut Vec<u8>, label: &[u8], n: u64) {
    out.extend_from_slice(label);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// An address as `Display` writes it; IPv4, the usual case, without the formatting machinery,
/// which cost a request a quarter of its line (`benches/lab/instructions.sh` with a log).
fn push_ip(out: &mut Vec<u8>, ip: std::net::IpAddr) {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mut digits = itoa::Buffer::new();
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                out.extend_from_slice(digits.format(octet).as_bytes());
            }
        }
        std::net::IpAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

/// Text-format values: visible ASCII as it is, anything else (space, control, non-ASCII) as
/// `?`, so a value can never break a line or a field apart.
fn push_plain(out: &mut Vec<u8>, value: &str) {
    out.extend(value.bytes().map(|b| if b.is_ascii_graphic() { b } else { b'?' }));
}

/// A client-chosen text value in double quotes: `"` and `\\` escaped with a backslash, anything
/// but visible ASCII as `?`, so the value ends where its closing quote is.
fn push_quoted(out: &mut Vec<u8>, value: &str) {
    out.push(b'"');
    // Almost every value (a path, a request id, a method) has nothing to replace: copied whole.
    if value.bytes().all(|b| QUOTED_AS_IS[usize::from(b)]) {
        out.extend_from_slice(value.as_bytes());
        out.push(b'"');
        return;
    }
    for b in value.bytes() {
        match b {
            b if QUOTED_AS_IS[usize::from(b)] => out.push(b),
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            _ => out.push(b'?'),
        }
    }
    out.push(b'"');
}

/// The bytes `push_quoted` copies as they are: visible ASCII but `"` and `\`. A table, as the
/// check runs on every byte of every line's path and request id.
const QUOTED_AS_IS: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0x21;
    while b < 0x7f {
        table[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    table
};

/// A JSON string's content. Values are almost always plain (paths, ids), so they are copied
/// whole when no byte needs escaping; UTF-8 beyond ASCII is valid JSON as it is.
fn push_json(out: &mut Vec<u8>, value: &str) {
    let needs_escape = |b: u8| b == b'"' || b == b'\\' || b < 0x20;
    if !value.bytes().any(needs_escape) {
        out.extend_from_slice(value.as_bytes());
        return;
    }
    for b in value.bytes() {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b if b < 0x20 => {
                let _ = write!(out, "\\u{b:04x}");
            }
            b => out.push(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(path: &'a str, request_id: &'a str) -> Entry<'a> {
        Entry {
            request_id,
            key_id: "demo-pro",
            operation: "getCompany",
            method: "GET",
            path,
            status: 200,
            bytes: 1234,
            latency_us: 56,
            peer: "127.0.0.1".parse().unwrap(),
        }
    }

    #[test]
    fn json_lines_parse_and_keep_every_field_even_with_quotes_in_values() {
        let mut out = Vec::new();
        write_json(
            &mut out,
            "2026-11-23T18:40:19",
            b".123Z",
            &entry("/v1/companies/a\"b", "req_\"x\\"),
        );
        let line: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(line["timestamp"], "2026-11-23T18:40:19.123Z");
        assert_eq!(line["path"], "/v1/companies/a\"b");
        assert_eq!(line["request_id"], "req_\"x\\");
        assert_eq!(
            (line["status"].as_u64(), line["bytes"].as_u64()),
            (Some(200), Some(1234))
        );
        assert_eq!(line["key_id"], "demo-pro");
        assert!(out.ends_with(b"\n") && out.iter().filter(|&&b| b == b'\n').count() == 1);
    }

    #[test]
    fn text_lines_have_no_escapes_and_one_line_per_request() {
        let mut out = Vec::new();
        write_text(
            &mut out,
            "2026-11-23T18:40:19",
            b".123Z",
            &entry("/v1/x", "id with\nnewline"),
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(!text.contains('\u{1b}'));
        assert!(
            text.contains("request_id=\"id?with?newline\"") && text.contains("status=200"),
            "{text}"
        );
    }

    #[test]
    fn addresses_are_written_as_display_writes_them() {
        for text in [
            "127.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "10.0.12.3",
            "::1",
            "2001:db8::8a2e:370:7334",
        ] {
            let ip: std::net::IpAddr = text.parse().unwrap();
            let mut out = Vec::new();
            push_ip(&mut out, ip);
            assert_eq!(String::from_utf8(out).unwrap(), ip.to_string());
        }
    }

    #[test]
    fn a_client_value_cannot_pose_as_another_field() {
        let mut out = Vec::new();
        let mut forged = entry("/v1/x\" key_id=demo-enterprise", "key_id=demo-enterprise");
        forged.key_id = "-";
        write_text(&mut out, "2026-11-23T18:40:19", b".123Z", &forged);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(" request_id=\"key_id=demo-enterprise\" key_id=- "),
            "{text}"
        );
        assert!(text.contains(" path=\"/v1/x\\\"?key_id=demo-enterprise\" "), "{text}");
        // The unquoted fields: exactly one `key_id=` outside quotes.
        let mut quoted = false;
        let outside: String = text
            .chars()
            .scan('\0', |previous, c| {
                if c == '"' && *previous != '\\' {
                    quoted = !quoted;
                }
                *previous = c;
                Some(if quoted { '_' } else { c })
            })
            .collect();
        assert_eq!(outside.matches("key_id=").count(), 1, "{outside}");
    }
}
