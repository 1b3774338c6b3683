//! The response phase: every header and the body's plan, decided before anything is sent.

use fastly::http::{HeaderName, HeaderValue};
use fastly::Response;
use trusted_server_core::compression;
use trusted_server_core::{
    origin_response_headers, BodyPlan, Injection, ResponseContext, Settings, UrlRule,
};

use crate::kit::reply;
use crate::phases::client::Client;
use trusted_server_core::publisher::identity::IdentityPlan;

/// A response whose headers are final, with the plan for its body.
pub struct Prepared {
    pub(crate) response: Response,
    pub(crate) plan: BodyPlan,
    pub(crate) rule: UrlRule,
    /// The first-party script's tag for the body, if it gets one: `None` from [`prepare`]; the
    /// flow sets it from the injection phase (`phases::inject::decide`), which reads the
    /// prepared headers.
    pub(crate) inject: Option<Injection>,
}

/// The response phase: plans the body and rewrites the headers accordingly.
pub fn prepare(
    mut response: Response,
    client: &Client,
    edge_id: &IdentityPlan,
    is_head: bool,
    settings: &Settings,
) -> Prepared {
    let status = response.get_status().as_u16();
    // What a GET would do with this body. HEAD sends no body but must describe the same
    // representation (no Content-Length, weak ETag) as the GET.
    let content_type = header_text(&response, "content-type");
    let content_encoding = header_text(&response, "content-encoding");
    let get_plan = BodyPlan::decide(
        status,
        content_type.as_deref(),
        content_encoding.as_deref(),
        settings.integrations.nextjs.enabled,
    );
    let plan = if is_head {
        BodyPlan::PassThrough(trusted_server_core::PassReason::NoFullBody)
    } else {
        get_plan
    };
    let p = &settings.publisher;
    let ctx = ResponseContext {
        rule: &client.rule,
        origin_host_name: &p.origin_host_name,
        cookie_domain: &p.cookie_domain,
        body_changes: get_plan.changes_body(),
        not_modified: status == 304,
        varies_by_navigation: crate::phases::inject::varies_by_navigation(
            status, &get_plan, settings,
        ),
    };
    let headers: Vec<(HeaderName, HeaderValue)> = response
        .get_headers()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let mut headers = origin_response_headers(headers, &ctx, &settings.response_headers);
    crate::kit::edge_cookie::add_cookie(&mut headers, status, edge_id, settings);
    let coding = content_encoding.as_deref();
    if compression::edge_compresses(settings.delivery.compression, &get_plan, coding) {
        compression::mark_for_edge_compression(&mut headers);
    }
    reply::replace_headers(&mut response, headers);
    response.set_version(client.version);
    Prepared {
        response,
        plan,
        inject: None,
        rule: client.rule.clone(),
    }
}

/// A response header as text, for planning: several lines are one comma-separated list (two
/// `Content-Encoding` lines are two codings, which the pipeline does not stack, so the body
/// passes through). `get_header_str` would panic on a value that is not UTF-8, and any origin
/// can send one: such a value is unknown. As a type that plans a pass-through, and as a coding
/// it must too, so it becomes a name no coding has rather than disappearing (absent means
/// identity). The first-party proxy plans partner bodies with it too.
pub(crate) fn header_text(response: &Response, name: &str) -> Option<String> {
    let lines: Vec<&str> = response
        .get_header_all(name)
        .map(|v| v.to_str().unwrap_or("(not UTF-8)"))
        .collect();
    (!lines.is_empty()).then(|| lines.join(", "))
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "tests read back the messages they built, all text"
)]
mod tests {
    use super::*;
    use crate::phases::client;
    use fastly::http::StatusCode;
    use fastly::Request;

    fn client() -> Client {
        client::observe(
            &Request::get("http://www.pub.test/").with_header("host", "www.pub.test"),
            &crate::kit::generated::SETTINGS,
        )
    }

    fn origin_response(content_type: &str) -> Response {
        let origin = &crate::kit::generated::SETTINGS.publisher.origin_host;
        Response::from_status(StatusCode::OK)
            .with_header("content-type", content_type)
            .with_header("content-length", "1234")
            .with_header("etag", "\"v1\"")
            .with_header("location", format!("https://{origin}/moved"))
    }

