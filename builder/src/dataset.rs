//! The source dataset: what an operator hands the builder, read and checked.
//!
//! A dataset directory holds `dataset.toml`, `companies.csv` and `events.csv`. Everything in
//! it is checked before any mark is computed, and every refusal names the file and line and
//! says what is wrong, so an operator can fix the row without reading code. This module
//! computes nothing.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use marks_format::rules::day::Day;
use marks_format::rules::names::{first_invisible, is_valid_slug, Joiners, MAX_NAME_BYTES};

macro_rules! string_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            /// Position in `ALL`; stable because `ALL` is in declaration order.
            pub fn index(self) -> usize {
                self as usize
            }

            fn expected() -> String {
                [$($text),+].join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// The sector a company is marked against; each has its own volatility and pooled growth.
    Sector {
        Ai = "ai",
        Fintech = "fintech",
        Space = "space",
        EnterpriseSoftware = "enterprise-software",
        Consumer = "consumer",
        Crypto = "crypto",
        Defense = "defense",
        Healthcare = "healthcare",
        Mobility = "mobility",
        Gaming = "gaming",
        DeveloperTools = "developer-tools",
        Other = "other",
        // Data v6; after `other` so that the codes of the others stay as they were.
        ClimateEnergy = "climate-energy",
    }
);

string_enum!(
    /// The company lifecycle label of SPEC 3.
    Status {
        Private = "private",
        IpoCompleted = "ipo_completed",
    }
);

string_enum!(
    /// What kind of record an event is (docs/design.md section 2): an observation of value, an
    /// outcome that ends the private period, a sale's agreement, closing or failure, or the
    /// withdrawal of an earlier record.
    EventType {
        PrimaryRound = "primary_round",
        DownRound = "down_round",
        TenderOffer = "tender_offer",
        SecondarySale = "secondary_sale",
        FundMark = "fund_mark",
        Ipo = "ipo",
        DirectListing = "direct_listing",
        SpacListing = "spac_listing",
        Acquisition = "acquisition",
        AcquisitionClosed = "acquisition_closed",
        AcquisitionTerminated = "acquisition_terminated",
        Bankruptcy = "bankruptcy",
        WindDown = "wind_down",
        Retraction = "retraction",
        // Data v6: evidence only, never an anchor of v0.5.0's marks.
        Buyback = "buyback",
        InternalValuation = "internal_valuation",
    }
);

impl EventType {
    /// A listing ends a company's private period at its offer (or reference) price.
    pub fn is_listing(self) -> bool {
        matches!(self, EventType::Ipo | EventType::DirectListing | EventType::SpacListing)
    }

    /// A failure ends the company: its equity written off, or nearly.
    pub fn is_failure(self) -> bool {
        matches!(self, EventType::Bankruptcy | EventType::WindDown)
    }

    /// Outcomes end the private period: listings (reported `closed`: [`Event::ends_private_period`]),
    /// a closed sale, failures. They are scored, never inputs to a mark.
    pub fn is_terminal(self) -> bool {
        self.is_listing() || self.is_failure() || self == EventType::AcquisitionClosed
    }

    /// Observations of value a mark may start from (an agreed sale and a fund's mark among them).
    pub fn is_anchor(self) -> bool {
        matches!(
            self,
            EventType::PrimaryRound
                | EventType::DownRound
                | EventType::TenderOffer
                | EventType::SecondarySale
                | EventType::Acquisition
                | EventType::FundMark
        )
    }

    /// Whether a record of this type may carry a valuation of 0: a write-off (a failure, a
    /// fund's mark of 0), a terminated deal, a retraction, or a sale whose price was not
    /// disclosed.
    pub fn may_be_zero(self) -> bool {
        matches!(
            self,
            EventType::Bankruptcy
                | EventType::WindDown
                | EventType::FundMark
                | EventType::Acquisition
                | EventType::AcquisitionClosed
                | EventType::AcquisitionTerminated
                | EventType::Retraction
        )
    }
}

string_enum!(
    /// How firm a reported figure is.
    ReportedAs {
        Closed = "closed",
        Announced = "announced",
        InTalks = "in_talks",
        Estimate = "estimate",
    }
);

impl EventType {
    /// The `reported_as` a record of this type may carry (docs/design.md section 2); an empty
    /// value, on records older than the column, reads as `closed`.
    pub fn reported_as_allowed(self) -> &'static [ReportedAs] {
        use ReportedAs::*;
        match self {
            EventType::PrimaryRound | EventType::DownRound | EventType::TenderOffer | EventType::SecondarySale => {
                &[Closed, Announced, Estimate, InTalks]
            }
            EventType::FundMark | EventType::InternalValuation => &[Estimate],
            EventType::Buyback | EventType::AcquisitionClosed | EventType::AcquisitionTerminated => &[Closed],
            EventType::Acquisition => &[Announced, Closed, InTalks],
            EventType::Ipo | EventType::DirectListing | EventType::SpacListing => &[Closed, Announced, InTalks],
            EventType::Bankruptcy | EventType::WindDown => &[Closed, Announced],
            EventType::Retraction => &[],
        }
    }
}

string_enum!(
    /// The grade of an event's source: A a primary document, B a major news organisation, C
    /// another outlet with a masthead, D a blog, an aggregator or a copy.
    SourceGrade {
        A = "A",
        B = "B",
        C = "C",
        D = "D",
    }
);

string_enum!(
    /// `meta.data_mode` of SPEC 2.1.
    DataMode {
        Illustrative = "illustrative",
        Live = "live",
    }
);

