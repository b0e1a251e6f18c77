//! What every metered operation is given ([`Call`]) and the checks operations share: the scope a
//! caller's tier must have, and the coverage it may read. Below `operations` and `indices`,
//! which both answer calls.

use std::sync::Arc;

use marks_format::rules::tiers::{Scope, Tier};

use crate::api::query::{self, Params};
use crate::api::state::State;
use crate::keys::ring::Caller;
use crate::response::body::{DecodeHolder, DecodePermit};
use crate::response::problem::ApiError;
use crate::response::{decoder_place, Negotiation};
use crate::snapshot::LoadedSnapshot;

/// A metered operation's inputs.
#[derive(Debug)]
pub struct Call<'a> {
    pub state: &'a State,
    /// Shared, so a body made as it is sent can keep the snapshot it reads.
    pub loaded: &'a Arc<LoadedSnapshot>,
    pub caller: &'a Caller,
    pub query: Option<&'a str>,
    /// The `{slug}` of the path, still percent-encoded.
    pub slug: Option<&'a str>,
    pub negotiation: &'a Negotiation<'a>,
}

/// One of the decoders' places for a request that reads every company's series (a ranged series
/// export, an index's constituents of a past day), held by the caller's key within its share,
/// and outside the places kept for Enterprise unless it is an Enterprise key's; none for a HEAD,
/// which reads nothing.
pub fn decoder_place_for(call: &Call<'_>) -> Result<Option<DecodePermit>, ApiError> {
    if call.negotiation.head {
        return Ok(None);
    }
    let enterprise = call.caller.tier == Tier::Enterprise;
    let holder = DecodeHolder::key(&call.caller.key_id, enterprise);
    decoder_place(&call.state.budgets.decoders, &holder).map(Some)
}

/// The coverage of a series operation (80 unless 95 is asked for), and 95 only for a tier that
/// has it.
pub fn coverage(call: &Call<'_>, params: &Params<'_>) -> Result<u32, ApiError> {
    let coverage = query::coverage(params)?;
    if coverage == 95 {
        require(call.caller, Scope::Marks95)?;
    }
    Ok(coverage)
}

/// 403 `tier_forbidden`, naming the lowest tier with `scope`, unless the caller's tier has it.
pub fn require(caller: &Caller, scope: Scope) -> Result<(), ApiError> {
    if caller.tier.allows(scope) {
        return Ok(());
    }
    let needed = Tier::lowest_with(scope);
    let what = match scope {
        Scope::Marks95 => "coverage 95".to_string(),
        other => format!("the {} scope", other.as_str()),
    };
    Err(ApiError::TierForbidden(format!(
        "Your key's tier ({}) does not include {what}; it needs the {needed} tier or above.",
        caller.tier
    )))
}
