//! The RFC's own Ed25519 example, and properties of signing and verifying.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use proptest::prelude::*;

use super::*;

/// RFC 9421 Appendix B.1.4, `test-key-ed25519`: the PKCS #8 private key and the SPKI public
/// key, base64 bodies of the published PEM blocks.
const B14_PRIVATE_PEM: &str = "MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF";
const B14_PUBLIC_PEM: &str = "MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=";

/// RFC 9421 Appendix B.2.6: the signature base, as published (lines joined by `\n`).
const B26_BASE: &str = concat!(
    "\"date\": Tue, 20 Apr 2021 02:07:55 GMT\n",
    "\"@method\": POST\n",
    "\"@path\": /foo\n",
    "\"@authority\": example.com\n",
    "\"content-type\": application/json\n",
    "\"content-length\": 18\n",
    "\"@signature-params\": (\"date\" \"@method\" \"@path\" \"@authority\" \"content-type\" ",
    "\"content-length\");created=1618884473;keyid=\"test-key-ed25519\""
);
const B26_SIGNATURE_INPUT: &str = concat!(
    "sig-b26=(\"date\" \"@method\" \"@path\" \"@authority\" \"content-type\" ",
    "\"content-length\");created=1618884473;keyid=\"test-key-ed25519\""
);
const B26_SIGNATURE: &str = concat!(
    "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpB",
    "KRCw==:"
);

/// The RFC's `test-request` (Appendix B.2): `POST /foo?param=Value&Pet=dog` to
/// `example.com` with these fields.
const TEST_REQUEST_FIELDS: [(&str, &str); 5] = [
    ("Host", "example.com"),
    ("Date", "Tue, 20 Apr 2021 02:07:55 GMT"),
    ("Content-Type", "application/json"),
    (
        "Content-Digest",
        "sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:",
    ),
    ("Content-Length", "18"),
];

fn test_request() -> RequestParts<'static> {
    RequestParts {
        method: "POST",
        scheme: "https",
        authority: "example.com",
        path: "/foo",
        query: Some("param=Value&Pet=dog"),
        fields: &TEST_REQUEST_FIELDS,
    }
}

/// The seed inside the PKCS #8 structure (RFC 8410: a fixed 16-byte prefix, then the 32
/// bytes), and the key inside the SPKI one (a 12-byte prefix).
fn rfc_key() -> (Keypair, [u8; 32]) {
    let private = STANDARD.decode(B14_PRIVATE_PEM).unwrap();
    let (prefix, seed) = private.split_at(16);
    assert_eq!(
        prefix,
        b"\x30\x2e\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20"
    );
    let public = STANDARD.decode(B14_PUBLIC_PEM).unwrap();
    let (prefix, point) = public.split_at(12);
    assert_eq!(prefix, b"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00");
    let key = Keypair::from_seed("test-key-ed25519", seed.try_into().unwrap());
    (key, point.try_into().unwrap())
}

#[test]
fn rfc_9421_b26_signature_byte_for_byte() {
    let (key, published_public) = rfc_key();
    assert_eq!(key.public().to_bytes(), published_public);
    let signature = key.sign(B26_BASE.as_bytes());
    let published = parse_signature(B26_SIGNATURE, "sig-b26").unwrap();
    assert_eq!(signature.to_vec(), published);
    assert_eq!(serialize_signature("sig-b26", &signature), B26_SIGNATURE);
}

#[test]
fn rfc_9421_b26_base_from_the_test_request() {
    let params = SignatureParams::parse_member(B26_SIGNATURE_INPUT, "sig-b26").unwrap();
    assert_eq!(signature_base(&test_request(), &params).unwrap(), B26_BASE);
    // And the published signature verifies through the whole reading path.
    let (key, _) = rfc_key();
    let policy = Policy {
        required: &[Component::Method, Component::Authority, Component::Path],
        required_when_present: &[],
        label: "sig-b26",
        freshness: Some((1_618_884_473 + 60, 300)),
    };
    let verified = verify_request(
        &test_request(),
        B26_SIGNATURE_INPUT,
        B26_SIGNATURE,
        &[key.public()],
        &policy,
    );
    assert_eq!(verified, Ok("test-key-ed25519".to_owned()));
    // The RFC's example does not cover the query, which our partner policy requires.
    let partner = Policy {
        label: "sig-b26",
        ..Policy::PARTNER
    };
    let e = verify_request(
        &test_request(),
        B26_SIGNATURE_INPUT,
        B26_SIGNATURE,
        &[key.public()],
        &partner,
    );
    assert!(
        matches!(e, Err(VerifyError::NotCovered(Component::Query))),
        "{e:?}"
    );
}