string_enum!(
    /// `meta.provenance` of SPEC 2.1.
    Provenance {
        Backtest = "backtest",
        Live = "live",
    }
);

/// `dataset.toml`: the version and labels that every response's `meta` carries.
#[derive(Clone, Debug)]
pub struct DatasetInfo {
    pub dataset_version: Day,
    pub as_of: Day,
    pub data_mode: DataMode,
    pub provenance: Provenance,
    pub disclaimer: String,
    /// A public demo key for the home page's quickstart (letters, digits and `_` only).
    pub quickstart_key: Option<String>,
    /// The publication log's origin: its name in every checkpoint.
    pub log_origin: String,
    /// The publication log of the dataset's earlier versions, when it carries one (a file
    /// beside dataset.toml): the bundled sample does, so that its first build shows a revision.
    pub publication_log: Option<PathBuf>,
    /// Public keys (PEM files beside dataset.toml) whose signatures the carried log's
    /// checkpoints may bear besides this build's key and the previous snapshot's: the keys of
    /// whoever published the earlier versions. They are published with the others, so that
    /// their checkpoints stay verifiable.
    pub publication_log_keys: Vec<PathBuf>,
}

/// The publication log's origin when a dataset names none.
pub const DEFAULT_LOG_ORIGIN: &str = "valuation-marks.example/publications";

#[derive(Clone, Debug)]
pub struct Event {
    pub event_id: String,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub valuation_usd: u64,
    /// Empty in records that predate the column.
    pub reported_as: Option<ReportedAs>,
    pub source_url: String,
    /// Empty in records that predate the column.
    pub source_grade: Option<SourceGrade>,
    pub note: String,
    /// The earlier record this one corrects (or, for a `retraction`, withdraws).
    pub supersedes: Option<String>,
    /// The later record that corrects this one, if any.
    pub superseded_by: Option<String>,
    /// The later `retraction` that withdraws this one, if any.
    pub retracted_by: Option<String>,
    /// Line in events.csv, for messages about this event.
    pub line: u64,
}

impl Event {
    /// How firm its figure is: an empty `reported_as` (a record older than the column) reads as
    /// `closed`.
    pub fn reported(&self) -> ReportedAs {
        self.reported_as.unwrap_or(ReportedAs::Closed)
    }

    /// Whether it ends the private period: a closed listing, a closed sale, a failure. A
    /// listing `announced` is an agreed deal that may yet be terminated, one `in_talks` a
    /// filing or a target.
    pub fn ends_private_period(&self) -> bool {
        self.event_type.is_terminal() && (!self.event_type.is_listing() || self.reported() == ReportedAs::Closed)
    }

    /// An agreed listing (a SPAC merger or direct listing signed, not completed): an anchor
    /// that holds its price while pending, as an agreed sale does, until a later
    /// `acquisition_terminated` cancels it.
    pub fn is_agreed_listing(&self) -> bool {
        self.event_type.is_listing() && self.reported() == ReportedAs::Announced
    }

    /// An agreed deal, sale or listing, pending until it closes or is terminated.
    pub fn is_agreed_deal(&self) -> bool {
        self.event_type == EventType::Acquisition || self.is_agreed_listing()
    }

    /// An observation of value a mark may start from: an anchor type, or an agreed listing.
    pub fn is_anchor(&self) -> bool {
        self.event_type.is_anchor() || self.is_agreed_listing()
    }

    /// Part of the effective view (docs/design.md section 2): neither corrected nor withdrawn
    /// by a later record, and not itself a retraction. The methodology, the lists and the
    /// pages read only these; getMarkEvents returns every record.
    pub fn is_effective(&self) -> bool {
        self.superseded_by.is_none() && self.retracted_by.is_none() && self.event_type != EventType::Retraction
    }
}

#[derive(Clone, Debug)]
pub struct Company {
    pub slug: String,
    pub name: String,
    /// Other names it is known by (former names, brands), from the optional `aliases` column
    /// (separated by `;`): search finds the company by them too.
    pub aliases: Vec<String>,
    pub sector: Sector,
    pub status: Status,
    /// Its own web host (`stripe.com`), from the optional `domain` column: lower case, no
    /// scheme, no `www.`, unique in the dataset (data v6).
    pub domain: Option<String>,
    /// `EXCHANGE:SYMBOL` of its listing (`NASDAQ:ABNB`), from the optional `ticker` column: a
    /// company with a closed listing may carry one, and keeps it once sold or delisted.
    pub ticker: Option<String>,
    /// In date order; events of one day keep their order in events.csv.
    pub events: Vec<Event>,
    pub line: u64,
}

impl Company {
    /// The effective view of the history, in date order (file order within a day).
    pub fn effective(&self) -> impl DoubleEndedIterator<Item = &Event> {
        self.events.iter().filter(|e| e.is_effective())
    }

    /// The effective outcome that ended the private period, if any: a listing, a closed sale,
    /// a bankruptcy or a wind-down (the dataset checks allow at most one).
    pub fn terminal(&self) -> Option<&Event> {
        self.effective().find(|e| e.ends_private_period())
    }

    /// The effective listing, if the private period ended in one.
    pub fn listing(&self) -> Option<&Event> {
        self.terminal().filter(|e| e.event_type.is_listing())
    }
}

/// A dataset that passed every check in this module.
#[derive(Clone, Debug)]
pub struct Dataset {
    pub info: DatasetInfo,
    /// Sorted by slug.
    pub companies: Vec<Company>,
}

