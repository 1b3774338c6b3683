//! A bidder's answer (`crates/core/src/auction/bids.rs`) on any bytes: it never panics, and
//! every bid it keeps is for an impression the bidder was asked for, priced above 0 and at
//! least at that impression's floor, in a medium the impression offers, with a creative.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trusted_server_core::auction::{read_answer, Imp, Media};

fuzz_target!(|data: &[u8]| {
    let imps = [
        Imp {
            id: "banner-1".into(),
            media: Media {
                banner: true,
                ..Media::default()
            },
            bidfloor: 0.5,
            bidfloorcur: None,
            bidders: Vec::new(),
        },
        Imp {
            id: "n".into(),
            media: Media {
                native: true,
                video: true,
                ..Media::default()
            },
            bidfloor: 0.0,
            bidfloorcur: Some("USD".into()),
            bidders: Vec::new(),
        },
    ];
    let Ok(answer) = read_answer(200, data, &imps, "USD") else {
        return;
    };
    for bid in &answer.bids {
        let imp = imps.iter().find(|imp| imp.id == bid.imp_id).expect("asked");
        assert!(bid.price.is_finite() && bid.price > 0.0 && bid.price >= imp.bidfloor);
        assert!(bid.adm.is_some() || bid.nurl.is_some());
        let offered = match bid.media.mtype() {
            1 => imp.media.banner,
            2 => imp.media.video,
            3 => imp.media.audio,
            _ => imp.media.native,
        };
        assert!(offered);
    }
});