    #[test]
    fn rewritten_bodies_drop_content_length_and_keep_the_rest_consistent() {
        let prepared = prepare(
            origin_response("text/html; charset=utf-8"),
            &client(),
            &IdentityPlan::NONE,
            false,
            &crate::kit::generated::SETTINGS,
        );
        assert!(prepared.plan.changes_body());
        let r = &prepared.response;
        assert_eq!(r.get_header("content-length"), None);
        assert_eq!(r.get_header_str("etag"), Some("W/\"v1\""));
        assert_eq!(
            r.get_header_str("location"),
            Some("http://www.pub.test/moved")
        );
        assert!(r.get_header("x-ts-version").is_some());
    }

    #[test]
    fn untouched_bodies_keep_content_length() {
        let prepared = prepare(
            origin_response("image/png"),
            &client(),
            &IdentityPlan::NONE,
            false,
            &crate::kit::generated::SETTINGS,
        );
        assert!(!prepared.plan.changes_body());
        assert_eq!(
            prepared.response.get_header_str("content-length"),
            Some("1234")
        );
        assert_eq!(prepared.response.get_header_str("etag"), Some("\"v1\""));
    }

    #[test]
    fn stacked_or_unreadable_codings_and_types_pass_through() {
        let plan = |response: Response| {
            prepare(
                response,
                &client(),
                &IdentityPlan::NONE,
                false,
                &crate::kit::generated::SETTINGS,
            )
            .plan
        };
        // Two lines are two codings (br over gzip): not something the pipeline undoes.
        let mut stacked = origin_response("text/html");
        stacked.append_header("content-encoding", "gzip");
        stacked.append_header("content-encoding", "br");
        assert!(!plan(stacked).changes_body());
        let mut twice = origin_response("text/html");
        twice.append_header("content-encoding", "gzip");
        twice.append_header("content-encoding", "gzip");
        assert!(!plan(twice).changes_body());
        // Values that are not UTF-8 are unknown, never unwrapped.
        let mut bad_type = origin_response("text/html");
        bad_type.set_header(
            "content-type",
            HeaderValue::from_bytes(b"text/html; charset=\xe9t\xe9").unwrap(),
        );
        assert!(!plan(bad_type).changes_body());
        let mut bad_coding = origin_response("text/html");
        bad_coding.set_header(
            "content-encoding",
            HeaderValue::from_bytes(b"gzip\xff").unwrap(),
        );
        let prepared = prepare(
            bad_coding,
            &client(),
            &IdentityPlan::NONE,
            false,
            &crate::kit::generated::SETTINGS,
        );
        assert!(!prepared.plan.changes_body());
        assert_eq!(
            prepared
                .response
                .get_header("content-encoding")
                .unwrap()
                .as_bytes(),
            b"gzip\xff"
        );
        let mut single = origin_response("text/html");
        single.set_header("content-encoding", "gzip");
        assert!(plan(single).changes_body());
    }

    #[test]
    fn edge_compression_marks_identity_text_only() {
        let mut edge = crate::kit::generated::SETTINGS.clone();
        edge.delivery.compression = trusted_server_settings::Compression::Edge;
        let hint = |response: Response, is_head: bool, settings: &Settings| {
            let prepared = prepare(response, &client(), &IdentityPlan::NONE, is_head, settings);
            let vary: Vec<String> = prepared
                .response
                .get_header_all_str("vary")
                .iter()
                .map(|v| v.to_ascii_lowercase())
                .collect();
            let hint = prepared.response.get_header_str("x-compress-hint");
            (hint.map(str::to_owned), vary.join(","))
        };
        let html = || origin_response("text/html");
        let (on, vary) = hint(html(), false, &edge);
        assert_eq!(on.as_deref(), Some("on"));
        assert!(vary.contains("accept-encoding"), "{vary}");
        assert_eq!(
            hint(html(), true, &edge).0.as_deref(),
            Some("on"),
            "HEAD as GET"
        );
        let (off, vary) = hint(html(), false, &crate::kit::generated::SETTINGS);
        assert_eq!(off, None);
        assert!(!vary.contains("accept-encoding"), "{vary}");
        assert_eq!(hint(origin_response("image/png"), false, &edge).0, None);
        let gzip = origin_response("text/html").with_header("content-encoding", "gzip");
        assert_eq!(hint(gzip, false, &edge).0, None, "re-encoded in wasm");
    }

    #[test]
    fn head_describes_the_representation_get_would_send() {
        let prepared = prepare(
            origin_response("text/html"),
            &client(),
            &IdentityPlan::NONE,
            true,
            &crate::kit::generated::SETTINGS,
        );
        assert!(!prepared.plan.changes_body(), "HEAD has no body to rewrite");
        assert_eq!(prepared.response.get_header("content-length"), None);
        assert_eq!(prepared.response.get_header_str("etag"), Some("W/\"v1\""));
    }
}