impl Dataset {
    pub fn event_count(&self) -> usize {
        self.companies.iter().map(|c| c.events.len()).sum()
    }
}

/// Why a dataset was refused. The message is `file:line: what is wrong` wherever a line exists.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{path}:{line}: {reason}")]
    Row { path: PathBuf, line: u64, reason: String },
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
}

/// Largest valuation that every JSON reader represents exactly (2^53 - 1).
pub const MAX_VALUATION_USD: u64 = 9_007_199_254_740_991;

impl Dataset {
    /// Reads and checks the dataset in `dir`.
    pub fn load(dir: &Path) -> Result<Dataset, DatasetError> {
        let info = read_info(&dir.join("dataset.toml"))?;
        let companies_path = dir.join("companies.csv");
        let events_path = dir.join("events.csv");
        let mut companies = read_companies(&companies_path)?;
        read_events(&events_path, &info, &mut companies)?;
        check_histories(&companies_path, &events_path, &companies)?;
        Ok(Dataset { info, companies })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInfo {
    dataset_version: toml::Spanned<String>,
    as_of: toml::Spanned<String>,
    data_mode: toml::Spanned<String>,
    provenance: toml::Spanned<String>,
    disclaimer: toml::Spanned<String>,
    /// A key anyone may use with this dataset, shown in the home page's quickstart (the bundled
    /// sample's demo key); absent for a real dataset.
    #[serde(default)]
    quickstart_key: Option<toml::Spanned<String>>,
    /// The publication log's origin (C2SP: a schema-less URL naming the log).
    #[serde(default)]
    log_origin: Option<toml::Spanned<String>>,
    /// A file beside dataset.toml holding the publication log of earlier versions.
    #[serde(default)]
    publication_log: Option<toml::Spanned<String>>,
    /// Public key files beside dataset.toml that signed the carried log's checkpoints.
    #[serde(default)]
    publication_log_keys: Vec<toml::Spanned<String>>,
}

fn read_info(path: &Path) -> Result<DatasetInfo, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|err| DatasetError::File {
        path: path.to_owned(),
        reason: format!("cannot read: {err}"),
    })?;
    let raw: RawInfo = toml::from_str(&text).map_err(|err| {
        let reason = err.message().to_owned();
        match err.span() {
            Some(span) => DatasetError::Row {
                path: path.to_owned(),
                line: line_of(&text, span.start),
                reason,
            },
            None => DatasetError::File {
                path: path.to_owned(),
                reason,
            },
        }
    })?;
    let at = |field: &toml::Spanned<String>, reason: String| DatasetError::Row {
        path: path.to_owned(),
        line: line_of(&text, field.span().start),
        reason,
    };
    let date = |field: &toml::Spanned<String>, name: &str| {
        Day::parse(field.get_ref())
            .ok_or_else(|| at(field, format!("{name} {:?} is not a date YYYY-MM-DD", field.get_ref())))
    };
    let dataset_version = date(&raw.dataset_version, "dataset_version")?;
    let as_of = date(&raw.as_of, "as_of")?;
    let data_mode = DataMode::parse(raw.data_mode.get_ref()).ok_or_else(|| {
        at(
            &raw.data_mode,
            format!(
                "unknown data_mode {:?} (expected one of {})",
                raw.data_mode.get_ref(),
                DataMode::expected()
            ),
        )
    })?;
    let provenance = Provenance::parse(raw.provenance.get_ref()).ok_or_else(|| {
        at(
            &raw.provenance,
            format!(
                "unknown provenance {:?} (expected one of {})",
                raw.provenance.get_ref(),
                Provenance::expected()
            ),
        )
    })?;
    if raw.disclaimer.get_ref().trim().is_empty() {
        return Err(at(&raw.disclaimer, "disclaimer is empty".into()));
    }
    check_text("disclaimer", raw.disclaimer.get_ref(), Joiners::InsideWords)
        .map_err(|reason| at(&raw.disclaimer, reason))?;
    if let Some(key) = &raw.quickstart_key {
        let text = key.get_ref();
        if text.is_empty() || text.len() > 64 || !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(at(
                key,
                format!("quickstart_key {text:?} is not a key: 1 to 64 ASCII letters, digits or '_'"),
            ));
        }
    }
    let log_origin = match &raw.log_origin {
        None => DEFAULT_LOG_ORIGIN.to_string(),
        Some(origin) => {
            let text = origin.get_ref();
            let plain = |c: char| c.is_ascii_graphic() && c != '+';
            if text.is_empty() || text.len() > 255 || !text.chars().all(plain) {
                return Err(at(
                    origin,
                    format!(
                        "log_origin {text:?} is not an origin: 1 to 255 visible ASCII characters, no spaces, no '+'"
                    ),
                ));
            }
            text.clone()
        }
    };
    // A file the dataset names lies beside dataset.toml: a name, never a path elsewhere.
    let beside = |name: &toml::Spanned<String>, field: &str| {
        let text = name.get_ref();
        let plain = !text.is_empty() && !text.contains('/') && !text.contains('\\') && text != "." && text != "..";
        if plain {
            Ok(path.with_file_name(text))
        } else {
            Err(at(
                name,
                format!("{field} {text:?} is not a file name beside dataset.toml"),
            ))
        }
    };
    let publication_log = raw
        .publication_log
        .as_ref()
        .map(|name| beside(name, "publication_log"))
        .transpose()?;
    let publication_log_keys = raw
        .publication_log_keys
        .iter()
        .map(|name| beside(name, "publication_log_keys"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(DatasetInfo {
        dataset_version,
        as_of,
        data_mode,
        provenance,
        disclaimer: raw.disclaimer.into_inner(),
        quickstart_key: raw.quickstart_key.map(toml::Spanned::into_inner),
        log_origin,
        publication_log,
        publication_log_keys,
    })
}

fn line_of(text: &str, offset: usize) -> u64 {
    let prefix = text.get(..offset).unwrap_or(text);
    prefix.bytes().filter(|&b| b == b'\n').count() as u64 + 1
}

/// A CSV file read row by row with its columns located by header name, so that every
/// complaint about a row carries its line.
struct CsvTable {
    path: PathBuf,
    reader: csv::Reader<std::fs::File>,
    /// Where each required, then each optional, column is (none: an optional column absent).
    columns: Vec<Option<usize>>,
}

impl CsvTable {
    /// A table whose header must name every `required` column; an `optional` column may be
    /// absent, and then reads as empty.
    fn open(path: &Path, required: &[&str], optional: &[&str]) -> Result<CsvTable, DatasetError> {
        let file_error = |reason: String| DatasetError::File {
            path: path.to_owned(),
            reason,
        };
        let file = std::fs::File::open(path).map_err(|err| file_error(format!("cannot read: {err}")))?;
        let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(file);
        let headers = reader
            .headers()
            .map_err(|err| file_error(format!("cannot read the header row: {err}")))?
            .clone();
        if headers.is_empty() || (headers.len() == 1 && headers[0].is_empty()) {
            return Err(file_error(
                "empty file: expected a header row and at least one row".into(),
            ));
        }
        let columns = required
            .iter()
            .map(|name| {
                headers
                    .iter()
                    .position(|h| h.trim() == *name)
                    .ok_or_else(|| DatasetError::Row {
                        path: path.to_owned(),
                        line: 1,
                        reason: format!("missing column {name:?} (the header must name {})", required.join(", ")),
                    })
            })
            .map(|column| column.map(Some))
            .chain(
                optional
                    .iter()
                    .map(|name| Ok(headers.iter().position(|h| h.trim() == *name))),
            )
            .collect::<Result<Vec<Option<usize>>, _>>()?;
        Ok(CsvTable {
            path: path.to_owned(),
            reader,
            columns,
        })
    }

    /// Calls `row` with each record's line and its required fields, in `required` order.
    fn for_each_row(mut self, mut row: impl FnMut(u64, &[&str]) -> Result<(), String>) -> Result<u64, DatasetError> {
        let mut record = csv::StringRecord::new();
        let mut rows = 0;
        loop {
            let line = self.reader.position().line() + 1;
            match self.reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(err) => {
                    let line = err.position().map_or(line, |p| p.line());
                    return Err(self.row_error(line, format!("malformed CSV: {err}")));
                }
            }
            let line = record.position().map_or(line, |p| p.line());
            let fields: Vec<&str> = self
                .columns
                .iter()
                .map(|column| column.and_then(|i| record.get(i)).unwrap_or(""))
                .collect();
            row(line, &fields).map_err(|reason| self.row_error(line, reason))?;
            rows += 1;
        }
        if rows == 0 {
            return Err(DatasetError::File {
                path: self.path.clone(),
                reason: "empty file: it has a header row but no rows".into(),
            });
        }
        Ok(rows)
    }

    fn row_error(&self, line: u64, reason: String) -> DatasetError {
        DatasetError::Row {
            path: self.path.clone(),
            line,
            reason,
        }
    }
}

