//! Asking partners of the ID graph for their ID of one reader (each bidder's `id_path`): every
//! ask sent at once through the bidder's own backend (signed when the bidder is), each cut off
//! at its `timeout_ms`, and each answer read by the core (`ids::read_ask_answer`). Which
//! partners are asked, and what is stored from the answers, is the caller's.

use std::time::Instant;

use trusted_server_core::ids::{ask_body, read_ask_answer};
use trusted_server_core::Settings;
use trusted_server_settings::Bidder;

use crate::kit::partner;
use crate::phases::bidders::{self, send_all, Collected};

/// Asks each of `partners` (bidders with an `id_path`) for its ID of the reader with
/// `edge_id`, and waits for every answer up to each partner's `timeout_ms`. For each partner
/// in order: its code, and the ID it gave (`None`: it has none), or why nothing can be stored.
pub fn ask<'b>(
    edge_id: &str,
    partners: &[&'b Bidder],
    settings: &Settings,
) -> Vec<(&'b str, Result<Option<String>, String>)> {
    let key = match partners.iter().any(|b| b.signed) {
        true => partner::key(settings),
        false => partner::Key::Disabled,
    };
    let mut asked = Vec::with_capacity(partners.len());
    let mut answers: Vec<(&str, Result<Option<String>, String>)> = Vec::new();
    let mut calls = Vec::new();
    for bidder in partners {
        let Some(path) = bidder.id_path.as_deref() else {
            continue;
        };
        let request = bidders::post(bidder, path, ask_body(edge_id));
        match bidders::call(request, bidder, &key, settings) {
            Ok(call) => {
                asked.push(answers.len());
                // Replaced by what is collected for it below.
                answers.push((&*bidder.code, Err("not collected".to_owned())));
                calls.push(call);
            }
            Err(why) => answers.push((&*bidder.code, Err(why))),
        }
    }
    let collected = send_all(calls, Instant::now()).collect();
    for (i, collected) in asked.into_iter().zip(collected) {
        answers[i].1 = match collected {
            Collected::Whole { status, body, .. } => read_ask_answer(status, &body),
            Collected::TooLarge { .. } => Err("answered too much".to_owned()),
            Collected::Unreadable { why, .. } | Collected::Failed { why, .. } => Err(why),
            Collected::Late { ms } => Err(format!("no answer in {ms} ms")),
        };
    }
    answers
}
