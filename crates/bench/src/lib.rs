//! Benchmarks for Trusted Server Edge.
//!
//! [`throughput`] is platform-free and is compiled both natively and for `wasm32-wasip1` (run
//! under `viceroy run`), so the two can be compared on identical inputs. The side-by-side
//! latency, streamed-fraction and load run lives in the native `bench` binary. [`flight`] is
//! an independent reader of Next.js Flight payloads the checks on the RSC pages use.
//! [`compression`] measures the guest CPU per page of the two `delivery.compression` choices,
//! [`consent`] what reading the consent cookies and deciding costs per request.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod compression;
pub mod consent;
pub mod flight;
pub mod throughput;