/// No event may be dated before this day: a series has one point per day from a company's first
/// event, so an event centuries back would make millions of points per company.
pub const EARLIEST_EVENT: Day = Day(2_440_588); // 1970-01-01, as a Julian day number

fn is_valid_event_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn read_companies(path: &Path) -> Result<Vec<Company>, DatasetError> {
    let table = CsvTable::open(
        path,
        &["slug", "name", "sector", "status"],
        &["aliases", "domain", "ticker"],
    )?;
    let mut companies = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    let mut domains: HashMap<String, (String, u64)> = HashMap::new();
    table.for_each_row(|line, fields| {
        let [slug, name, sector, status, aliases_text, domain, ticker] = fields else {
            return Err("wrong number of fields".into());
        };
        if !is_valid_slug(slug) {
            return Err(format!(
                "slug {} must be 1-64 characters of a-z, 0-9 and '-', starting with a letter or digit",
                quoted(slug)
            ));
        }
        if let Some(first) = seen.insert(slug.to_string(), line) {
            return Err(format!("duplicate slug {slug:?} (first on line {first})"));
        }
        if name.trim().is_empty() {
            return Err(format!("company {slug:?} has an empty name"));
        }
        check_text(&format!("the name of {slug:?}"), name, Joiners::Refused)?;
        if name.trim().len() > MAX_NAME_BYTES {
            return Err(format!(
                "company {slug:?} has a name of {} bytes; names are at most {MAX_NAME_BYTES} bytes of UTF-8",
                name.trim().len()
            ));
        }
        let sector = Sector::parse(sector).ok_or_else(|| {
            format!(
                "unknown sector {} (expected one of {})",
                quoted(sector),
                Sector::expected()
            )
        })?;
        let status = Status::parse(status).ok_or_else(|| {
            format!(
                "unknown status {} (expected one of {})",
                quoted(status),
                Status::expected()
            )
        })?;
        let aliases: Vec<String> = aliases_text
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        check_text(&format!("the aliases of {slug:?}"), aliases_text, Joiners::Refused)?;
        if let Some(long) = aliases.iter().find(|a| a.len() > MAX_NAME_BYTES) {
            return Err(format!(
                "company {slug:?} has an alias of {} bytes; aliases are at most {MAX_NAME_BYTES} bytes of UTF-8",
                long.len()
            ));
        }
        let domain = (!domain.is_empty()).then(|| check_domain(domain)).transpose()?;
        if let Some(domain) = &domain {
            if let Some((other, first)) = domains.insert(domain.clone(), (slug.to_string(), line)) {
                return Err(format!(
                    "domain {domain:?} of {slug:?} is already {other:?}'s (line {first}): a domain names one company"
                ));
            }
        }
        let ticker = (!ticker.is_empty()).then(|| check_ticker(ticker)).transpose()?;
        companies.push(Company {
            slug: slug.to_string(),
            name: name.trim().to_string(),
            aliases,
            sector,
            status,
            domain,
            ticker,
            events: Vec::new(),
            line,
        });
        Ok(())
    })?;
    companies.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(companies)
}

