//! The URL space: which operation a path names. Paths only; methods, keys and parameters are
//! the service's business.

/// Every operation the server answers, for routing, metrics and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    ListCompanies,
    ListSectors,
    GetCompany,
    GetMarkSeries,
    GetMarkEvents,
    GetResolution,
    GetBacktest,
    ListIndices,
    GetIndex,
    GetIndexConstituents,
    GetUsage,
    GetChanges,
    GetExport,
    GetSeriesExport,
    /// The publication log: its latest checkpoint, a consistency proof, a company's entries,
    /// the whole log.
    GetLogCheckpoint,
    GetLogConsistency,
    GetPublished,
    GetLogExport,
    SigningKeys,
    Scorecard,
    ScorecardTargets,
    OpenApi,
    /// The pages: `/` and `/scorecard` from the snapshot, the explorer and the API reference
    /// from the binary, and their assets.
    HomePage,
    ScorecardPage,
    ExplorePage,
    ComparePage,
    IndicesPage,
    DocsPage,
    Asset,
    /// `/llms.txt` and the docs as Markdown.
    Document,
    /// The Model Context Protocol endpoint (`--mcp`); answered by `mcp::hosted`, not here.
    Mcp,
    Healthz,
    Readyz,
    Metrics,
    /// No route matched.
    Unknown,
}

impl Operation {
    pub const ALL: [Operation; 35] = [
        Operation::ListCompanies,
        Operation::ListSectors,
        Operation::GetCompany,
        Operation::GetMarkSeries,
        Operation::GetMarkEvents,
        Operation::GetResolution,
        Operation::GetBacktest,
        Operation::ListIndices,
        Operation::GetIndex,
        Operation::GetIndexConstituents,
        Operation::GetUsage,
        Operation::GetChanges,
        Operation::GetExport,
        Operation::GetSeriesExport,
        Operation::GetLogCheckpoint,
        Operation::GetLogConsistency,
        Operation::GetPublished,
        Operation::GetLogExport,
        Operation::SigningKeys,
        Operation::Scorecard,
        Operation::ScorecardTargets,
        Operation::OpenApi,
        Operation::HomePage,
        Operation::ScorecardPage,
        Operation::ExplorePage,
        Operation::ComparePage,
        Operation::IndicesPage,
        Operation::DocsPage,
        Operation::Asset,
        Operation::Document,
        Operation::Mcp,
        Operation::Healthz,
        Operation::Readyz,
        Operation::Metrics,
        Operation::Unknown,
    ];

