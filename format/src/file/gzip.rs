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
        let mut compress = Compress::new(Compression::new(level.min(9)), false);
        let mut deflated = Vec::with_capacity(text.len() / 3 + 64);
        loop {
            let consumed = compress.total_in() as usize;
            if deflated.capacity() - deflated.len() < 64 {
                deflated.reserve(deflated.capacity().max(4096));
            }
            let status = compress
                .compress_vec(&text[consumed..], &mut deflated, FlushCompress::Full)
                .map_err(io::Error::other)?;
            // A flush is complete once all input is taken and the output did not fill up.
            let done = compress.total_in() as usize == text.len() && deflated.len() < deflated.capacity();
            if done || status == Status::StreamEnd {
                break;
            }
        }
        let mut crc = Crc::new();
        crc.update(text);
        Ok(Piece {
            deflated,
            crc,
            len: text.len() as u64,
        })
    }
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
}