fn read_events(path: &Path, info: &DatasetInfo, companies: &mut [Company]) -> Result<(), DatasetError> {
    let table = CsvTable::open(
        path,
        &[
            "event_id",
            "slug",
            "event_type",
            "occurred_on",
            "valuation_usd",
            "source_url",
            "note",
        ],
        // Optional: datasets made before these columns existed leave them out.
        &["reported_as", "source_grade", "supersedes"],
    )?;
    /// Where each record went, for `supersedes` (which must name an earlier one).
    struct Placed {
        line: u64,
        company: usize,
        position: usize,
    }
    let mut seen: HashMap<String, Placed> = HashMap::new();
    // Ids folded to lower case: two that differ only in case would name one record to a reader
    // who types it, and to a file system or a spreadsheet that folds case.
    let mut folded: HashMap<String, (String, u64)> = HashMap::new();
    table.for_each_row(|line, fields| {
        let [event_id, slug, event_type, occurred_on, valuation, source_url, note, reported_as, source_grade, supersedes] =
            fields
        else {
            return Err("wrong number of fields".into());
        };
        if !is_valid_event_id(event_id) {
            return Err(format!(
                "event_id {} must be 1-64 characters of A-Z, a-z, 0-9, '-', '_', '.'",
                quoted(event_id)
            ));
        }
        if let Some(first) = seen.get(*event_id) {
            return Err(format!("duplicate event_id {event_id:?} (first on line {})", first.line));
        }
        if let Some((other, first)) = folded.get(&event_id.to_ascii_lowercase()) {
            return Err(format!(
                "event_id {event_id:?} differs from {other:?} (line {first}) only in case: ids must differ in more than case"
            ));
        }
        folded.insert(event_id.to_ascii_lowercase(), (event_id.to_string(), line));
        let company = companies
            .binary_search_by(|c| c.slug.as_str().cmp(slug))
            .map_err(|_| format!("unknown slug {}: it is not in companies.csv", quoted(slug)))?;
        let event_type = EventType::parse(event_type).ok_or_else(|| {
            format!(
                "unknown event_type {} (expected one of {})",
                quoted(event_type),
                EventType::expected()
            )
        })?;
        let occurred_on = Day::parse(occurred_on)
            .ok_or_else(|| format!("occurred_on {} is not a date YYYY-MM-DD", quoted(occurred_on)))?;
        if occurred_on < EARLIEST_EVENT {
            return Err(format!(
                "event {event_id} on {occurred_on} is before {EARLIEST_EVENT}, the earliest date a series may start"
            ));
        }
        if occurred_on > info.as_of {
            return Err(format!(
                "event {event_id} on {occurred_on} is after the dataset's as_of {} (dataset.toml)",
                info.as_of
            ));
        }
        let valuation_usd = parse_valuation(valuation, event_type)?;
        check_text(&format!("source_url of event {event_id}"), source_url, Joiners::Refused)?;
        if !source_url.is_empty() {
            check_source_url(source_url)?;
        }
        check_text(&format!("note of event {event_id}"), note, Joiners::InsideWords)?;
        let reported_as = optional(reported_as, ReportedAs::parse, "reported_as", ReportedAs::expected)?;
        check_reported_as(event_type, reported_as)?;
        let source_grade = optional(source_grade, SourceGrade::parse, "source_grade", SourceGrade::expected)?;
        let supersedes = match *supersedes {
            "" if event_type == EventType::Retraction => {
                return Err(format!(
                    "retraction {event_id} names no record in supersedes: a retraction withdraws an earlier record"
                ))
            }
            "" => None,
            id => {
                let Some(earlier) = seen.get(id) else {
                    return Err(format!(
                        "event {event_id} supersedes {}, which is not an earlier record of events.csv",
                        quoted(id)
                    ));
                };
                let target = &companies[earlier.company].events[earlier.position];
                if event_type == EventType::Retraction {
                    check_retraction(event_id, occurred_on, valuation_usd, target, earlier.line)?;
                }
                if earlier.company != company {
                    return Err(format!(
                        "event {event_id} of {slug:?} supersedes {id} of {:?} (line {}): a correction is of the same company",
                        companies[earlier.company].slug, earlier.line
                    ));
                }
                if let Some(by) = target.superseded_by.as_ref().or(target.retracted_by.as_ref()) {
                    return Err(format!(
                        "event {event_id} supersedes {id} (line {}), which {by} already supersedes: correct the newest record of a chain",
                        earlier.line
                    ));
                }
                Some(id.to_string())
            }
        };
        if let Some(id) = &supersedes {
            let earlier = &seen[id.as_str()];
            let target = &mut companies[earlier.company].events[earlier.position];
            if event_type == EventType::Retraction {
                target.retracted_by = Some(event_id.to_string());
            } else {
                target.superseded_by = Some(event_id.to_string());
            }
        }
        let events = &mut companies[company].events;
        seen.insert(
            event_id.to_string(),
            Placed {
                line,
                company,
                position: events.len(),
            },
        );
        events.push(Event {
            event_id: event_id.to_string(),
            event_type,
            occurred_on,
            valuation_usd,
            reported_as,
            source_url: source_url.to_string(),
            source_grade,
            note: note.to_string(),
            supersedes,
            superseded_by: None,
            retracted_by: None,
            line,
        });
        Ok(())
    })?;
    for company in companies.iter_mut() {
        // Stable: events of one day keep their file order.
        company.events.sort_by_key(|e| e.occurred_on);
    }
    Ok(())
}

