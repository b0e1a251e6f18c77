//! Gzip assembled from independently compressed pieces.
//!
//! The bulk export is one gzip stream per document, hundreds of megabytes for a large dataset,
//! and most of its bytes (the daily series) are the same bytes as the per-company series
//! bodies. Compressing them twice, or compressing the whole document on one thread, would
//! double a large build's compression time. Instead each piece of text is deflated on its own,
//! in parallel, ending on a byte boundary with a flush and referring to nothing before it
//! (the way `pigz` splits its work); any sequence of such pieces, framed by a gzip header, an
//! empty final block and a trailer with the combined CRC-32 and length, is one valid gzip
//! member (RFC 1952) that every decoder reads. A company's series is deflated once and used
//! both in its own body's gzip variant and in the export.

use std::io;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};

/// Bodies smaller than this are stored and served without a gzip variant: compressing them
/// would save too little to matter. The builder's bodies and the binary's page files alike.
pub const MIN_BYTES: usize = 1024;

/// The gzip member header: deflate, no name, no timestamp (so builds are reproducible),
/// unknown OS.
pub const HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
/// A final, empty deflate block (fixed Huffman codes, end of block), after pieces that end on
/// a byte boundary.
pub const FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

/// One piece of text, deflated on its own: raw deflate blocks ending on a byte boundary, none
/// of them final, with the CRC-32 and length of the text they stand for.
#[derive(Debug, Default)]
pub struct Piece {
    pub deflated: Vec<u8>,
    pub crc: Crc,
    /// Bytes of text, not of `deflated`.
    pub len: u64,
}

impl Piece {
    /// Deflates `text` at `level` (0-9).
    pub fn of(text: &[u8], level: u32) -> io::Result<Piece> {
        Ok(Piece::with_entry_points(text, level, &[])?.0)
    }

    /// Deflates `text` at `level` (0-9), flushed also at each of `points` (offsets into `text`,
    /// ascending), and where each point's text begins among the deflated bytes. A full flush
    /// refers to nothing before it, so the deflated bytes from one point to the next inflate on
    /// their own (raw deflate) to the text between them: a reader finds one part of a long text
    /// without inflating what comes before it.
    pub fn with_entry_points(text: &[u8], level: u32, points: &[usize]) -> io::Result<(Piece, Vec<u64>)> {
        let mut compress = Compress::new(Compression::new(level.min(9)), false);
        let mut deflated = Vec::with_capacity(text.len() / 3 + 64);
        let mut entries = Vec::with_capacity(points.len());
        for &end in points.iter().chain([&text.len()]) {
            let end = end.clamp(compress.total_in() as usize, text.len());
            flush_through(&mut compress, &text[..end], &mut deflated)?;
            if entries.len() < points.len() {
                entries.push(deflated.len() as u64);
            }
        }
        let mut crc = Crc::new();
        crc.update(text);
        let piece = Piece {
            deflated,
            crc,
            len: text.len() as u64,
        };
        Ok((piece, entries))
    }
}

/// Deflates what `compress` has not yet taken of `text`, ending with a full flush.
fn flush_through(compress: &mut Compress, text: &[u8], deflated: &mut Vec<u8>) -> io::Result<()> {
    loop {
        let consumed = compress.total_in() as usize;
        if deflated.capacity() - deflated.len() < 64 {
            deflated.reserve(deflated.capacity().max(4096));
        }
        let status = compress
            .compress_vec(&text[consumed..], deflated, FlushCompress::Full)
            .map_err(io::Error::other)?;
        // A flush is complete once all input is taken and the output did not fill up.
        let done = compress.total_in() as usize == text.len() && deflated.len() < deflated.capacity();
        if done || status == Status::StreamEnd {
            return Ok(());
        }
    }
}

/// The text of deflated bytes that begin at an entry point of a piece
/// ([`Piece::with_entry_points`]) and end at the next (or at the piece's end): `len` bytes of
/// text, or an error saying why not.
pub fn inflate_part(deflated: &[u8], len: usize) -> io::Result<Vec<u8>> {
    let mut decompress = flate2::Decompress::new(false);
    let mut text = Vec::with_capacity(len);
    // A full flush ends on a byte boundary with no final block: the part inflates to its text
    // and then asks for more, which is its end.
    decompress
        .decompress_vec(deflated, &mut text, flate2::FlushDecompress::Sync)
        .map_err(io::Error::other)?;
    if text.len() != len || (decompress.total_in() as usize) < deflated.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the part inflates to {} bytes, not {len}", text.len()),
        ));
    }
    Ok(text)
}

