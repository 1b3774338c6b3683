//! The flows: the orders of things. Each reads as its phases in order, and is the one place
//! that composes them for its kind of request.

pub mod auction;
pub mod first_party_proxy;
pub mod partner_ids;
pub mod publisher_proxy;
pub mod refresh;
