//! What each endpoint answers: one function per operation, from the snapshot in force (and,
//! for the metered operations, the caller) to a [`Representation`] or an [`ApiError`].
//!
//! No keys, budgets or response headers here: who is asking and whether they may is settled
//! before (`api::exchange`, `access`), and the response is written after (`response`). Data
//! bodies are slices of the mapped snapshot; only list and change pages, `/readyz`,
//! `/metrics` and a custom-budget usage body are assembled per request (and an export is
//! decoded as it is sent for a client that does not accept gzip).

use std::borrow::Cow;
use std::sync::{Arc, LazyLock, OnceLock};

use bytes::Bytes;
use http::header::HeaderValue;
use http::StatusCode;
use marks_format::file::etag::etag_of;
use marks_format::file::layout::{ArchivedCompanyEntry, ArchivedExport, UNIVERSE_ALL, UNIVERSE_FREE};
use marks_format::rules::tiers::{Scope, Tier};

use crate::api::call::{coverage, require, Call};
use crate::api::changes::{self, ChangesQuery, CHANGES_PARAMS};
use crate::api::cursor::CursorKey;
use crate::api::indices;
use crate::api::list;
use crate::api::query::{ListQuery, Params, LIST_PARAMS};
use crate::api::routes::Operation;
use crate::api::rows::{self, Form, SeriesText};
use crate::api::state::State;
use crate::response::body::{DecodeHolder, Decoders};
use crate::response::headers::{DOCS_CSP, JSON, PAGE_CSP};
use crate::response::problem::ApiError;
use crate::response::{header_value, Cache, Negotiation, Representation};
use crate::snapshot::{epoch_seconds, LoadedSnapshot, Refusal};
use crate::web::{self, Shell, WebFile};

/// The interface description served at `/v1/openapi.json`.
pub const OPENAPI_JSON: &[u8] = include_bytes!("../../openapi/openapi.json");

