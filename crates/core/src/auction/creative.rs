//! A winning bid made first-party: its markup's URLs and its beacons become signed
//! first-party URLs, so the creative and the pixels the browser fires load from the
//! publisher's host (through `/first-party/proxy` and `/first-party/click`) and no request
//! leaves for a partner's domain that the signer allows.
//!
//! The price macro is filled in first (`${AUCTION_PRICE}`): a signed URL cannot be changed
//! afterwards without breaking its signature. Banner markup goes through the first-party
//! proxy's own creative stage (`first_party::creative`), the same rules and limits; `burl`
//! and `nurl` are signed as URLs the browser loads. A URL the signer refuses (a host not in
//! `first_party.allowed_domains`) stays as written. Native markup (JSON) keeps its URLs: what
//! renders it is the page's own native template.

use std::rc::Rc;

use lol_html::AsciiCompatibleEncoding;

use super::bids::{with_auction_price, Bid, MediaType};
use crate::content::Codec;
use crate::first_party::creative::{pipeline, Creative, Placement, Signer, UrlUse};
use trusted_server_settings::Scheme;

/// `bid` with its price filled in and its URLs first-party by `signer`, for a page of
/// `page_scheme` (the auction request's: Prebid.js writes the markup into a frame of that
/// page, so a scheme-relative URL takes it).
pub fn first_party(bid: &mut Bid, signer: &Rc<Signer>, page_scheme: Scheme) {
    let price = bid.price;
    if let Some(adm) = bid.adm.take() {
        let priced = with_auction_price(&adm, price);
        bid.adm = Some(match bid.media {
            MediaType::Banner => html(&priced, signer, page_scheme),
            _ => priced,
        });
    }
    for url in [&mut bid.burl, &mut bid.nurl] {
        if let Some(written) = url.take() {
            let priced = with_auction_price(&written, price);
            *url = Some(signer(&priced, UrlUse::Load).unwrap_or(priced));
        }
    }
}

/// `markup` through the creative stage; on the stage's failure (which it reports rather than
/// panics), the markup as it was.
fn html(markup: &str, signer: &Rc<Signer>, page_scheme: Scheme) -> String {
    let shared = Rc::clone(signer);
    let sign: Signer = Box::new(move |url, use_| shared(url, use_));
    let html = Creative::Html(AsciiCompatibleEncoding::utf_8());
    let placement = Placement {
        address: None,
        page_scheme,
    };
    let mut rewriting = pipeline(Codec::Identity, html, sign, placement, Vec::new());
    let done = rewriting
        .push(markup.as_bytes())
        .and_then(|()| rewriting.finish());
    match done.map(|(out, _)| String::from_utf8(out)) {
        Ok(Ok(text)) => text,
        _ => markup.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> Rc<Signer> {
        Rc::new(Box::new(|url: &str, use_: UrlUse| {
            let host = url.split('/').nth(2)?;
            (host.ends_with("partner.example")).then(|| {
                let path = match use_ {
                    UrlUse::Load => "/first-party/proxy",
                    UrlUse::Follow => "/first-party/click",
                };
                format!("{path}?u={url}")
            })
        }))
    }

    fn bid(media: MediaType, adm: &str) -> Bid {
        Bid {
            id: "b".into(),
            imp_id: "i".into(),
            price: 1.25,
            media,
            adm: Some(adm.into()),
            nurl: None,
            burl: Some("https://ads.partner.example/win?p=${AUCTION_PRICE}".into()),
            size: (300, 250),
            crid: None,
            adomain: Vec::new(),
            deal_id: None,
        }
    }

    #[test]
    fn banner_urls_and_beacons_become_first_party_after_the_price_is_in() {
        let mut b = bid(
            MediaType::Banner,
            r#"<a href="https://ads.partner.example/c"><img src="https://cdn.partner.example/a.png?p=${AUCTION_PRICE}"></a><img src="https://elsewhere.example/x.png">"#,
        );
        first_party(&mut b, &signer(), Scheme::Https);
        let adm = b.adm.unwrap();
        assert!(
            adm.contains(r#"href="/first-party/click?u=https://ads.partner.example/c""#),
            "{adm}"
        );
        assert!(
            adm.contains(r#"src="/first-party/proxy?u=https://cdn.partner.example/a.png?p=1.25""#),
            "{adm}"
        );
        assert!(adm.contains("https://elsewhere.example/x.png"), "{adm}");
        assert_eq!(
            b.burl.as_deref(),
            Some("/first-party/proxy?u=https://ads.partner.example/win?p=1.25")
        );
    }

    #[test]
    fn native_markup_keeps_its_urls_but_gets_its_price() {
        let mut b = bid(
            MediaType::Native,
            r#"{"native":{"link":{"url":"https://ads.partner.example/c?p=${AUCTION_PRICE}"}}}"#,
        );
        first_party(&mut b, &signer(), Scheme::Https);
        assert_eq!(
            b.adm.as_deref(),
            Some(r#"{"native":{"link":{"url":"https://ads.partner.example/c?p=1.25"}}}"#)
        );
    }
}
