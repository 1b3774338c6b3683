//! Publisher features: what the service adds to the publisher's site beyond the proxy: the
//! edge ID ([`identity`]) and the first-party script ([`script`]).

pub mod identity;
pub mod script;
