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

use marks_format::day::Day;
use marks_format::names::{is_valid_slug, MAX_NAME_BYTES};

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
    /// What kind of report an event is. Listings and bankruptcies are outcomes, everything
    /// else an observation.
    EventType {
        PrimaryRound = "primary_round",
        TenderOffer = "tender_offer",
        SecondarySale = "secondary_sale",
        DownRound = "down_round",
        Ipo = "ipo",
        DirectListing = "direct_listing",
        Acquisition = "acquisition",
        Bankruptcy = "bankruptcy",
    }
);

impl EventType {
    /// Listings end a company's private life: they are held out as validations, never inputs.
    pub fn is_listing(self) -> bool {
        matches!(self, EventType::Ipo | EventType::DirectListing)
    }

    /// Terminal events end a company's series: listings (the day before) and bankruptcies (on
    /// their day, at their value). They are outcomes to score, never inputs to a mark.
    pub fn is_terminal(self) -> bool {
        self.is_listing() || self == EventType::Bankruptcy
    }
}

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
}

#[derive(Clone, Debug)]
pub struct Event {
    pub event_id: String,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub valuation_usd: u64,
    pub source_url: String,
    pub note: String,
    /// Line in events.csv, for messages about this event.
    pub line: u64,
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
    /// In date order; events of one day keep their order in events.csv.
    pub events: Vec<Event>,
    pub line: u64,
}

impl Company {
    /// The valuation observations: every event that is not an outcome (listing, bankruptcy).
    pub fn observations(&self) -> impl Iterator<Item = &Event> {
        self.events.iter().filter(|e| !e.event_type.is_terminal())
    }

    pub fn listing(&self) -> Option<&Event> {
        self.events.iter().find(|e| e.event_type.is_listing())
    }

    pub fn bankruptcy(&self) -> Option<&Event> {
        self.events.iter().find(|e| e.event_type == EventType::Bankruptcy)
    }