/// Answers a metered operation (one that needs a key and spends a unit of its budget).
pub fn metered(operation: Operation, call: &Call<'_>) -> Result<Representation, ApiError> {
    match operation {
        Operation::ListCompanies => list_companies(call),
        Operation::ListSectors => {
            require(call.caller, Scope::CompaniesList)?;
            no_parameters(call.query)?;
            let universe = if call.caller.tier.limited_universe() {
                UNIVERSE_FREE
            } else {
                UNIVERSE_ALL
            };
            let lists = &call.loaded.snapshot.index().sector_lists;
            let body = lists.get(usize::from(universe)).ok_or(ApiError::Internal)?;
            Ok(call.negotiation.stored(call.loaded, body, Cache::Private))
        }
        Operation::GetCompany => {
            require(call.caller, Scope::CompaniesRead)?;
            no_parameters(call.query)?;
            let company = company(call)?;
            Ok(call.negotiation.stored(call.loaded, &company.profile, Cache::Private))
        }
        Operation::GetMarkSeries => {
            require(call.caller, Scope::Marks80)?;
            let params = Params::parse(call.query, SERIES_PARAMS)?;
            let coverage = coverage(call, &params)?;
            let range = rows::date_range(&params)?;
            let company = company(call)?;
            let form = Form::of(call.negotiation);
            let series = if coverage == 95 {
                form.pick(&company.marks_95, &company.marks_95_csv)
            } else {
                form.pick(&company.marks_80, &company.marks_80_csv)
            };
            if !range.is_whole() {
                return rows::series_range(
                    call.loaded,
                    call.negotiation,
                    company.slug.as_str(),
                    SeriesText::Company(series),
                    form,
                    &range,
                );
            }
            let whole = call.negotiation.series(call.loaded, series)?;
            Ok(form.dress(call.loaded, whole))
        }
        Operation::GetMarkEvents => {
            require(call.caller, Scope::EventsRead)?;
            no_parameters(call.query)?;
            let company = company(call)?;
            let form = Form::of(call.negotiation);
            let body = form.pick(&company.events, &company.events_csv);
            let stored = call.negotiation.stored(call.loaded, body, Cache::Private);
            Ok(form.dress(call.loaded, stored))
        }
        Operation::GetResolution => {
            require(call.caller, Scope::ResolutionRead)?;
            no_parameters(call.query)?;
            let company = company(call)?;
            Ok(call
                .negotiation
                .stored(call.loaded, &company.resolution, Cache::Private))
        }
        Operation::GetBacktest => {
            require(call.caller, Scope::Marks80)?;
            no_parameters(call.query)?;
            let company = company(call)?;
            // The events' values only for a tier that may read every company's events.
            let body = if call.caller.tier.allows(Scope::EventsRead) {
                &company.backtest_full
            } else {
                &company.backtest
            };
            call.negotiation.document(call.loaded, body)
        }
        Operation::ListIndices => indices::list(call),
        Operation::GetIndex => indices::series(call),
        Operation::GetIndexConstituents => indices::constituents(call),
        Operation::GetUsage => usage(call),
        Operation::Scorecard | Operation::ScorecardTargets => {
            no_parameters(call.query)?;
            let index = call.loaded.snapshot.index();
            // Dollars and companies' events only for a tier that may read every company's events.
            let full = call.caller.tier.allows(Scope::EventsRead);
            if operation == Operation::ScorecardTargets {
                let targets = if full {
                    &index.scorecard_targets_full
                } else {
                    &index.scorecard_targets
                };
                let decoders = &call.state.budgets.decoders;
                return scored_targets(
                    call.loaded,
                    call.negotiation,
                    targets,
                    decoders,
                    &DecodeHolder::key(&call.caller.key_id, call.caller.tier == Tier::Enterprise),
                    Cache::Private,
                );
            }
            let body = if full { &index.scorecard_full } else { &index.scorecard };
            Ok(call.negotiation.stored(call.loaded, body, Cache::Private))
        }
        Operation::GetChanges => changes(call),
        Operation::GetExport => {
            require(call.caller, Scope::ExportRead)?;
            no_parameters(call.query)?;
            let exports = &call.loaded.snapshot.index().exports;
            let form = Form::of(call.negotiation);
            let export = if form == Form::Csv {
                &exports.companies_csv
            } else {
                &exports.companies
            };
            let decoded =
                call.negotiation
                    .export(call.loaded, export, &call.state.budgets.decoders, &call.caller.key_id)?;
            Ok(form.dress(call.loaded, decoded))
        }
        Operation::GetSeriesExport => {
            require(call.caller, Scope::ExportRead)?;
            let params = Params::parse(call.query, SERIES_PARAMS)?;
            let coverage = coverage(call, &params)?;
            let range = rows::date_range(&params)?;
            let form = Form::of(call.negotiation);
            if !range.is_whole() {
                return rows::series_export_range(call, coverage, form, &range);
            }
            let exports = &call.loaded.snapshot.index().exports;
            let export = match (coverage, form) {
                (95, Form::Json) => &exports.series_95,
                (95, Form::Csv) => &exports.series_95_csv,
                (_, Form::Json) => &exports.series_80,
                (_, Form::Csv) => &exports.series_80_csv,
            };
            let decoded =
                call.negotiation
                    .export(call.loaded, export, &call.state.budgets.decoders, &call.caller.key_id)?;
            Ok(form.dress(call.loaded, decoded))
        }
        Operation::GetLogCheckpoint => {
            require(call.caller, Scope::Marks80)?;
            no_parameters(call.query)?;
            let log = &call.loaded.snapshot.index().log;
            let mut stored = call.negotiation.stored(call.loaded, &log.checkpoint, Cache::Private);
            stored.content_type = crate::response::headers::TEXT;
            Ok(stored)
        }
        Operation::GetLogConsistency => {
            require(call.caller, Scope::Marks80)?;
            let params = Params::parse(call.query, &["from"])?;
            let log = &call.loaded.snapshot.index().log;
            let sizes = || {
                log.versions
                    .iter()
                    .map(|v| format!("{} ({})", v.tree_size, v.dataset_version))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let from = params.get("from").ok_or_else(|| {
                ApiError::invalid_parameter("from", "is required: the tree size of a checkpoint you kept")
            })?;
            let size: u64 = from
                .parse()
                .ok()
                .filter(|_| from.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| ApiError::invalid_parameter("from", "must be a tree size, a whole number"))?;
            let version = log
                .versions
                .iter()
                .find(|v| v.tree_size.to_native() == size)
                .ok_or_else(|| {
                    ApiError::invalid_parameter(
                        "from",
                        &format!(
                            "({size}) is not the size of a published checkpoint; they are: {}",
                            sizes()
                        ),
                    )
                })?;
            Ok(call
                .negotiation
                .stored(call.loaded, &version.consistency, Cache::Private))
        }
        Operation::GetPublished => {
            require(call.caller, Scope::Marks80)?;
            let params = Params::parse(call.query, &["from", "to"])?;
            let range = rows::date_range(&params)?;
            let company = company(call)?;
            let form = Form::of(call.negotiation);
            // The 95% bounds only for a tier that reads them.
            let body = if call.caller.tier.allows(Scope::Marks95) {
                form.pick(&company.published_full, &company.published_full_csv)
            } else {
                form.pick(&company.published, &company.published_csv)
            };
            if !range.is_whole() {
                return rows::series_range(
                    call.loaded,
                    call.negotiation,
                    company.slug.as_str(),
                    SeriesText::Document(body),
                    form,
                    &range,
                );
            }
            let whole = call.negotiation.document(call.loaded, body)?;
            Ok(form.dress(call.loaded, whole))
        }
        Operation::GetLogExport => {
            require(call.caller, Scope::ExportRead)?;
            no_parameters(call.query)?;
            let log = &call.loaded.snapshot.index().log;
            call.negotiation.export(
                call.loaded,
                &log.file,
                &call.state.budgets.decoders,
                &call.caller.key_id,
            )
        }
        _ => Err(ApiError::Internal),
    }
}

fn changes(call: &Call<'_>) -> Result<Representation, ApiError> {
    require(call.caller, Scope::ChangesRead)?;
    let params = Params::parse(call.query, CHANGES_PARAMS)?;
    let query = ChangesQuery::from_params(&params)?;
    let cursor_key = &call.state.cursor_key;
    let page = changes::Page::place(call.loaded, &query, cursor_key)?;
    let etag = page_etag(call.loaded, cursor_key, b"changes", call.query.unwrap_or(""));
    Ok(call
        .negotiation
        .conditional(&etag, header_value(&etag), Cache::Private, || page.render(cursor_key)))
}

fn list_companies(call: &Call<'_>) -> Result<Representation, ApiError> {
    require(call.caller, Scope::CompaniesList)?;
    let params = Params::parse(call.query, LIST_PARAMS)?;
    let query = ListQuery::from_params(&params)?;
    let index = call.loaded.snapshot.index();
    let (universe, note) = if call.caller.tier.limited_universe() {
        let note = format!(
            "The free tier lists the 10 companies with the highest latest value_usd among those whose marks are \
             current (still private, or a sale agreed and pending; not a listed, sold or failed company's last \
             private mark); Research and above list all {} companies.",
            index.companies.len()
        );
        (UNIVERSE_FREE, Some(note))
    } else {
        (UNIVERSE_ALL, None)
    };
    let cursor_key = &call.state.cursor_key;
    let page = list::Page::place(call.loaded, &query, universe, cursor_key)?;
    let form = Form::of(call.negotiation);
    let etag = page_etag(
        call.loaded,
        cursor_key,
        &[universe, form as u8],
        call.query.unwrap_or(""),
    );
    let representation = match form {
        Form::Json => call
            .negotiation
            .conditional(&etag, header_value(&etag), Cache::Private, || {
                page.render(cursor_key, note.as_deref())
            }),
        Form::Csv => {
            let mut representation = call
                .negotiation
                .conditional(&etag, header_value(&etag), Cache::Private, || page.render_csv());
            representation.extra_headers = page.csv_headers(cursor_key, note.as_deref());
            representation
        }
    };
    Ok(form.dress(call.loaded, representation))
}

fn usage(call: &Call<'_>) -> Result<Representation, ApiError> {
    require(call.caller, Scope::UsageRead)?;
    no_parameters(call.query)?;
    let caller = call.caller;
    let position = Tier::ALL.iter().position(|&t| t == caller.tier).unwrap_or(0);
    match call.loaded.snapshot.index().usage.get(position) {
        Some(body) if !caller.custom_rate => Ok(call.negotiation.stored(call.loaded, body, Cache::Private)),
        _ => {
            // A key with its own budget: its usage body is not in the snapshot.
            let body = marks_format::rules::tiers::usage_body(&call.loaded.meta, caller.tier, caller.rate_per_min);
            let etag = etag_of(&body);
            Ok(call
                .negotiation
                .conditional(&etag, header_value(&etag), Cache::Private, || Bytes::from(body)))
        }
    }
}

/// The company the path names, within the caller's universe.
fn company<'s>(call: &Call<'s>) -> Result<&'s ArchivedCompanyEntry, ApiError> {
    let raw_slug = call.slug.unwrap_or("");
    // Slugs are plain ASCII: decoding is for the rare client that escapes them anyway.
    let slug = if raw_slug.contains('%') {
        percent_encoding::percent_decode_str(raw_slug)
            .decode_utf8()
            .map_err(|_| ApiError::NotFound("No company has this slug.".into()))?
    } else {
        Cow::Borrowed(raw_slug)
    };
    let index = call.loaded.snapshot.index();
    let shown = || slug.chars().take(64).collect::<String>();
    let (position, company) = call
        .loaded
        .company(&slug)
        .ok_or_else(|| ApiError::NotFound(format!("No company has the slug {:?}.", shown())))?;
    if call.caller.tier.limited_universe() {
        let free = index.list(0, UNIVERSE_FREE, 0, 0);
        if !free.iter().any(|row| row.to_native() as usize == position) {
            return Err(ApiError::TierForbidden(format!(
                "The free tier covers the 10 companies with the highest current marks; {:?} needs the {} tier or above.",
                shown(),
                Tier::Research
            )));
        }
    }
    Ok(company)
}

