//! The service's own endpoints, beside the flows: each answers a request whole, without the
//! origin, and is one line in the route table (`ROUTES` in `src/main.rs`).

pub mod admin;
pub mod consent;
pub mod discovery;
pub mod edge_id;
pub mod first_party;
pub mod health;
pub mod ids_sync;
pub mod script;
