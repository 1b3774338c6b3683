#!/usr/bin/env python3
"""Independent verifier of the service's signed partner requests (RFC 9421, Ed25519).

Written separately from the Rust code (crates/core/src/signing/): it reads a request the way a
partner receives it, rebuilds the signature base itself, and checks the Ed25519 signature with
the `cryptography` package (scripts/setup.sh installs it when missing). The tests use it as the
oracle for the service's signatures; a partner can use it as a reference.

  verify_signature.py verify --keys URL_OR_FILE [--request FILE] [--scheme https] [--now N]
      Reads one raw HTTP/1.1 request head (stdin, or FILE) and verifies its `sig1` signature,
      which must cover @method, @authority, @path, @query, and x-ts-ec when the request has it.
      Keys: the discovery document (URL or file, {"jwks":{"keys":[...]}}) or a bare JWKS.
      `--seed-file F --kid K` derives the public key from a private seed file instead.
      Exit 0 and "verified <kid>" when it verifies; exit 1 and "rejected: <why>" when not.

  verify_signature.py rfc-example
      Rebuilds the signature base of RFC 9421 Appendix B.2.6 from the RFC's test request,
      compares it with the published base, and verifies the published signature with the
      published key of Appendix B.1.4 (and refuses it for a changed request). Exit 0 when
      all of that holds.

  verify_signature.py serve --port P --keys URL_OR_FILE [--scheme http]
      A test partner origin on 127.0.0.1:P: answers every request 200 {"verified":true,
      "kid":...} or 401 {"verified":false,"reason":...}.
"""

import argparse
import base64
import http.server
import json
import re
import sys
import time
import urllib.request

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

REQUIRED = ["@method", "@authority", "@path", "@query"]
# Fields that must be covered whenever the request carries them: the reader's edge ID.
REQUIRED_WHEN_PRESENT = ["x-ts-ec"]


class Rejected(Exception):
    """The request does not carry a valid signature; the message says why."""


# --- Reading the request ------------------------------------------------------------------


def parse_head(raw):
    """(method, target, [(name, value)]) of a raw HTTP/1.1 request head."""
    text = raw.decode("latin-1") if isinstance(raw, bytes) else raw
    head = text.replace("\r\n", "\n").split("\n\n", 1)[0]
    lines = head.split("\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise Rejected("bad request line %r" % lines[0])
    fields = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise Rejected("bad header line %r" % line)
        fields.append((name.strip().lower(), value.strip(" \t")))
    return parts[0], parts[1], fields


def field(fields, name):
    """All values of a header, trimmed and joined with ', ', or None."""
    values = [v for (n, v) in fields if n == name]
    return ", ".join(values) if values else None


# --- Structured fields, the parts RFC 9421 uses (RFC 8941) ---------------------------------

TOKEN_KEY = re.compile(r"[a-z*][a-z0-9_.*-]*")


def read_string(s, i):
    """An sf-string starting at s[i] == '"'; returns (value, next index)."""
    assert s[i] == '"'
    i += 1
    out = []
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) or s[i + 1] not in '"\\':
                raise Rejected("bad escape in a string")
            out.append(s[i + 1])
            i += 2
        elif c == '"':
            return "".join(out), i + 1
        elif " " <= c <= "~":
            out.append(c)
            i += 1
        else:
            raise Rejected("bad character in a string")
    raise Rejected("unterminated string")


def read_params(s, i):
    """;key=value parameters from s[i]; returns (list of (key, value), next index)."""
    params = []
    while i < len(s) and s[i] == ";":
        i += 1
        while i < len(s) and s[i] == " ":
            i += 1
        m = TOKEN_KEY.match(s, i)
        if not m:
            raise Rejected("bad parameter name")
        key, i = m.group(0), m.end()
        value = True
        if i < len(s) and s[i] == "=":
            i += 1
            if i < len(s) and s[i] == '"':
                value, i = read_string(s, i)
            else:
                m = re.compile(r"-?[0-9]{1,15}(?![0-9.])").match(s, i)
                if m:
                    value, i = int(m.group(0)), m.end()
                elif s.startswith("?1", i) or s.startswith("?0", i):
                    value, i = s[i + 1] == "1", i + 2
                else:
                    raise Rejected("unsupported parameter value for %s" % key)
        params = [(k, v) for (k, v) in params if k != key] + [(key, value)]
    return params, i