#[test]
fn rfc_9421_b26_through_verify_signature_endpoint() {
    let (key, _) = rfc_key();
    let signature = &B26_SIGNATURE["sig-b26=:".len()..B26_SIGNATURE.len() - 1];
    let body = serde_json::json!({
        "kid": "test-key-ed25519", "payload": B26_BASE, "signature": signature,
    });
    let answer = verify_signature(body.to_string().as_bytes(), &[key.public()]);
    assert_eq!(answer.status, 200);
    let json: serde_json::Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"verified": true, "kid": "test-key-ed25519"})
    );
}

#[test]
fn our_headers_have_the_documented_form() {
    let key = Keypair::from_seed("ts-signing-1", &[9; 32]);
    let request = RequestParts {
        method: "GET",
        scheme: "https",
        authority: "Bidder.Example:443",
        path: "/bid",
        query: Some("a=1&b=%20"),
        fields: &[],
    };
    let headers = sign_request(&request, &key, 1_700_000_000).unwrap();
    assert_eq!(
        headers.signature_input,
        "sig1=(\"@method\" \"@authority\" \"@path\" \"@query\");created=1700000000;keyid=\"ts-signing-1\";alg=\"ed25519\""
    );
    let base = "\"@method\": GET\n\"@authority\": bidder.example\n\"@path\": /bid\n\
                \"@query\": ?a=1&b=%20\n\"@signature-params\": (\"@method\" \"@authority\" \
                \"@path\" \"@query\");created=1700000000;keyid=\"ts-signing-1\";alg=\"ed25519\"";
    let bytes = parse_signature(&headers.signature, LABEL).unwrap();
    assert!(key.public().verify(base.as_bytes(), &bytes));
    let ok = verify_request(
        &request,
        &headers.signature_input,
        &headers.signature,
        &[key.public()],
        &Policy::PARTNER,
    );
    assert_eq!(ok.as_deref(), Ok("ts-signing-1"));
}

#[test]
fn an_edge_id_is_covered_in_the_documented_form() {
    let key = Keypair::from_seed("ts-signing-1", &[9; 32]);
    let fields = [("X-TS-EC", " abc.DEF123 ")];
    let request = RequestParts {
        method: "GET",
        scheme: "https",
        authority: "ads.example",
        path: "/ad",
        query: None,
        fields: &fields,
    };
    let headers = sign_request(&request, &key, 1_700_000_000).unwrap();
    assert_eq!(
        headers.signature_input,
        "sig1=(\"@method\" \"@authority\" \"@path\" \"@query\" \"x-ts-ec\");created=1700000000;keyid=\"ts-signing-1\";alg=\"ed25519\""
    );
    let base = "\"@method\": GET\n\"@authority\": ads.example\n\"@path\": /ad\n\"@query\": ?\n\
                \"x-ts-ec\": abc.DEF123\n\"@signature-params\": (\"@method\" \"@authority\" \
                \"@path\" \"@query\" \"x-ts-ec\");created=1700000000;keyid=\"ts-signing-1\";alg=\"ed25519\"";
    let bytes = parse_signature(&headers.signature, LABEL).unwrap();
    assert!(key.public().verify(base.as_bytes(), &bytes));
    // A signature that leaves out an `X-TS-EC` the request carries is refused by our policy.
    let bare = sign_request(
        &RequestParts {
            fields: &[],
            ..request
        },
        &key,
        1_700_000_000,
    )
    .unwrap();
    let e = verify_request(
        &request,
        &bare.signature_input,
        &bare.signature,
        &[key.public()],
        &Policy::PARTNER,
    );
    assert_eq!(
        e,
        Err(VerifyError::NotCovered(Component::Field("x-ts-ec".into())))
    );
}

