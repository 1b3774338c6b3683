//! Publisher features: what the service adds to the publisher's site beyond the proxy: the
//! edge ID ([`identity`]), the first-party script ([`script`]) and the rules for injecting it
//! into pages ([`navigation`], [`csp`]).

pub mod csp;
pub mod identity;
pub mod navigation;
pub mod script;