/// The parameters of the series operations: the coverage and an inclusive date range.
const SERIES_PARAMS: &[&str] = &["coverage", "from", "to"];

fn no_parameters(query: Option<&str>) -> Result<(), ApiError> {
    Params::parse(query, &[]).map(|_| ())
}

/// A page's ETag: its bytes are a function of the snapshot, the cursor key (its
/// `next_cursor`), which list it pages (`list`: the operation, or the universe of
/// listCompanies) and the query string, so hashing those names them without rendering it.
fn page_etag(loaded: &LoadedSnapshot, cursor_key: &CursorKey, list: &[u8], query: &str) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::with_seed(loaded.etag_seed);
    hasher.update(&cursor_key.fingerprint().to_le_bytes());
    hasher.update(list);
    hasher.update(query.as_bytes());
    format!("\"{:016x}\"", hasher.digest())
}

/// `/healthz`: the process is up.
pub fn healthz() -> Representation {
    Representation::uncached(StatusCode::OK, Bytes::from_static(b"{\"status\":\"ok\"}"), JSON)
}

/// `/metrics`: Prometheus text.
pub fn metrics(state: &State) -> Representation {
    Representation::uncached(
        StatusCode::OK,
        Bytes::from(state.metrics_text()),
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    )
}

/// `/v1/openapi.json`, compiled into the binary and prepared once like the pages' files: gzip
/// for a client that accepts it (a tenth of the bytes; the route is unauthenticated, so a flood
/// of it is the balancer's to bound), each form with its ETag, and 304 when `If-None-Match`
/// matches.
pub fn openapi(query: Option<&str>, negotiation: &Negotiation<'_>) -> Result<Representation, ApiError> {
    static DOCUMENT: OnceLock<WebFile> = OnceLock::new();
    no_parameters(query)?;
    let document = DOCUMENT.get_or_init(|| web::prepare(OPENAPI_JSON.to_vec(), "json"));
    Ok(negotiation.web_file(document, Cache::Public))
}