    /// The event that ends the company's private series, if any: its listing or bankruptcy
    /// (the dataset checks allow at most one of them).
    pub fn terminal(&self) -> Option<&Event> {
        self.events.iter().find(|e| e.event_type.is_terminal())
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
    if let Some(key) = &raw.quickstart_key {
        let text = key.get_ref();
        if text.is_empty() || text.len() > 64 || !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(at(
                key,
                format!("quickstart_key {text:?} is not a key: 1 to 64 ASCII letters, digits or '_'"),
            ));
        }
    }
    Ok(DatasetInfo {
        dataset_version,
        as_of,
        data_mode,
        provenance,
        disclaimer: raw.disclaimer.into_inner(),
        quickstart_key: raw.quickstart_key.map(toml::Spanned::into_inner),
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
    let table = CsvTable::open(path, &["slug", "name", "sector", "status"], &["aliases"])?;
    let mut companies = Vec::new();
    let mut seen: HashMap<String, u64> = HashMap::new();
    table.for_each_row(|line, fields| {
        let [slug, name, sector, status, aliases] = fields else {
            return Err("wrong number of fields".into());
        };
        if !is_valid_slug(slug) {
            return Err(format!(
                "slug {slug:?} must be 1-64 characters of a-z, 0-9 and '-', starting with a letter or digit"
            ));
        }
        if let Some(first) = seen.insert(slug.to_string(), line) {
            return Err(format!("duplicate slug {slug:?} (first on line {first})"));
        }
        if name.trim().is_empty() {
            return Err(format!("company {slug:?} has an empty name"));
        }
        if name.trim().len() > MAX_NAME_BYTES {
            return Err(format!(
                "company {slug:?} has a name of {} bytes; names are at most {MAX_NAME_BYTES} bytes of UTF-8",
                name.trim().len()
            ));
        }
        let sector = Sector::parse(sector)
            .ok_or_else(|| format!("unknown sector {sector:?} (expected one of {})", Sector::expected()))?;
        let status = Status::parse(status)
            .ok_or_else(|| format!("unknown status {status:?} (expected one of {})", Status::expected()))?;
        let aliases: Vec<String> = aliases
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        if let Some(long) = aliases.iter().find(|a| a.len() > MAX_NAME_BYTES) {
            return Err(format!(
                "company {slug:?} has an alias of {} bytes; aliases are at most {MAX_NAME_BYTES} bytes of UTF-8",
                long.len()
            ));
        }
        companies.push(Company {
            slug: slug.to_string(),
            name: name.trim().to_string(),
            aliases,
            sector,
            status,
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
        &[],
    )?;
    let mut seen: HashMap<String, u64> = HashMap::new();
    table.for_each_row(|line, fields| {
        let [event_id, slug, event_type, occurred_on, valuation, source_url, note] = fields else {
            return Err("wrong number of fields".into());
        };
        if !is_valid_event_id(event_id) {
            return Err(format!(
                "event_id {event_id:?} must be 1-64 characters of A-Z, a-z, 0-9, '-', '_', '.'"
            ));
        }
        if let Some(first) = seen.insert(event_id.to_string(), line) {
            return Err(format!("duplicate event_id {event_id:?} (first on line {first})"));
        }
        let company = companies
            .binary_search_by(|c| c.slug.as_str().cmp(slug))
            .map_err(|_| format!("unknown slug {slug:?}: it is not in companies.csv"))?;
        let event_type = EventType::parse(event_type).ok_or_else(|| {
            format!(
                "unknown event_type {event_type:?} (expected one of {})",
                EventType::expected()
            )
        })?;
        let occurred_on =
            Day::parse(occurred_on).ok_or_else(|| format!("occurred_on {occurred_on:?} is not a date YYYY-MM-DD"))?;
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
        let is_http = source_url.starts_with("https://") || source_url.starts_with("http://");
        if !(source_url.is_empty() || is_http) {
            return Err(format!("source_url {source_url:?} is not an http(s) address"));
        }
        companies[company].events.push(Event {
            event_id: event_id.to_string(),
            event_type,
            occurred_on,
            valuation_usd,
            source_url: source_url.to_string(),
            note: note.to_string(),
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

/// A whole, positive number of dollars; 0 only for a bankruptcy, where holders wrote the equity
/// off (docs/design.md section 2).
fn parse_valuation(text: &str, event_type: EventType) -> Result<u64, String> {
    let digits = text.strip_prefix('+').unwrap_or(text);
    if let Some(rest) = text.strip_prefix('-') {
        if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(format!("valuation_usd {text} is not positive"));
        }
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("valuation_usd {text:?} is not a whole number of US dollars"));
    }
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("valuation_usd {text} is above the largest supported value {MAX_VALUATION_USD}"))?;
    if value == 0 && event_type != EventType::Bankruptcy {
        return Err(format!(
            "valuation_usd 0 is not positive (only a bankruptcy may carry 0; this is a {event_type})"
        ));
    }
    if value > MAX_VALUATION_USD {
        return Err(format!(
            "valuation_usd {text} is above the largest supported value {MAX_VALUATION_USD}"
        ));
    }
    Ok(value)
}

/// The checks that need a company's whole history: its status agrees with its events, it has
/// something to mark, and nothing is reported after it listed.
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
        let Some(first) = company.events.first() else {
            return Err(company_error(
                company,
                format!("company {slug:?} has no events in events.csv"),
            ));
        };
        let listings: Vec<&Event> = company.events.iter().filter(|e| e.event_type.is_listing()).collect();
        if let [_, second, ..] = listings.as_slice() {
            return Err(event_error(
                second,
                format!(
                    "second listing event for {slug:?} (the first is on line {})",
                    listings[0].line
                ),
            ));
        }
        match (company.status, listings.first()) {
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
                    format!("status is \"ipo_completed\" but {slug:?} has no ipo or direct_listing event"),
                ))
            }
            _ => {}
        }
        let bankruptcies: Vec<&Event> = company
            .events
            .iter()
            .filter(|e| e.event_type == EventType::Bankruptcy)
            .collect();
        if let [_, second, ..] = bankruptcies.as_slice() {
            return Err(event_error(
                second,
                format!(
                    "second bankruptcy event for {slug:?} (the first is on line {}); a bankruptcy ends the series",
                    bankruptcies[0].line
                ),
            ));
        }
        if let Some(bankruptcy) = bankruptcies.first() {
            if first.event_type.is_terminal() || first.occurred_on >= bankruptcy.occurred_on {
                return Err(event_error(
                    bankruptcy,
                    format!("{slug:?} needs a valuation event before the day of its bankruptcy to be marked"),
                ));
            }
            if let Some(late) = company
                .events
                .iter()
                .find(|e| e.line != bankruptcy.line && e.occurred_on >= bankruptcy.occurred_on)
            {
                return Err(event_error(
                    late,
                    format!(
                        "event {} on {} is on or after {slug:?}'s bankruptcy on {} (line {}): a bankruptcy ends the series",
                        late.event_id, late.occurred_on, bankruptcy.occurred_on, bankruptcy.line
                    ),
                ));
            }
        }
        if let Some(listing) = listings.first() {
            if first.event_type.is_listing() || first.occurred_on >= listing.occurred_on {
                return Err(event_error(
                    listing,
                    format!("{slug:?} needs a valuation event before the day of its listing to be marked"),
                ));
            }
            if let Some(late) = company
                .events
                .iter()
                .find(|e| !e.event_type.is_listing() && e.occurred_on > listing.occurred_on)
            {
                return Err(event_error(
                    late,
                    format!(
                        "event {} on {} is after {slug:?} listed on {} (line {}): a listed company has no private mark",
                        late.event_id, late.occurred_on, listing.occurred_on, listing.line
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
    }

    #[test]
    fn only_a_bankruptcy_may_carry_zero() {
        assert_eq!(parse_valuation("0", EventType::Bankruptcy), Ok(0));
        assert_eq!(parse_valuation("5000000", EventType::Bankruptcy), Ok(5_000_000));
        assert!(parse_valuation("-1", EventType::Bankruptcy).is_err());
        for event_type in EventType::ALL.iter().filter(|t| **t != EventType::Bankruptcy) {
            let refusal = parse_valuation("0", *event_type).unwrap_err();
            assert!(refusal.contains("only a bankruptcy"), "{refusal}");
        }
    }
}
