//! The publisher's features on top of the proxy: the first-party script's injection rules.

pub mod csp;
pub mod navigation;
