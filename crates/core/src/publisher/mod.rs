//! Publisher features that sit beside the proxy: the edge ID ([`identity`]).

pub mod identity;
