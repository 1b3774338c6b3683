//! End-to-end scenarios of signed partner requests and discovery: the live service's
//! `/.well-known/trusted-server.json` and `POST /verify-signature`, and requests signed by the
//! service's signing code checked by an independent verifier (`scripts/verify_signature.py`,
//! Python's `cryptography`), which fetches the public keys from the live service as a
//! partner would.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use trusted_server_core::signing::{sign_request, Keypair, RequestParts};

use super::{check, fetch, Outcome, World, TIMEOUT};

const DOCUMENT: &str = "/.well-known/trusted-server.json";
const CURRENT_KID: &str = "ts-signing-1";
const PREVIOUS_KID: &str = "ts-signing-0";

fn seed_file(w: &World, kid: &str) -> PathBuf {
    w.root.join(format!(
        "fixtures/dev-only/signing-key-{kid}.DEVELOPMENT-ONLY.txt"
    ))
}

/// The Python with `cryptography`: scripts/setup.sh's virtual environment when it made one,
/// else `python3`.
fn python(w: &World) -> Command {
    let venv = w.root.join(".tools/python/bin/python3");
    let mut cmd = Command::new(if venv.exists() {
        venv
    } else {
        "python3".into()
    });
    cmd.current_dir(&w.root);
    cmd
}

/// Runs the verifier with `args`, `stdin` as its input; `(exit code, stdout + stderr)`.
pub fn verifier(w: &World, args: &[&str], stdin: &[u8]) -> Result<(i32, String), String> {
    let mut child = python(w)
        .arg("scripts/verify_signature.py")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("python3: {e} (scripts/setup.sh installs what it needs)"))?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(stdin)
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.code().unwrap_or(-1), text))
}

/// A request as a partner receives it: the request line, `Host`, and the two fields.
struct Wire {
    method: String,
    host: String,
    target: String,
    signature_input: String,
    signature: String,
}