/// A company's own web host as companies.csv writes it: lower case letters, digits and `-` in
/// dot-separated labels (at least two; none empty or starting or ending with `-`), with no
/// scheme, path, port or `www.` (the same company at any of its hosts resolves by this one).
fn check_domain(text: &str) -> Result<String, String> {
    let refuse = |why: &str| Err(format!("domain {} {why}", quoted(text)));
    if text.contains("://") || text.contains('/') || text.contains(':') {
        return refuse("is not a bare host: write it without a scheme, port or path (stripe.com)");
    }
    if text.starts_with("www.") {
        return refuse("starts with www.: write the host without it");
    }
    if text.len() > 253 {
        return refuse("is longer than 253 characters");
    }
    let labels: Vec<&str> = text.split('.').collect();
    let label_ok = |label: &&str| {
        (1..=63).contains(&label.len())
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if labels.len() < 2 || !labels.iter().all(label_ok) {
        return refuse("is not a host: lower-case labels of a-z, 0-9 and '-', separated by dots");
    }
    Ok(text.to_string())
}

/// A listed company's ticker as companies.csv writes it: `EXCHANGE:SYMBOL`, the exchange's
/// common code in capitals (NASDAQ, NYSE, LSE, HKEX, ...) and the symbol as the exchange writes
/// it (`0700`, `BRK.B`).
fn check_ticker(text: &str) -> Result<String, String> {
    let shape = || {
        format!(
            "ticker {} is not EXCHANGE:SYMBOL (NASDAQ:ABNB, HKEX:0700): an exchange code of 2 to 10 capitals \
             or digits, a colon, a symbol of 1 to 15 capitals, digits, '.' or '-'",
            quoted(text)
        )
    };
    let (exchange, symbol) = text.split_once(':').ok_or_else(shape)?;
    let exchange_ok = (2..=10).contains(&exchange.len())
        && exchange.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && exchange.bytes().next().is_some_and(|b| b.is_ascii_uppercase());
    let symbol_ok = (1..=15).contains(&symbol.len())
        && symbol
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'.' || b == b'-')
        && symbol.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric());
    if exchange_ok && symbol_ok {
        Ok(text.to_string())
    } else {
        Err(shape())
    }
}

/// A record's `reported_as` is one its type takes (docs/design.md section 2); empty reads as
/// `closed`, and a retraction reports nothing.
fn check_reported_as(event_type: EventType, reported_as: Option<ReportedAs>) -> Result<(), String> {
    let allowed = event_type.reported_as_allowed();
    let names = || allowed.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(", ");
    match reported_as {
        Some(_) if event_type == EventType::Retraction => {
            Err("a retraction reports no value: its reported_as is empty".to_string())
        }
        None if event_type == EventType::Retraction => Ok(()),
        Some(given) if !allowed.contains(&given) => Err(format!(
            "reported_as {given} is not one a {event_type} takes (expected {})",
            names()
        )),
        None if !allowed.contains(&ReportedAs::Closed) => Err(format!(
            "a {event_type} record needs its reported_as ({}): an empty one reads as closed",
            names()
        )),
        _ => Ok(()),
    }
}

/// A retraction withdraws a record that reported something: never another retraction (withdraw
/// a mistaken retraction by correcting the record it withdrew), never with a value of its own
/// (it reports none), and never dated before what it withdraws (nothing can be withdrawn before
/// it was reported).
fn check_retraction(
    event_id: &str,
    on: Day,
    valuation_usd: u64,
    target: &Event,
    target_line: u64,
) -> Result<(), String> {
    if target.event_type == EventType::Retraction {
        return Err(format!(
            "retraction {event_id} withdraws {}, itself a retraction (line {target_line}): to restore a record, append a correction of it",
            target.event_id
        ));
    }
    if valuation_usd != 0 {
        return Err(format!(
            "retraction {event_id} carries valuation_usd {valuation_usd}: a retraction reports no value (write 0)"
        ));
    }
    if on < target.occurred_on {
        return Err(format!(
            "retraction {event_id} on {on} is dated before {} on {} (line {target_line}), which it withdraws",
            target.event_id, target.occurred_on
        ));
    }
    Ok(())
}