/// `/` and `/scorecard`: the pages whose content the snapshot carries, drawn in the frame
/// when it was put in force.
pub fn snapshot_page(operation: Operation, loaded: &LoadedSnapshot, negotiation: &Negotiation<'_>) -> Representation {
    let page = if operation == Operation::HomePage {
        &loaded.pages.home
    } else {
        &loaded.pages.scorecard
    };
    let mut representation = negotiation.web_file(page, Cache::Public);
    representation.page_policy = Some(PAGE_CSP);
    representation
}

/// The pages compiled into the binary (the explorer, the comparison, the indices, the API
/// reference), their assets, and the documents for readers and agents (`/llms.txt`, the docs
/// as Markdown).
pub fn binary_page(
    operation: Operation,
    rest: Option<&str>,
    path: &str,
    negotiation: &Negotiation<'_>,
) -> Result<Representation, ApiError> {
    let missing = || ApiError::NotFound("No page or asset at this path.".into());
    let (file, cache, page) = match operation {
        Operation::ExplorePage => (web::shell(Shell::Explore).ok_or_else(missing)?, Cache::Public, true),
        Operation::ComparePage => (web::shell(Shell::Compare).ok_or_else(missing)?, Cache::Public, true),
        Operation::IndicesPage => (web::shell(Shell::Indices).ok_or_else(missing)?, Cache::Public, true),
        Operation::DocsPage => (web::shell(Shell::Docs).ok_or_else(missing)?, Cache::Public, true),
        Operation::Document => (
            web::document(path)
                .ok_or_else(|| ApiError::NotFound("No document at this path; /llms.txt lists them.".into()))?,
            Cache::Revalidate,
            false,
        ),
        _ => {
            let hit = rest.and_then(web::asset).ok_or_else(missing)?;
            let cache = if hit.fingerprinted {
                Cache::Immutable
            } else {
                Cache::Revalidate
            };
            (hit.file, cache, false)
        }
    };
    let mut representation = negotiation.web_file(file, cache);
    if page {
        representation.page_policy = Some(if operation == Operation::DocsPage {
            DOCS_CSP
        } else {
            PAGE_CSP
        });
    }
    Ok(representation)
}

