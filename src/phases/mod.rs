//! The phases: one platform job each. A phase may use another's types (a [`client::Client`],
//! a [`cache::Store`]) and small shared rules, but never calls another phase's entry point:
//! the order of things is the flows' (`crate::flows`). No phase imports a flow or an endpoint.

pub mod auction;
pub mod bidders;
pub mod body;
pub mod cache;
pub mod client;
pub mod consent;
pub mod hints;
pub mod id_asks;
pub mod identity;
pub mod inject;
pub mod origin;
pub mod partner_ids;
pub mod response;
