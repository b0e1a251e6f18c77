//! Query-string parsing: any bytes a client can put after `?` must give parameters or a 422,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use marks::api::query::{coverage, ListQuery, Params, LIST_PARAMS};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(params) = Params::parse(Some(text), LIST_PARAMS) {
        if let Ok(query) = ListQuery::from_params(&params) {
            assert!((1..=200).contains(&query.limit));
        }
    }
    if let Ok(params) = Params::parse(Some(text), &["coverage"]) {
        if let Ok(c) = coverage(&params) {
            assert!(c == 80 || c == 95);
        }
    }
});