/// The running CRC-32 and length of a gzip member being assembled from pieces.
#[derive(Debug, Default)]
pub struct Trailer {
    crc: Crc,
    len: u64,
}

impl Trailer {
    pub fn add(&mut self, piece: &Piece) {
        self.crc.combine(&piece.crc);
        self.len += piece.len;
    }

    /// Bytes of text the member stands for.
    pub fn text_len(&self) -> u64 {
        self.len
    }

    /// What follows the last piece ([`trailer`]).
    pub fn bytes(&self) -> [u8; 10] {
        trailer(self.crc.sum(), self.len)
    }
}

/// What follows pieces of text of CRC-32 `crc` and `len` bytes: the final block, the CRC-32 and
/// the length modulo 2^32.
pub fn trailer(crc: u32, len: u64) -> [u8; 10] {
    let mut end = [0u8; 10];
    end[..2].copy_from_slice(&FINAL_BLOCK);
    end[2..6].copy_from_slice(&crc.to_le_bytes());
    end[6..].copy_from_slice(&(len as u32).to_le_bytes());
    end
}

/// A whole gzip member of the text of `pieces`, in order.
pub fn member(pieces: &[&Piece]) -> Vec<u8> {
    let size: usize = pieces.iter().map(|p| p.deflated.len()).sum();
    let mut out = Vec::with_capacity(HEADER.len() + size + 10);
    out.extend_from_slice(&HEADER);
    let mut trailer = Trailer::default();
    for piece in pieces {
        out.extend_from_slice(&piece.deflated);
        trailer.add(piece);
    }
    out.extend_from_slice(&trailer.bytes());
    out
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn pieces_make_one_member_that_decodes_to_their_text() {
        let texts: [&[u8]; 4] = [b"{", &b"\"slug\":\"acme\",\"series\":[1,2,3]}".repeat(500), b"", b"\n"];
        for level in [1, 4, 9] {
            let pieces: Vec<Piece> = texts.iter().map(|t| Piece::of(t, level).unwrap()).collect();
            let member = member(&pieces.iter().collect::<Vec<_>>());
            assert_eq!(gunzip(&member), texts.concat(), "level {level}");
            // The trailer's CRC is the whole text's, as a one-shot gzip writes it.
            let mut crc = Crc::new();
            crc.update(&texts.concat());
            assert_eq!(member[member.len() - 8..member.len() - 4], crc.sum().to_le_bytes());
        }
        // The same piece serves two members.
        let shared = Piece::of(b"shared text ", 4).unwrap();
        let a = Piece::of(b"first ", 4).unwrap();
        let b = Piece::of(b"second ", 4).unwrap();
        assert_eq!(gunzip(&member(&[&a, &shared])), b"first shared text ");
        assert_eq!(gunzip(&member(&[&b, &shared, &a])), b"second shared text first ");
    }

    #[test]
    fn each_entry_point_inflates_on_its_own_to_its_part_of_the_text() {
        let text: Vec<u8> = (0..3000)
            .flat_map(|i| format!("\"acme\",\"20{:02}-01-01\",{i}\r\n", i / 300).into_bytes())
            .collect();
        let points: Vec<usize> = (1..10).map(|year| text.len() * year / 10).collect();
        for level in [1, 6, 9] {
            let (piece, entries) = Piece::with_entry_points(&text, level, &points).unwrap();
            assert_eq!(entries.len(), points.len());
            // Still one piece: the member decodes to the whole text.
            assert_eq!(gunzip(&member(&[&piece])), text, "level {level}");
            let starts: Vec<usize> = [0].into_iter().chain(points.iter().copied()).collect();
            let deflated_starts: Vec<u64> = [0].into_iter().chain(entries.iter().copied()).collect();
            for (i, &start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(text.len());
                let from = deflated_starts[i] as usize;
                let to = deflated_starts.get(i + 1).map_or(piece.deflated.len(), |&e| e as usize);
                let part = inflate_part(&piece.deflated[from..to], end - start).unwrap();
                assert_eq!(part, &text[start..end], "part {i} at level {level}");
            }
        }
        // Bytes that are not a part, or a wrong length, are an error, not a panic.
        let (piece, entries) = Piece::with_entry_points(&text, 6, &points).unwrap();
        assert!(inflate_part(&piece.deflated[..entries[0] as usize], 5).is_err());
        assert!(inflate_part(&piece.deflated[1..entries[0] as usize], points[0]).is_err());
        // No points: the same bytes as a piece made whole.
        assert_eq!(
            Piece::with_entry_points(&text, 6, &[]).unwrap().0.deflated,
            Piece::of(&text, 6).unwrap().deflated
        );
    }
}