def read_dictionary(s):
    """{key: ("list", [names], params) | ("bytes", bytes, params)}."""
    out = {}
    i = 0
    s = s.strip(" \t")
    while True:
        m = TOKEN_KEY.match(s, i)
        if not m or m.end() >= len(s) or s[m.end()] != "=":
            raise Rejected("bad dictionary member")
        key, i = m.group(0), m.end() + 1
        if s[i] == "(":
            i += 1
            names = []
            while True:
                while i < len(s) and s[i] == " ":
                    i += 1
                if i >= len(s):
                    raise Rejected("unterminated inner list")
                if s[i] == ")":
                    i += 1
                    break
                if s[i] != '"':
                    raise Rejected("only strings are supported in the list")
                name, i = read_string(s, i)
                if i < len(s) and s[i] == ";":
                    raise Rejected("component parameters are not supported")
                names.append(name)
            params, i = read_params(s, i)
            out[key] = ("list", names, params)
        elif s[i] == ":":
            end = s.index(":", i + 1) if ":" in s[i + 1 :] else -1
            if end < 0:
                raise Rejected("unterminated byte sequence")
            try:
                value = base64.b64decode(s[i + 1 : end], validate=True)
            except ValueError:
                raise Rejected("byte sequence is not base64")
            params, i = read_params(s, end + 1)
            out[key] = ("bytes", value, params)
        else:
            raise Rejected("unsupported member value")
        while i < len(s) and s[i] in " \t":
            i += 1
        if i >= len(s):
            return out
        if s[i] != ",":
            raise Rejected("members must be separated by commas")
        i += 1
        while i < len(s) and s[i] in " \t":
            i += 1


def write_string(v):
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_inner_list(names, params):
    out = "(" + " ".join(write_string(n) for n in names) + ")"
    for key, value in params:
        if value is True:
            out += ";" + key
        elif value is False:
            out += ";%s=?0" % key
        elif isinstance(value, int):
            out += ";%s=%d" % (key, value)
        else:
            out += ";%s=%s" % (key, write_string(value))
    return out


# --- The signature base (RFC 9421 section 2.5) ----------------------------------------------


def component_value(name, method, target, fields, scheme):
    path, q, query = target.partition("?")
    if name == "@method":
        return method
    if name == "@authority":
        host = (field(fields, "host") or "").lower()
        default = {"http": ":80", "https": ":443"}.get(scheme)
        if default and host.endswith(default) and not host[: -len(default)].endswith(":"):
            host = host[: -len(default)]
        return host
    if name == "@path":
        return path or "/"
    if name == "@query":
        return "?" + query
    if name.startswith("@"):
        raise Rejected("unsupported derived component %s" % name)
    value = field(fields, name)
    if value is None:
        raise Rejected("covered field %s is missing" % name)
    return value


def signature_base(method, target, fields, names, params, scheme):
    lines = []
    for name in names:
        value = component_value(name, method, target, fields, scheme)
        if any(ord(c) < 0x20 and c != "\t" or ord(c) > 0x7E for c in value):
            raise Rejected("value of %s cannot be signed" % name)
        lines.append('"%s": %s' % (name, value))
    lines.append('"@signature-params": ' + write_inner_list(names, params))
    return "\n".join(lines)


# --- Verifying --------------------------------------------------------------------------------


def verify(raw, keys, scheme="https", label="sig1", required=REQUIRED, now=None, max_age=300):
    """Returns the kid that signed `raw`, or raises Rejected."""
    method, target, fields = parse_head(raw)
    inputs = field(fields, "signature-input")
    signatures = field(fields, "signature")
    if inputs is None or signatures is None:
        raise Rejected("no Signature-Input or Signature")
    member = read_dictionary(inputs).get(label)
    signature = read_dictionary(signatures).get(label)
    if not member or member[0] != "list" or not signature or signature[0] != "bytes":
        raise Rejected("no signature labelled %s" % label)
    _, names, params = member
    p = dict(params)
    if len(set(names)) != len(names):
        raise Rejected("a component is covered twice")
    for name in required:
        if name not in names:
            raise Rejected("%s is not covered" % name)
    for name in REQUIRED_WHEN_PRESENT:
        if field(fields, name) is not None and name not in names:
            raise Rejected("%s is sent but not covered" % name)
    if p.get("alg", "ed25519") != "ed25519":
        raise Rejected("alg %r is not ed25519" % p.get("alg"))
    kid = p.get("keyid")
    if kid not in keys:
        raise Rejected("unknown keyid %r" % kid)
    created = p.get("created")
    if max_age is not None:
        if not isinstance(created, int) or isinstance(created, bool):
            raise Rejected("no created")
        now = int(time.time()) if now is None else now
        if created + max_age < now or created > now + max_age:
            raise Rejected("created %d is outside %d s of %d" % (created, max_age, now))
    base = signature_base(method, target, fields, names, params, scheme)
    try:
        keys[kid].verify(signature[1], base.encode("ascii"))
    except InvalidSignature:
        raise Rejected("the signature does not match the request")
    return kid


def b64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def load_keys(source):
    """{kid: Ed25519PublicKey} from a discovery document or JWKS (URL or file)."""
    if source.startswith("http://") or source.startswith("https://"):
        with urllib.request.urlopen(source, timeout=10) as r:
            document = json.load(r)
    else:
        with open(source) as f:
            document = json.load(f)
    jwks = document.get("jwks", document)
    keys = {}
    for jwk in jwks["keys"]:
        if jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
            keys[jwk["kid"]] = Ed25519PublicKey.from_public_bytes(b64url(jwk["x"]))
    return keys