    /// The operationId of the OpenAPI document, or the path for the operational endpoints.
    pub fn name(self) -> &'static str {
        match self {
            Operation::ListCompanies => "listCompanies",
            Operation::ListSectors => "listSectors",
            Operation::GetCompany => "getCompany",
            Operation::GetMarkSeries => "getMarkSeries",
            Operation::GetMarkEvents => "getMarkEvents",
            Operation::GetResolution => "getResolution",
            Operation::GetBacktest => "getBacktest",
            Operation::ListIndices => "listIndices",
            Operation::GetIndex => "getIndex",
            Operation::GetIndexConstituents => "getIndexConstituents",
            Operation::GetUsage => "getUsage",
            Operation::GetChanges => "getChanges",
            Operation::GetExport => "getExport",
            Operation::GetSeriesExport => "getSeriesExport",
            Operation::GetLogCheckpoint => "getLogCheckpoint",
            Operation::GetLogConsistency => "getLogConsistency",
            Operation::GetPublished => "getPublished",
            Operation::GetLogExport => "getLogExport",
            Operation::SigningKeys => "getSigningKeys",
            Operation::Scorecard => "getScorecard",
            Operation::ScorecardTargets => "getScorecardTargets",
            Operation::OpenApi => "getOpenApi",
            Operation::HomePage => "homePage",
            Operation::ScorecardPage => "scorecardPage",
            Operation::ExplorePage => "explorePage",
            Operation::ComparePage => "comparePage",
            Operation::IndicesPage => "indicesPage",
            Operation::DocsPage => "docsPage",
            Operation::Asset => "asset",
            Operation::Document => "document",
            Operation::Mcp => "mcp",
            Operation::Healthz => "healthz",
            Operation::Readyz => "readyz",
            Operation::Metrics => "metrics",
            Operation::Unknown => "unknown",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// A matched route: the operation and, for company operations, the raw slug segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route<'a> {
    pub operation: Operation,
    pub slug: Option<&'a str>,
}

pub fn route(path: &str) -> Route<'_> {
    let plain = |operation| Route { operation, slug: None };
    match path {
        "/v1/companies" => return plain(Operation::ListCompanies),
        "/v1/sectors" => return plain(Operation::ListSectors),
        "/v1/indices" => return plain(Operation::ListIndices),
        "/v1/usage" => return plain(Operation::GetUsage),
        "/v1/changes" => return plain(Operation::GetChanges),
        "/v1/export" => return plain(Operation::GetExport),
        "/v1/export/series" => return plain(Operation::GetSeriesExport),
        "/v1/export/log" => return plain(Operation::GetLogExport),
        "/v1/log/checkpoint" => return plain(Operation::GetLogCheckpoint),
        "/v1/log/consistency" => return plain(Operation::GetLogConsistency),
        "/v1/signing-keys" => return plain(Operation::SigningKeys),
        "/v1/scorecard" => return plain(Operation::Scorecard),
        "/v1/scorecard/targets" => return plain(Operation::ScorecardTargets),
        "/v1/openapi.json" => return plain(Operation::OpenApi),
        "/healthz" => return plain(Operation::Healthz),
        "/readyz" => return plain(Operation::Readyz),
        "/metrics" => return plain(Operation::Metrics),
        "/" => return plain(Operation::HomePage),
        "/scorecard" => return plain(Operation::ScorecardPage),
        "/docs" => return plain(Operation::DocsPage),
        "/explore" => return plain(Operation::ExplorePage),
        "/compare" => return plain(Operation::ComparePage),
        "/indices" => return plain(Operation::IndicesPage),
        _ => {}
    }
    if let Some(slug) = path.strip_prefix("/explore/") {
        // The explorer reads the slug from the address itself (and says so when the API does not
        // know it); one segment, with or without a trailing slash.
        let slug = slug.strip_suffix('/').unwrap_or(slug);
        if !slug.is_empty() && !slug.contains('/') {
            return plain(Operation::ExplorePage);
        }
        return plain(Operation::Unknown);
    }
    if path == "/llms.txt"
        || matches!(
            path,
            "/README.md"
                | "/ARCHITECTURE.md"
                | "/CHANGELOG.md"
                | "/clients/python/README.md"
                | "/sample/SOURCE.md"
                | "/snapshots/README.md"
        )
        || path.strip_prefix("/docs/").is_some_and(|rest| !rest.is_empty())
    {
        return plain(Operation::Document);
    }
    if let Some(rest) = path.strip_prefix("/assets/") {
        return Route {
            operation: Operation::Asset,
            slug: Some(rest),
        };
    }
    if let Some(rest) = path.strip_prefix("/v1/indices/") {
        // `{id}` or `{id}/constituents`; the id travels in `slug`.
        let (id, operation) = match rest.split_once('/') {
            None => (rest, Operation::GetIndex),
            Some((id, "constituents")) => (id, Operation::GetIndexConstituents),
            Some(_) => return plain(Operation::Unknown),
        };
        if id.is_empty() {
            return plain(Operation::Unknown);
        }
        return Route {
            operation,
            slug: Some(id),
        };
    }
    let Some(rest) = path.strip_prefix("/v1/companies/") else {
        return plain(Operation::Unknown);
    };
    let (slug, tail) = rest.split_once('/').unwrap_or((rest, ""));
    let operation = match tail {
        "" if !rest.ends_with('/') => Operation::GetCompany,
        "marks" => Operation::GetMarkSeries,
        "published" => Operation::GetPublished,
        "events" => Operation::GetMarkEvents,
        "resolution" => Operation::GetResolution,
        "backtest" => Operation::GetBacktest,
        _ => Operation::Unknown,
    };
    if slug.is_empty() || operation == Operation::Unknown {
        return plain(Operation::Unknown);
    }
    Route {
        operation,
        slug: Some(slug),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_operations() {
        assert_eq!(route("/v1/companies").operation, Operation::ListCompanies);
        assert_eq!(route("/v1/export/series").operation, Operation::GetSeriesExport);
        let marks = route("/v1/companies/openai/marks");
        assert_eq!(
            (marks.operation, marks.slug),
            (Operation::GetMarkSeries, Some("openai"))
        );
        assert_eq!(route("/v1/companies/openai").slug, Some("openai"));
        assert_eq!(route("/").operation, Operation::HomePage);
        assert_eq!(route("/v1/indices").operation, Operation::ListIndices);
        let index = route("/v1/indices/fintech");
        assert_eq!((index.operation, index.slug), (Operation::GetIndex, Some("fintech")));
        let constituents = route("/v1/indices/all/constituents");
        assert_eq!(
            (constituents.operation, constituents.slug),
            (Operation::GetIndexConstituents, Some("all"))
        );
        assert_eq!(route("/explore/stripe").operation, Operation::ExplorePage);
        assert_eq!(route("/llms.txt").operation, Operation::Document);
        assert_eq!(route("/docs/api.md").operation, Operation::Document);
        assert_eq!(route("/docs").operation, Operation::DocsPage);
        let asset = route("/assets/abc/app.css");
        assert_eq!((asset.operation, asset.slug), (Operation::Asset, Some("abc/app.css")));
        for unknown in [
            "/v1/companies/",
            "/v1/companies//marks",
            "/v1/companies/a/b",
            "/v1/companies/a/",
            "/v2/x",
            "/explore/a/b",
            "/explore/",
            "/v1/indices/",
            "/v1/indices/all/x",
            "/v1/indices//constituents",
        ] {
            assert_eq!(route(unknown).operation, Operation::Unknown, "{unknown}");
        }
    }
}