#[test]
fn policy_failures_are_named() {
    let key = Keypair::from_seed("k", &[3; 32]);
    let other = Keypair::from_seed("k", &[4; 32]);
    let request = RequestParts {
        method: "GET",
        scheme: "http",
        authority: "p.example",
        path: "/",
        query: None,
        fields: &[],
    };
    let h = sign_request(&request, &key, 1000).unwrap();
    let check = |input: &str, sig: &str, keys: &[PublicKey], policy: &Policy<'_>| {
        verify_request(&request, input, sig, keys, policy)
    };
    let keys = [key.public()];
    assert_eq!(
        check(
            &h.signature_input,
            &h.signature,
            &[other.public()],
            &Policy::PARTNER
        ),
        Err(VerifyError::Mismatch)
    );
    assert_eq!(
        check(&h.signature_input, &h.signature, &[], &Policy::PARTNER),
        Err(VerifyError::UnknownKey(Some("k".into())))
    );
    let no_kid = h.signature_input.replace(";keyid=\"k\"", "");
    assert_eq!(
        check(&no_kid, &h.signature, &keys, &Policy::PARTNER),
        Err(VerifyError::UnknownKey(None))
    );
    let rsa = h.signature_input.replace("ed25519", "rsa-pss-sha512");
    assert_eq!(
        check(&rsa, &h.signature, &keys, &Policy::PARTNER),
        Err(VerifyError::Algorithm("rsa-pss-sha512".into()))
    );
    let fresh = |now| Policy {
        freshness: Some((now, 300)),
        ..Policy::PARTNER
    };
    assert!(check(&h.signature_input, &h.signature, &keys, &fresh(1200)).is_ok());
    assert_eq!(
        check(&h.signature_input, &h.signature, &keys, &fresh(1301)),
        Err(VerifyError::Created("too old"))
    );
    assert_eq!(
        check(&h.signature_input, &h.signature, &keys, &fresh(699)),
        Err(VerifyError::Created("in the future"))
    );
    let wrong_label = Policy {
        label: "sig2",
        ..Policy::PARTNER
    };
    assert!(matches!(
        check(&h.signature_input, &h.signature, &keys, &wrong_label),
        Err(VerifyError::Syntax(_))
    ));
    // Fewer covered components, re-signed honestly: still refused by the partner policy.
    let fewer = h.signature_input.replace(" \"@query\"", "");
    assert_eq!(
        check(&fewer, &h.signature, &keys, &Policy::PARTNER),
        Err(VerifyError::NotCovered(Component::Query))
    );
}

#[test]
fn discovery_lists_every_key_and_never_a_seed() {
    let seeds = [[5u8; 32], [6u8; 32]];
    let keys: Vec<Keypair> = (seeds.iter().zip(["now", "before"]))
        .map(|(s, kid)| Keypair::from_seed(kid, s))
        .collect();
    let public: Vec<PublicKey> = keys.iter().map(Keypair::public).collect();
    let doc = discovery_document("1.2.3", &public);
    let json: serde_json::Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(json["version"], "1.2.3");
    let listed = json["jwks"]["keys"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(
        (listed[0]["kid"].as_str(), listed[1]["kid"].as_str()),
        (Some("now"), Some("before"))
    );
    for seed in seeds {
        for encoded in [
            STANDARD.encode(seed),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(seed),
        ] {
            assert!(!doc.contains(&encoded[..20]), "a seed in {doc}");
        }
    }
}

#[test]
fn verify_signature_answers_and_refuses_malformed_bodies() {
    let key = Keypair::from_seed("k1", &[8; 32]);
    let keys = [key.public()];
    let sig = STANDARD.encode(key.sign(b"payload"));
    let body = |kid: &str, payload: &str, sig: &str| {
        serde_json::json!({"kid": kid, "payload": payload, "signature": sig}).to_string()
    };
    let answer = |b: &str| verify_signature(b.as_bytes(), &keys);
    let verified = |a: &JsonAnswer| -> serde_json::Value { serde_json::from_str(&a.body).unwrap() };
    let good = answer(&body("k1", "payload", &sig));
    assert_eq!(
        (good.status, verified(&good)["verified"].as_bool()),
        (200, Some(true))
    );
    for (kid, payload) in [("k1", "payloaD"), ("k2", "payload")] {
        let a = answer(&body(kid, payload, &sig));
        assert_eq!(a.status, 200);
        assert_eq!(
            verified(&a),
            serde_json::json!({"verified": false, "kid": kid})
        );
    }
    let short = STANDARD.encode([0u8; 63]);
    for bad in [
        "".to_owned(),
        "[]".to_owned(),
        "{\"kid\":\"k1\"}".to_owned(),
        "{\"kid\":1,\"payload\":\"p\",\"signature\":\"s\"}".to_owned(),
        body("k1", "payload", "!!!"),
        body("k1", "payload", &short),
        "{\"kid\":\"k1\",".to_owned(),
    ] {
        let a = answer(&bad);
        assert_eq!(a.status, 400, "{bad}");
        let json: serde_json::Value = serde_json::from_str(&a.body).unwrap();
        assert!(json["error"].is_string());
    }
    let huge = body("k1", &"x".repeat(MAX_VERIFY_BODY), &sig);
    assert_eq!(answer(&huge).status, 413);
}

/// A request that differs from another in exactly one covered component.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    authority: String,
    path: String,
    query: Option<String>,
    created: u64,
}

impl Request {
    fn parts(&self) -> RequestParts<'_> {
        RequestParts {
            method: &self.method,
            scheme: "https",
            authority: &self.authority,
            path: &self.path,
            query: self.query.as_deref(),
            fields: &[],
        }
    }
}