def key_from_seed_file(path):
    """The public key of a seed file (base64 of 32 bytes; '#' lines ignored)."""
    with open(path) as f:
        text = "".join(l.strip() for l in f if not l.lstrip().startswith("#"))
    seed = base64.b64decode(text, validate=True)
    return Ed25519PrivateKey.from_private_bytes(seed).public_key()


# --- The RFC's own example --------------------------------------------------------------------

RFC_PUBLIC_PEM = b"""-----BEGIN PUBLIC KEY-----
MCowBQYDK2VwAyEAJrQLj5P/89iXES9+vFgrIy29clF9CC/oPPsw3c5D0bs=
-----END PUBLIC KEY-----
"""

RFC_TEST_REQUEST = (
    "POST /foo?param=Value&Pet=dog HTTP/1.1\r\n"
    "Host: example.com\r\n"
    "Date: Tue, 20 Apr 2021 02:07:55 GMT\r\n"
    "Content-Type: application/json\r\n"
    "Content-Digest: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyea"
    "ldVLvRwEmTHWXvJwew==:\r\n"
    "Content-Length: 18\r\n"
)

RFC_SIGNATURE_INPUT = (
    'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length")'
    ';created=1618884473;keyid="test-key-ed25519"'
)
RFC_SIGNATURE = (
    "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"
)
RFC_BASE = "\n".join(
    [
        '"date": Tue, 20 Apr 2021 02:07:55 GMT',
        '"@method": POST',
        '"@path": /foo',
        '"@authority": example.com',
        '"content-type": application/json',
        '"content-length": 18',
        '"@signature-params": ("date" "@method" "@path" "@authority" "content-type" '
        '"content-length");created=1618884473;keyid="test-key-ed25519"',
    ]
)


def rfc_example():
    key = serialization.load_pem_public_key(RFC_PUBLIC_PEM)
    keys = {"test-key-ed25519": key}
    signed = (
        RFC_TEST_REQUEST
        + "Signature-Input: " + RFC_SIGNATURE_INPUT + "\r\n"
        + "Signature: " + RFC_SIGNATURE + "\r\n\r\n"
    )
    method, target, fields = parse_head(signed)
    _, names, params = read_dictionary(RFC_SIGNATURE_INPUT)["sig-b26"]
    base = signature_base(method, target, fields, names, params, "https")
    if base != RFC_BASE:
        print("rebuilt base differs from the RFC's:\n%s" % base)
        return 1
    try:
        kid = verify(signed, keys, label="sig-b26", required=["@method", "@path", "@authority"],
                     now=1618884473, max_age=300)
    except Rejected as e:
        print("the RFC's own signature is rejected: %s" % e)
        return 1
    print("RFC 9421 B.2.6: base rebuilt as published; signature verified for %s" % kid)
    for old, new in [("POST /foo", "PUT /foo"), ("POST /foo", "POST /bar"),
                     ("Host: example.com", "Host: example.org"),
                     ("Content-Length: 18", "Content-Length: 19")]:
        try:
            verify(signed.replace(old, new, 1), keys, label="sig-b26", required=[], now=1618884473)
            print("a changed request (%s) verified" % new)
            return 1
        except Rejected:
            pass
    print("RFC 9421 B.2.6: changed requests are rejected")
    return 0


# --- Commands ---------------------------------------------------------------------------------


def command_verify(args):
    if args.seed_file:
        keys = {args.kid: key_from_seed_file(args.seed_file)}
    else:
        keys = load_keys(args.keys)
    raw = open(args.request, "rb").read() if args.request != "-" else sys.stdin.buffer.read()
    try:
        kid = verify(raw, keys, scheme=args.scheme, now=args.now, max_age=args.max_age)
    except Rejected as e:
        print("rejected: %s" % e)
        return 1
    print("verified %s" % kid)
    return 0


def command_serve(args):
    keys = load_keys(args.keys)

    class Partner(http.server.BaseHTTPRequestHandler):
        def answer(self):
            raw = self.requestline + "\r\n" + "".join(
                "%s: %s\r\n" % (n, v) for n, v in self.headers.items()
            )
            try:
                body = {"verified": True, "kid": verify(raw, keys, scheme=args.scheme)}
                status = 200
            except Rejected as e:
                body, status = {"verified": False, "reason": str(e)}, 401
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = answer

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Partner)
    print("partner listening on 127.0.0.1:%d" % server.server_address[1], flush=True)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--keys")
    v.add_argument("--seed-file")
    v.add_argument("--kid")
    v.add_argument("--request", default="-")
    v.add_argument("--scheme", default="https")
    v.add_argument("--now", type=int)
    v.add_argument("--max-age", type=int, default=300)
    sub.add_parser("rfc-example")
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--keys", required=True)
    s.add_argument("--scheme", default="http")
    args = parser.parse_args()
    if args.command == "verify":
        if not args.keys and not (args.seed_file and args.kid):
            parser.error("verify needs --keys, or --seed-file and --kid")
        return command_verify(args)
    if args.command == "rfc-example":
        return rfc_example()
    return command_serve(args)


if __name__ == "__main__":
    sys.exit(main())
