//! Who is asking: the caller behind `X-API-Key`, and the throttle on failed authentication.
//!
//! The throttle's rule: only failing attempts are throttled. Each client address (an IPv6
//! address by its /64, the block one subscriber is given) may fail authentication
//! `auth_failures_per_min` times a minute; past that, its failing attempts get 429. A request
//! that carries a valid key is never refused because of other requests' failures: it is
//! answered, or limited by its own key's budget. Clients behind one NAT or proxy share an
//! address, and one misconfigured script must not lock out the rest of the company. The table
//! of addresses is capped (`max_throttled_addresses`, least recently seen dropped first), so a
//! flood of addresses cannot grow memory without bound.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use http::header::HeaderValue;
use http::HeaderMap;

use crate::api::state::State;
use crate::keys::ring::{Caller, RememberedKey};
use crate::response::problem::ApiError;

/// The key a request presented: none, one, or several (refused rather than guessing which one
/// was meant).
#[derive(Clone, Copy, Debug, Default)]
pub enum PresentedKey<'r> {
    #[default]
    Missing,
    One(&'r HeaderValue),
    Repeated,
}

/// The caller behind the presented key, or why there is none (401). The request path then
/// spends a unit of the failing address's budget (`service`), which may turn the 401 into 429.
pub fn authenticate(
    state: &State,
    presented: PresentedKey<'_>,
    remembered: &mut RememberedKey,
) -> Result<Arc<Caller>, ApiError> {
    match presented {
        PresentedKey::Missing => Err(ApiError::MissingApiKey),
        PresentedKey::One(value) => value
            .to_str()
            .ok()
            .and_then(|key| {
                // A keep-alive connection's key, accepted by the keys in force, needs no ring.
                remembered
                    .caller_for(key, state.keys.generation())
                    .or_else(|| state.keys.ring().authenticate_remembering(key, remembered))
            })
            .ok_or(ApiError::InvalidApiKey),
        PresentedKey::Repeated => Err(ApiError::InvalidApiKey),
    }
}

/// The client's address: the TCP peer, or behind a proxy the last address in the header that
/// proxy appends (`--client-ip-header`); a client can put anything in that header itself, but
/// not after what the proxy appends.
pub fn client_address(state: &State, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
    let Some(name) = &state.access.client_ip_header else {
        return peer;
    };
    headers
        .get_all(name)
        .iter()
        .next_back()
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.rsplit(',').next())
        .and_then(|last| last.trim().parse().ok())
        .unwrap_or(peer)
}

/// The address failed authentications are counted against: an IPv4 address as it is (an
/// IPv4-mapped IPv6 address as the IPv4 address it maps), an IPv6 address by its /64, since one
/// subscriber gets a whole /64 and could otherwise rotate through it.
pub fn throttle_group(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_addresses_group_by_their_64_and_mapped_ipv4_by_its_address() {
        let group = |text: &str| throttle_group(text.parse().unwrap()).to_string();
        assert_eq!(group("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), "2001:db8:1:2::");
        assert_eq!(group("2001:db8:1:2::1"), group("2001:db8:1:2:ffff::9"));
        assert_ne!(group("2001:db8:1:2::1"), group("2001:db8:1:3::1"));
        assert_eq!(group("::ffff:198.51.100.7"), "198.51.100.7");
        assert_eq!(group("198.51.100.7"), "198.51.100.7");
    }
}
