//! Access tiers: what each tier may call and its per-minute budget (SPEC 1, 4, 8; docs/design.md section 4).
//!
//! One table, read by the builder (to pre-render the usage bodies) and the server (to
//! authorise and meter requests).

use std::fmt;

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    Free,
    Research,
    Pro,
    Business,
    Enterprise,
}

/// A permission a tier grants (`UsageResponse.scopes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    CompaniesList,
    CompaniesRead,
    Marks80,
    Marks95,
    EventsRead,
    ResolutionRead,
    UsageRead,
    /// `GET /v1/changes`.
    ChangesRead,
    /// `GET /v1/export` and `/v1/export/series`.
    ExportRead,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::CompaniesList => "companies:list",
            Scope::CompaniesRead => "companies:read",
            Scope::Marks80 => "marks:80",
            Scope::Marks95 => "marks:95",
            Scope::EventsRead => "events:read",
            Scope::ResolutionRead => "resolution:read",
            Scope::UsageRead => "usage:read",
            Scope::ChangesRead => "changes:read",
            Scope::ExportRead => "export:read",
        }
    }
}

/// Default page size of listCompanies and its bounds (SPEC 4.1).
pub const PAGE_SIZE_DEFAULT: u32 = 50;
pub const PAGE_SIZE_MAX: u32 = 200;

impl Tier {
    pub const ALL: [Tier; 5] = [Tier::Free, Tier::Research, Tier::Pro, Tier::Business, Tier::Enterprise];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Free => "free",
            Tier::Research => "research",
            Tier::Pro => "pro",
            Tier::Business => "business",
            Tier::Enterprise => "enterprise",
        }
    }

    /// Accepts the lowercase names, and SPEC's capitalised spelling.
    pub fn parse(text: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str().eq_ignore_ascii_case(text))
    }

    pub fn rate_per_min(self) -> u32 {
        match self {
            Tier::Free => 10,
            Tier::Research => 60,
            Tier::Pro => 600,
            Tier::Business => 3000,
            Tier::Enterprise => 6000,
        }
    }

    pub fn scopes(self) -> &'static [Scope] {
        use Scope::*;
        match self {
            // SPEC 4: getUsage needs Research; a free key learns its budget from the
            // rate-limit headers of every answer.
            Tier::Free => &[CompaniesList, CompaniesRead],
            Tier::Research => &[CompaniesList, CompaniesRead, Marks80, UsageRead],
            Tier::Pro | Tier::Business => &[
                CompaniesList,
                CompaniesRead,
                Marks80,
                Marks95,
                EventsRead,
                UsageRead,
                ChangesRead,
            ],
            Tier::Enterprise => &[
                CompaniesList,
                CompaniesRead,
                Marks80,
                Marks95,
                EventsRead,
                ResolutionRead,
                UsageRead,
                ChangesRead,
                ExportRead,
            ],
        }
    }

    pub fn allows(self, scope: Scope) -> bool {
        self.scopes().contains(&scope)
    }

    /// The lowest tier that grants a scope, for "which tier is needed" messages.
    pub fn lowest_with(scope: Scope) -> Tier {
        Tier::ALL
            .into_iter()
            .find(|t| t.allows(scope))
            .unwrap_or(Tier::Enterprise)
    }

    /// Whether the tier sees only the free universe (top 10 by value).
    pub fn limited_universe(self) -> bool {
        self == Tier::Free
    }

    pub fn coverages(self) -> Vec<u32> {
        [(Scope::Marks80, 80), (Scope::Marks95, 95)]
            .into_iter()
            .filter(|(scope, _)| self.allows(*scope))
            .map(|(_, c)| c)
            .collect()
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Serialize)]
struct Limits {
    requests_per_minute: u32,
    page_size_default: u32,
    page_size_max: u32,
    coverages: Vec<u32>,
    universe: &'static str,
}

#[derive(Serialize)]
struct Usage<'a> {
    meta: &'a serde_json::value::RawValue,
    tier: &'static str,
    rate_per_min: u32,
    limits: Limits,
    scopes: Vec<&'static str>,
}

/// The UsageResponse body of a tier at a given budget (a key may carry its own budget).
pub fn usage_body(meta_json: &[u8], tier: Tier, rate_per_min: u32) -> Vec<u8> {
    let Ok(meta) = serde_json::from_slice::<&serde_json::value::RawValue>(meta_json) else {
        return Vec::new();
    };
    let usage = Usage {
        meta,
        tier: tier.as_str(),
        rate_per_min,
        limits: Limits {
            requests_per_minute: rate_per_min,
            page_size_default: PAGE_SIZE_DEFAULT,
            page_size_max: PAGE_SIZE_MAX,
            coverages: tier.coverages(),
            universe: if tier.limited_universe() { "top10" } else { "all" },
        },
        scopes: tier.scopes().iter().map(|s| s.as_str()).collect(),
    };
    serde_json::to_vec(&usage).unwrap_or_default()
}