/// The documents the snapshot publishes to everyone: the signing keys, and the scorecard and its
/// scored targets in their public form (what the builder's `methodology::disclosure` says each reader gets).
pub fn published(
    operation: Operation,
    state: &State,
    peer: std::net::IpAddr,
    loaded: &LoadedSnapshot,
    query: Option<&str>,
    negotiation: &Negotiation<'_>,
) -> Result<Representation, ApiError> {
    no_parameters(query)?;
    let index = loaded.snapshot.index();
    let (body, cache) = match operation {
        Operation::SigningKeys => (&index.signing_keys, Cache::Public),
        Operation::ScorecardTargets => {
            // Keyless clients that do not take gzip share one key's share of the decoders, so
            // together they can never hold the places keyed clients' exports need; a cut for
            // slowness lands on the address that was cut.
            let holder = DecodeHolder::keyless(&KEYLESS_DECODER, peer);
            return scored_targets(
                loaded,
                negotiation,
                &index.scorecard_targets,
                &state.budgets.decoders,
                &holder,
                Cache::Keyless,
            );
        }
        _ => (&index.scorecard, Cache::Keyless),
    };
    Ok(negotiation.stored(loaded, body, cache))
}

/// The name under which keyless clients hold decoders (key ids are `key_` and letters).
static KEYLESS_DECODER: LazyLock<Arc<str>> = LazyLock::new(|| Arc::from("keyless clients"));

/// The scored targets, stored as gzip only like the exports: the stored bytes for a client
/// that accepts gzip, else the JSON decoded once and kept in the cache of decoded texts (so
/// no client, keyless or of any tier, holds a decoder's place for them, and a slow reader
/// keeps nothing from anyone); only a document too large for that cache is decoded as it is
/// sent, in one of `decoders`' places held by `holder`.
fn scored_targets(
    loaded: &LoadedSnapshot,
    negotiation: &Negotiation<'_>,
    targets: &ArchivedExport,
    decoders: &Decoders,
    holder: &DecodeHolder,
    cache: Cache,
) -> Result<Representation, ApiError> {
    let mut representation = match loaded.keeps_text(targets) {
        true => negotiation.document(loaded, targets)?,
        false => negotiation.gzip_document(loaded, targets, decoders, holder, false)?,
    };
    representation.content_type = JSON;
    representation.cache = cache;
    Ok(representation)
}

/// `/readyz`: whether a snapshot is in force, which one, and the last refusals.
pub fn readyz(state: &State) -> Representation {
    let loaded = state.snapshot();
    // Anyone may ask, so a refused file is named by its role, never by where it lives.
    let refused = |r: Refusal, role: &str| {
        let path = r.path.display().to_string();
        serde_json::json!({
            "at": epoch_seconds(r.at),
            "file": role,
            "reason": if path.is_empty() { r.reason } else { r.reason.replace(&path, role) },
        })
    };
    let refusal = state.snapshots.last_refusal().map(|r| refused(r, "the snapshot file"));
    let keys_refusal = state.keys.last_refusal().map(|r| refused(r, "the keys file"));
    let budgets = match &state.budgets.shared {
        None => serde_json::json!({ "mode": "local" }),
        Some(store) => serde_json::json!({
            "mode": if store.is_shared() { "shared" } else { "local_fallback" },
            "store": store.address,
        }),
    };
    let source = state.snapshot_source.as_ref().map(|source| source.readiness());
    let (status, body) = match &loaded {
        Some(loaded) => {
            let header = loaded.snapshot.header();
            (
                StatusCode::OK,
                serde_json::json!({
                    "status": "ready",
                    "dataset_version": header.dataset_version,
                    "methodology_version": header.methodology_version,
                    "as_of": header.as_of,
                    "loaded_at": epoch_seconds(loaded.loaded_at),
                    "companies": loaded.snapshot.index().companies.len(),
                    "last_refusal": refusal,
                    "last_keys_refusal": keys_refusal,
                    "budgets": budgets,
                    "source": source,
                }),
            )
        }
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({
                "status": "not_ready",
                "last_refusal": refusal,
                "last_keys_refusal": keys_refusal,
                "budgets": budgets,
                "source": source,
            }),
        ),
    };
    let bytes = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
    Representation::uncached(status, bytes, JSON)
}