fn request() -> impl Strategy<Value = Request> {
    (
        "[A-Z]{3,7}",
        "[a-z0-9.-]{1,20}(:[0-9]{2,5})?",
        "(/[a-zA-Z0-9%._~!$&'()*+,;=:@-]{0,12}){1,4}",
        proptest::option::of("[ -~]{1,30}"),
        0u64..4_000_000_000,
    )
        .prop_map(|(method, authority, path, query, created)| Request {
            method,
            authority,
            path,
            query,
            created,
        })
}

proptest! {
    /// What we sign verifies, and any change to one covered component (or to `created`, in
    /// the signed `Signature-Input`) makes it fail.
    #[test]
    fn a_change_to_any_covered_component_fails(
        r in request(),
        which in 0usize..5,
        other in "[A-Za-z0-9/]{1,8}",
        seed in any::<[u8; 32]>(),
    ) {
        let key = Keypair::from_seed("k", &seed);
        let keys = [key.public()];
        let h = sign_request(&r.parts(), &key, r.created).unwrap();
        let ok = verify_request(&r.parts(), &h.signature_input, &h.signature, &keys, &Policy::PARTNER);
        prop_assert_eq!(ok, Ok("k".to_owned()));
        let mut changed = r.clone();
        let mut input = h.signature_input.clone();
        match which {
            0 => changed.method = format!("{}{}", r.method, other.to_ascii_uppercase()),
            1 => changed.authority = format!("{}{}", r.authority, other.to_ascii_lowercase().replace('/', "x")),
            2 => changed.path = format!("{}{other}", r.path),
            3 => changed.query = Some(format!("{}{other}", r.query.clone().unwrap_or_default())),
            _ => {
                let created = format!("created={}", r.created);
                input = input.replace(&created, &format!("created={}", r.created + 1));
            }
        }
        let e = verify_request(&changed.parts(), &input, &h.signature, &keys, &Policy::PARTNER);
        prop_assert_eq!(e, Err(VerifyError::Mismatch));
    }

    /// An edge ID the request carries is covered: what was signed verifies; another ID, the
    /// ID removed, or an ID added to a request signed without one does not.
    #[test]
    fn a_changed_edge_id_fails(
        r in request(),
        id in "[A-Za-z0-9._-]{1,40}",
        other in "[A-Za-z0-9._-]{1,40}",
        seed in any::<[u8; 32]>(),
    ) {
        prop_assume!(id != other);
        let key = Keypair::from_seed("k", &seed);
        let keys = [key.public()];
        let with_id = [("x-ts-ec", id.as_str())];
        let parts = RequestParts { fields: &with_id, ..r.parts() };
        let h = sign_request(&parts, &key, r.created).unwrap();
        let verify = |parts: &RequestParts<'_>, h: &SignatureHeaders| {
            verify_request(parts, &h.signature_input, &h.signature, &keys, &Policy::PARTNER)
        };
        prop_assert_eq!(verify(&parts, &h), Ok("k".to_owned()));
        let changed = [("x-ts-ec", other.as_str())];
        prop_assert_eq!(
            verify(&RequestParts { fields: &changed, ..parts }, &h),
            Err(VerifyError::Mismatch)
        );
        prop_assert_eq!(
            verify(&r.parts(), &h),
            Err(VerifyError::Component(ComponentError::MissingField("x-ts-ec".into())))
        );
        let unsigned_id = sign_request(&r.parts(), &key, r.created).unwrap();
        prop_assert_eq!(
            verify(&parts, &unsigned_id),
            Err(VerifyError::NotCovered(Component::Field("x-ts-ec".into())))
        );
    }

    /// A flipped bit anywhere in the signature fails.
    #[test]
    fn a_changed_signature_fails(r in request(), bit in 0usize..512) {
        let key = Keypair::from_seed("k", &[2; 32]);
        let h = sign_request(&r.parts(), &key, r.created).unwrap();
        let mut bytes = parse_signature(&h.signature, LABEL).unwrap();
        bytes[bit / 8] ^= 1 << (bit % 8);
        let forged = serialize_signature(LABEL, &bytes);
        let e = verify_request(&r.parts(), &h.signature_input, &forged, &[key.public()], &Policy::PARTNER);
        prop_assert_eq!(e, Err(VerifyError::Mismatch));
    }

    /// Hostile header values: an answer, never a panic.
    #[test]
    fn any_fields_are_verified_without_panic(input in ".{0,120}", sig in ".{0,120}") {
        let r = Request { method: "GET".into(), authority: "a".into(), path: "/".into(), query: None, created: 0 };
        let keys = [Keypair::from_seed("k", &[1; 32]).public()];
        prop_assert!(verify_request(&r.parts(), &input, &sig, &keys, &Policy::PARTNER).is_err());
    }
}
