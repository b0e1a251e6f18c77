//! Snapshot loading: any bytes are refused with an error or load into a snapshot whose every
//! accessor then works; never a panic, never undefined behaviour. Seed the corpus with
//! ../builder/tests/golden/v4.snap.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use marks_format::file::layout::{Header, HEADER_LEN};
use marks_format::{OpenOptions, Snapshot};

fuzz_target!(|data: &[u8]| {
    open_and_walk(data);
    // Most mutations only break the checksum. With the checksum made to match, the same bytes
    // reach the archive validation and the consistency checks, which must hold on their own.
    if let Ok(header) = Header::decode(data) {
        let mut fixed = data.to_vec();
        let mut forged = header.clone();
        forged.checksum = xxhash_rust::xxh3::xxh3_128(&fixed[HEADER_LEN..]);
        fixed[..HEADER_LEN].copy_from_slice(&forged.encode());
        open_and_walk(&fixed);
    }
});

fn open_and_walk(data: &[u8]) {
    // Snapshots are read from a page-aligned map; give the fuzzer the same alignment.
    let mut aligned = rkyv::util::AlignedVec::<16>::with_capacity(data.len());
    aligned.extend_from_slice(data);
    let Ok(snapshot) = Snapshot::from_bytes(Bytes::from_owner(aligned), &OpenOptions::default()) else {
        return;
    };
    let index = snapshot.index();
    for company in index.companies.iter() {
        let _ = snapshot.body(&company.profile.identity);
        let _ = snapshot.body_slice(&company.list_item);
        let _ = index.company(company.slug.as_str());
    }
    for sort in 0..8u8 {
        for &row in index.list(sort, 0, 0, 0) {
            assert!((row.to_native() as usize) < index.companies.len());
        }
    }
    let exports = &index.exports;
    for export in [&exports.companies, &exports.series_80, &exports.series_95] {
        let _ = snapshot.body(&export.gzip);
    }
    for version in index.changes.versions.iter() {
        let rows = index.changes_since(version.as_str()).unwrap_or(&[]);
        for row in rows {
            assert!((row.company.to_native() as usize) < index.companies.len());
        }
    }
}