/// An http(s) address a reader can follow: a host after the scheme (not `https:///path`), no
/// user name or password before it, and no white space anywhere (an address with a space is two
/// words to every tool that splits text).
fn check_source_url(text: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("source_url {} {why}", quoted(text)));
    if text.chars().any(char::is_whitespace) {
        return refuse("holds white space: write it percent-encoded (%20)");
    }
    let Some(rest) = text.strip_prefix("https://").or_else(|| text.strip_prefix("http://")) else {
        return refuse("is not an http(s) address");
    };
    if rest.starts_with(['/', '\\']) {
        return refuse("names no host after the scheme");
    }
    match url::Url::parse(text) {
        Err(err) => refuse(&format!("is not an address: {err}")),
        Ok(url) if url.host_str().is_none_or(str::is_empty) => refuse("names no host"),
        Ok(url) if !url.username().is_empty() || url.password().is_some() => {
            refuse("carries a user name or password before its host")
        }
        Ok(_) => Ok(()),
    }
}

/// A field as an error message quotes it: escaped, and cut to its first 60 characters with its
/// size said, so that a hostile row (a 20 MB cell) makes a one-line message.
fn quoted(text: &str) -> String {
    const SHOWN: usize = 60;
    match text.char_indices().nth(SHOWN) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes)", &text[..end], text.len()),
    }
}

/// An optional column's value: empty, or one of its names.
fn optional<T>(
    text: &str,
    parse: fn(&str) -> Option<T>,
    column: &str,
    expected: fn() -> String,
) -> Result<Option<T>, String> {
    if text.is_empty() {
        return Ok(None);
    }
    parse(text).map(Some).ok_or_else(|| {
        format!(
            "unknown {column} {} (expected one of {}, or empty)",
            quoted(text),
            expected()
        )
    })
}

/// Refuses a character that changes how text reads without being seen
/// ([`marks_format::rules::names::is_invisible`]: controls, every format character, the tag
/// characters and Hangul fillers among them). A dataset's text ends up in JSON, CSV cells, pages
/// and agents' context, where a name that shows "Zeta Labs" must not carry hidden words; a note
/// may keep a zero-width joiner or non-joiner inside a word (`Joiners::InsideWords`).
pub fn check_text(what: &str, text: &str, joiners: Joiners) -> Result<(), String> {
    match first_invisible(text, joiners) {
        None => Ok(()),
        Some((at, c)) => Err(format!(
            "{what} holds the invisible or control character U+{:04X} at character {at}: text fields take printable characters only",
            u32::from(c),
        )),
    }
}

/// A whole, non-negative number of dollars; 0 only where the event type allows it (a write-off,
/// a terminated deal, a retraction, an undisclosed sale price: docs/design.md section 2).
fn parse_valuation(text: &str, event_type: EventType) -> Result<u64, String> {
    if let Some(rest) = text.strip_prefix('-') {
        if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(format!("valuation_usd {text} is not positive"));
        }
    }
    // Digits only, as the number is written everywhere it is shown: no sign, and no leading
    // zero that one reader takes for octal and another drops.
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "valuation_usd {} is not a whole number of US dollars, digits only",
            quoted(text)
        ));
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(format!(
            "valuation_usd {text:?} has a leading zero: write the number as it reads"
        ));
    }
    let value: u64 = text.parse().map_err(|_| {
        format!(
            "valuation_usd {} is above the largest supported value {MAX_VALUATION_USD}",
            quoted(text)
        )
    })?;
    if value == 0 && !event_type.may_be_zero() {
        return Err(format!(
            "valuation_usd 0 is not positive (only a failure, a fund's write-off, a terminated or undisclosed sale or a retraction may carry 0; this is a {event_type})"
        ));
    }
    if value > MAX_VALUATION_USD {
        return Err(format!(
            "valuation_usd {text} is above the largest supported value {MAX_VALUATION_USD}"
        ));
    }
    Ok(value)
}

