//! Publisher features: what the service adds to the publisher's site beyond the proxy.

pub mod script;
