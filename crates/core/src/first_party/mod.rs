//! The first-party proxy: creatives, pixels and clicks served from the publisher's own host.
pub mod creative;