/// The checks that need a company's whole history, read in its effective view: it has something
/// to mark, its status agrees with its outcome, at most one outcome ends its private period,
/// and nothing is reported after that.
fn check_histories(companies_path: &Path, events_path: &Path, companies: &[Company]) -> Result<(), DatasetError> {
    let company_error = |company: &Company, reason: String| DatasetError::Row {
        path: companies_path.to_owned(),
        line: company.line,
        reason,
    };
    let event_error = |event: &Event, reason: String| DatasetError::Row {
        path: events_path.to_owned(),
        line: event.line,
        reason,
    };
    for company in companies {
        let slug = &company.slug;
        if company.events.is_empty() {
            return Err(company_error(
                company,
                format!("company {slug:?} has no events in events.csv"),
            ));
        }
        let Some(first) = company.effective().next() else {
            return Err(company_error(
                company,
                format!("every event of {slug:?} is superseded or retracted: it has nothing to mark"),
            ));
        };
        let outcomes: Vec<&Event> = company.effective().filter(|e| e.ends_private_period()).collect();
        if let [outcome, second, ..] = outcomes.as_slice() {
            return Err(event_error(
                second,
                format!(
                    "second outcome for {slug:?}: this {} follows the {} on line {}, and a listing, closed sale, bankruptcy or wind-down ends the private period",
                    second.event_type, outcome.event_type, outcome.line
                ),
            ));
        }
        let listing = company.listing();
        if let (Some(ticker), None) = (&company.ticker, listing) {
            return Err(company_error(
                company,
                format!(
                    "ticker {ticker:?} of {slug:?}, which has no closed ipo, direct_listing or spac_listing: a ticker is a listed company's"
                ),
            ));
        }
        match (company.status, listing) {
            (Status::Private, Some(listing)) => {
                return Err(company_error(
                    company,
                    format!(
                    "status is \"private\" but {slug:?} has a {} on {} (events.csv:{}); set it to \"ipo_completed\"",
                    listing.event_type, listing.occurred_on, listing.line
                ),
                ))
            }
            (Status::IpoCompleted, None) => {
                return Err(company_error(
                    company,
                    format!(
                        "status is \"ipo_completed\" but {slug:?} has no ipo, direct_listing or spac_listing event"
                    ),
                ))
            }
            _ => {}
        }
        if let Some(outcome) = outcomes.first() {
            if first.ends_private_period() || first.occurred_on >= outcome.occurred_on {
                return Err(event_error(
                    outcome,
                    format!(
                        "{slug:?} needs a valuation event before the day of its {} to be marked",
                        outcome.event_type
                    ),
                ));
            }
            // Records of the outcome's own day that the file lists before it are the
            // company's last private news; anything after it is not.
            let after = company.effective().skip_while(|e| e.line != outcome.line).nth(1);
            if let Some(late) = after {
                return Err(event_error(
                    late,
                    format!(
                        "event {} on {} comes after {slug:?}'s {} on {} (line {}), which ended its private period",
                        late.event_id, late.occurred_on, outcome.event_type, outcome.occurred_on, outcome.line
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_parses_only_real_dates() {
        assert_eq!(
            Day::parse("2024-02-29").map(|d| d.to_string()),
            Some("2024-02-29".into())
        );
        assert!(Day::parse("2025-02-29").is_none());
        assert!(Day::parse("2025-2-01").is_none());
        assert!(Day::parse(" 2025-02-01").is_none());
        assert!(Day::parse("2025/02/01").is_none());
        assert!(Day::parse("+025-02-01").is_none());
        assert_eq!(Day::parse("1970-01-01"), Some(EARLIEST_EVENT));
        let may = Day::parse("2024-05-01").expect("valid date");
        let march = Day::parse("2025-03-27").expect("valid date");
        assert_eq!(march.days_since(may), 330);
    }

    #[test]
    fn valuations_must_be_positive_whole_dollars() {
        let round = EventType::PrimaryRound;
        assert_eq!(parse_valuation("19000000000", round), Ok(19_000_000_000));
        assert!(parse_valuation("0", round).is_err());
        assert!(parse_valuation("-5", round).unwrap_err().contains("not positive"));
        assert!(parse_valuation("1.5e9", round).is_err());
        assert!(parse_valuation("", round).is_err());
        assert!(parse_valuation("99999999999999999999", round).is_err());
        for odd in ["+5", "007", "0019000000000", " 5", "5 "] {
            assert!(parse_valuation(odd, round).is_err(), "{odd:?}");
        }
        let huge = "9".repeat(20_000_000);
        assert!(
            parse_valuation(&huge, round).unwrap_err().len() < 200,
            "a hostile cell is quoted in part"
        );
    }

    #[test]
    fn source_urls_name_a_host_without_userinfo_or_blanks() {
        assert!(check_source_url("https://www.reuters.com/a/b?c=d#e").is_ok());
        assert!(check_source_url("http://example.com").is_ok());
        for refused in [
            "https:///path",
            "https://",
            "https://exa mple.com/",
            "https://example.com/a b",
            "https://user@example.com/",
            "https://user:pw@example.com/",
            "ftp://example.com/",
            "javascript:alert(1)",
            "https:\\\\example.com",
        ] {
            assert!(check_source_url(refused).is_err(), "{refused:?}");
        }
    }

    #[test]
    fn zero_only_where_the_type_allows_it() {
        assert_eq!(parse_valuation("0", EventType::Bankruptcy), Ok(0));
        assert_eq!(parse_valuation("5000000", EventType::Bankruptcy), Ok(5_000_000));
        assert!(parse_valuation("-1", EventType::Bankruptcy).is_err());
        for &event_type in EventType::ALL {
            let parsed = parse_valuation("0", event_type);
            assert_eq!(parsed.is_ok(), event_type.may_be_zero(), "{event_type}: {parsed:?}");
        }
        for refused in [EventType::PrimaryRound, EventType::Ipo, EventType::TenderOffer] {
            let refusal = parse_valuation("0", refused).unwrap_err();
            assert!(refusal.contains("only a failure"), "{refusal}");
        }
    }

    #[test]
    fn hidden_characters_are_refused_with_their_place() {
        assert!(check_text(
            "note",
            "Series B, $1.2B (Reuters) \u{e9}t\u{e9} \u{65e5}\u{672c}",
            Joiners::Refused
        )
        .is_ok());
        for hidden in [
            '\0',
            '\r',
            '\n',
            '\t',
            '\u{7f}',
            '\u{85}',
            '\u{202e}',
            '\u{200b}',
            '\u{2066}',
            '\u{feff}',
            '\u{2028}',
            '\u{e0041}',
            '\u{ad}',
            '\u{180e}',
            '\u{fff9}',
            '\u{3164}',
            '\u{115f}',
            '\u{ffa0}',
        ] {
            let text = format!("ab{hidden}c");
            let refusal = check_text("note of event e1", &text, Joiners::InsideWords).unwrap_err();
            assert!(
                refusal.contains(&format!("U+{:04X} at character 3", u32::from(hidden))),
                "{refusal}"
            );
        }
    }
}
