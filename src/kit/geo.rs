//! Fastly's geolocation of an address, looked up at most once per address per request: the
//! consent phase reads the reader's location for every request, and an auction reads it
//! again for the bidders (`device.geo`). The lookup is a host call that parses JSON (20 to
//! 50 µs), and each request runs in an instance of its own, so a value kept here for the
//! instance's life is this request's and no other reader's.

use std::cell::RefCell;
use std::net::IpAddr;

use fastly::geo::Geo;

thread_local! {
    /// The last address looked up and what the platform said.
    static LAST: RefCell<Option<(IpAddr, Option<Geo>)>> = const { RefCell::new(None) };
}

/// The geolocation of `ip` (`None`: the platform cannot place it), looked up the first time
/// it is asked for in this request.
pub fn of(ip: IpAddr) -> Option<Geo> {
    LAST.with(|last| {
        if let Some((seen, geo)) = last.borrow().as_ref() {
            if *seen == ip {
                return geo.clone();
            }
        }
        let geo = fastly::geo::geo_lookup(ip);
        *last.borrow_mut() = Some((ip, geo.clone()));
        geo
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under Viceroy, fastly.toml places 127.0.0.10 in Germany and 127.0.0.11 in California:
    /// a second address is looked up, not answered from the first.
    #[test]
    fn each_address_gets_its_own_place() {
        let germany: IpAddr = "127.0.0.10".parse().unwrap();
        let california: IpAddr = "127.0.0.11".parse().unwrap();
        let country = |ip| of(ip).map(|g| g.country_code().to_owned());
        assert_eq!(country(germany).as_deref(), Some("DE"));
        assert_eq!(country(germany).as_deref(), Some("DE"));
        assert_eq!(country(california).as_deref(), Some("US"));
        assert_eq!(country(germany).as_deref(), Some("DE"));
    }
}