impl Wire {
    fn head(&self) -> String {
        format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nAccept: */*\r\nSignature-Input: {}\r\nSignature: {}\r\n\r\n",
            self.method, self.target, self.host, self.signature_input, self.signature
        )
    }
}

/// A named change to a signed request.
type Change = (&'static str, fn(&mut Wire));

/// Signs `method https://host target` with the service's code and the development key.
fn signed(w: &World, method: &str, host: &str, target: &str) -> Result<Wire, String> {
    let secret = std::fs::read(seed_file(w, CURRENT_KID)).map_err(|e| e.to_string())?;
    let key = Keypair::from_secret(CURRENT_KID, &secret).map_err(|e| e.to_string())?;
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let parts = RequestParts {
        method,
        scheme: "https",
        authority: host,
        path,
        query,
        fields: &[],
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| e.to_string())?
        .as_secs();
    let headers = sign_request(&parts, &key, now).map_err(|e| e.to_string())?;
    Ok(Wire {
        method: method.to_owned(),
        host: host.to_owned(),
        target: target.to_owned(),
        signature_input: headers.signature_input,
        signature: headers.signature,
    })
}

/// The `created` of a `Signature-Input` we wrote (`…;created=N;…`).
fn created_of(signature_input: &str) -> u64 {
    (signature_input.split(";created=").nth(1))
        .and_then(|rest| rest.split(';').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn json(body: &[u8]) -> Result<serde_json::Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(body)))
}

pub fn discovery_lists_the_keys(w: &World) -> Outcome {
    let r = fetch(w.streaming, DOCUMENT, &[])?;
    check(r.status == 200 && r.complete, || {
        format!("status {}", r.status)
    })?;
    check(r.header("content-type") == Some("application/json"), || {
        format!("content-type {:?}", r.header("content-type"))
    })?;
    check(
        r.header("cache-control") == Some("public, max-age=300"),
        || format!("cache-control {:?}", r.header("cache-control")),
    )?;
    check(
        r.header("x-ts-version") == Some(trusted_server_core::VERSION),
        || "no version header".into(),
    )?;
    let doc = json(&r.body)?;
    check(doc["version"] == trusted_server_core::VERSION, || {
        format!("version in {doc}")
    })?;
    let keys = doc["jwks"]["keys"].as_array().cloned().unwrap_or_default();
    let kids: Vec<&str> = keys.iter().filter_map(|k| k["kid"].as_str()).collect();
    check(kids == [CURRENT_KID, PREVIOUS_KID], || {
        format!("kids {kids:?}")
    })?;
    for key in &keys {
        for (member, want) in [
            ("kty", "OKP"),
            ("crv", "Ed25519"),
            ("use", "sig"),
            ("alg", "EdDSA"),
        ] {
            check(key[member] == want, || format!("{member} in {key}"))?;
        }
    }
    // Each `x` is the public key Python derives from the development seed of that kid.
    for kid in [CURRENT_KID, PREVIOUS_KID] {
        let seed = seed_file(w, kid);
        let script = "import base64,sys\n\
            from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey\n\
            from cryptography.hazmat.primitives import serialization as s\n\
            t=''.join(l.strip() for l in open(sys.argv[1]) if not l.startswith('#'))\n\
            k=Ed25519PrivateKey.from_private_bytes(base64.b64decode(t)).public_key()\n\
            raw=k.public_bytes(s.Encoding.Raw,s.PublicFormat.Raw)\n\
            print(base64.urlsafe_b64encode(raw).decode().rstrip('='))";
        let out = python(w)
            .args(["-c", script])
            .arg(&seed)
            .output()
            .map_err(|e| e.to_string())?;
        let x = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let listed = keys.iter().find(|k| k["kid"] == kid).map(|k| &k["x"]);
        check(
            out.status.success() && listed.is_some_and(|l| *l == *x),
            || format!("{kid}: listed {listed:?}, Python derives {x:?}"),
        )?;
        // The private key never shows.
        let text = std::fs::read_to_string(&seed).map_err(|e| e.to_string())?;
        let secret: String = text.lines().filter(|l| !l.starts_with('#')).collect();
        check(
            !String::from_utf8_lossy(&r.body).contains(&secret[..16]),
            || "a private key in the document".into(),
        )?;
    }
    Ok(())
}

pub fn python_verifies_the_rfc_example(w: &World) -> Outcome {
    let (code, out) = verifier(w, &["rfc-example"], b"")?;
    check(code == 0, || format!("exit {code}: {out}"))
}

pub fn python_accepts_signed_requests_and_rejects_changed_ones(w: &World) -> Outcome {
    let keys = format!("http://{}{DOCUMENT}", w.streaming);
    let verify = |wire: &Wire| verifier(w, &["verify", "--keys", &keys], wire.head().as_bytes());
    let requests = [
        ("GET", "bidder.example", "/bid?id=42&size=300x250"),
        ("POST", "ads.partner.example:8443", "/openrtb2/auction"),
        ("GET", "pixel.example", "/p/a%20b/?x=%C3%A9&y="),
        ("GET", "pixel.example", "/"),
    ];
    for (method, host, target) in requests {
        let wire = signed(w, method, host, target)?;
        let (code, out) = verify(&wire)?;
        check(
            code == 0 && out.starts_with(&format!("verified {CURRENT_KID}")),
            || {
                format!(
                    "{method} {host}{target}: exit {code}: {out}\n{}",
                    wire.head()
                )
            },
        )?;
        let changes: [Change; 5] = [
            ("method", |r: &mut Wire| r.method = "PUT".into()),
            ("authority", |r: &mut Wire| r.host = "evil.example".into()),
            ("path", |r: &mut Wire| {
                r.target = r.target.replacen('/', "/x", 1)
            }),
            ("query", |r: &mut Wire| {
                r.target = match r.target.split_once('?') {
                    Some((p, q)) => format!("{p}?{q}&z=1"),
                    None => format!("{}?z=1", r.target),
                }
            }),
            ("created", |r: &mut Wire| {
                // One second earlier, in the signed Signature-Input itself.
                let created = created_of(&r.signature_input);
                r.signature_input = r.signature_input.replace(
                    &format!("created={created}"),
                    &format!("created={}", created.saturating_sub(1)),
                )
            }),
        ];
        for (what, change) in changes {
            let mut tampered = signed(w, method, host, target)?;
            change(&mut tampered);
            let (code, out) = verify(&tampered)?;
            check(
                code == 1 && out.contains("rejected: the signature does not match"),
                || format!("{method} {host}{target} with a changed {what}: exit {code}: {out}"),
            )?;
        }
    }
    Ok(())
}

/// A signature made by Python (`cryptography`) with the development key, checked by the
/// service.
pub fn verify_signature_endpoint(w: &World) -> Outcome {
    let payload = "\"@method\": GET\n\"@signature-params\": (\"@method\");created=1";
    let script = "import base64,sys\n\
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey\n\
        t=''.join(l.strip() for l in open(sys.argv[1]) if not l.startswith('#'))\n\
        k=Ed25519PrivateKey.from_private_bytes(base64.b64decode(t))\n\
        print(base64.b64encode(k.sign(sys.stdin.buffer.read())).decode())";
    let mut child = python(w)
        .args(["-c", script])
        .arg(seed_file(w, PREVIOUS_KID))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    child
        .stdin
        .take()
        .ok_or("no stdin")?
        .write_all(payload.as_bytes())
        .map_err(|e| e.to_string())?;
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let signature = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let post = |body: &str| {
        e2e::send(
            w.streaming,
            "POST",
            "/verify-signature",
            &[("content-type", "application/json")],
            body.as_bytes(),
            TIMEOUT,
        )
        .map_err(|e| e.to_string())
    };
    let ask = |kid: &str, payload: &str| {
        serde_json::json!({"kid": kid, "payload": payload, "signature": signature}).to_string()
    };
    for (kid, text, want) in [
        (PREVIOUS_KID, payload, true),
        (PREVIOUS_KID, &payload.replace("GET", "PUT") as &str, false),
        (CURRENT_KID, payload, false),
        ("no-such-kid", payload, false),
    ] {
        let r = post(&ask(kid, text))?;
        let answer = json(&r.body)?;
        check(
            r.status == 200 && answer == serde_json::json!({"verified": want, "kid": kid}),
            || format!("{kid}: status {} {answer}", r.status),
        )?;
        check(r.header("cache-control") == Some("no-store"), || {
            format!("cache-control {:?}", r.header("cache-control"))
        })?;
    }
    for bad in ["", "{", "{\"kid\":\"ts-signing-0\"}", "[1,2]"] {
        let r = post(bad)?;
        check(
            r.status == 400 && json(&r.body)?["error"].is_string(),
            || format!("{bad:?}: status {}", r.status),
        )?;
    }
    let huge = ask(PREVIOUS_KID, &"x".repeat(70_000));
    let r = post(&huge)?;
    check(r.status == 413, || {
        format!("70 kB body: status {}", r.status)
    })
}

/// The build without its secrets: discovery is a `503` JSON error, and the log names the
/// store and kid, never a key.
pub fn missing_key_gives_503_and_a_log_line(w: &World) -> Outcome {
    let r = fetch(w.no_secret, DOCUMENT, &[])?;
    check(
        r.status == 503 && json(&r.body)?["error"].is_string(),
        || format!("status {} {}", r.status, String::from_utf8_lossy(&r.body)),
    )?;
    let log =
        std::fs::read_to_string(crate::viceroy_log(w, "no-secret")).map_err(|e| e.to_string())?;
    check(
        log.contains("discovery document unavailable")
            && log.contains("secret store `ts_signing` has no key `no_such_kid`"),
        || "no log line naming the store and kid".into(),
    )?;
    for kid in [CURRENT_KID, PREVIOUS_KID] {
        let text = std::fs::read_to_string(seed_file(w, kid)).map_err(|e| e.to_string())?;
        let secret: String = text.lines().filter(|l| !l.starts_with('#')).collect();
        check(!log.contains(&secret[..16]), || {
            "a private key in the log".into()
        })?;
    }
    Ok(())
}
