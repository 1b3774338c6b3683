//! The partner-ID graph's work once a response and its access line have left: a withdrawal
//! erases the reader's entries; a page view of a reader with an edge ID records their consent
//! and, for a returning reader (an edge ID their cookie brought: a new one no partner can know
//! yet), asks each partner with an ID endpoint that is due for its ID and stores the answer.
//! Nothing here can delay the reader's page: it has been sent whole before this runs.

use trusted_server_core::consent::Decision;
use trusted_server_core::Settings;

use crate::phases::{id_asks, partner_ids};

/// A page view the graph hears of: a navigation of a reader whose edge ID the response
/// carried (their consent lets the edge keep one).
pub struct PageView {
    /// The reader's edge ID.
    pub edge_id: String,
    /// Whether it came from the reader's cookie (else it was made for this response).
    pub returning: bool,
}

/// The graph's work after the response: `withdrawn` are the edge IDs of a withdrawing reader's
/// cookies (erased), `page_view` the page view the response was, if any.
pub fn after_response(
    withdrawn: &[String],
    page_view: Option<PageView>,
    decision: &Decision,
    settings: &Settings,
) {
    partner_ids::erase(withdrawn, settings);
    let Some(PageView { edge_id, returning }) = page_view else {
        return;
    };
    let due = partner_ids::note_reader(&edge_id, returning, decision, settings);
    if due.is_empty() {
        return;
    }
    let answers = id_asks::ask(&edge_id, &due, settings);
    let mut given = Vec::new();
    for (code, answer) in answers {
        match answer {
            Ok(Some(id)) => given.push((code, id)),
            Ok(None) => log::debug!("partner IDs: {code} has no ID for a reader"),
            Err(why) => log::warn!("partner IDs: asking {code} for an ID: {why}"),
        }
    }
    for (code, stored) in partner_ids::store_asked(&edge_id, &given, settings) {
        match stored {
            true => log::debug!("partner IDs: {code}'s ID stored from its ID endpoint"),
            false => log::info!("partner IDs: {code}'s ID refused (the reader's consent)"),
        }
    }
}
