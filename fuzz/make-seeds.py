#!/usr/bin/env python3
"""Writes the committed seed corpus, fuzz/corpus/<target>/, from the repository's fixtures.

Each seed is a small piece of a fixture followed by the trailer every target reads (see
`split_input` in crates/testkit/src/fuzz_input.rs): cut points, a config byte, and the number of
cuts. Compressed seeds for the `decode` target are made here with Python's gzip and zlib; br
bodies come from the target itself, which encodes a seed's text with the coding its config byte names.

Run from anywhere: python3 fuzz/make-seeds.py. It replaces the corpus it writes (the folders of
GENERATED) and leaves the other targets' corpora, which are written by hand, alone.
"""
import gzip
import hashlib
import re
import shutil
import struct
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
SITE = ROOT / "fixtures" / "site"
NEXT = ROOT / "fixtures" / "nextjs"


def trailer(body: bytes, cuts, config: int) -> bytes:
    """body ‖ cuts (u16 little-endian) ‖ config ‖ number of cuts (15 = one-byte chunks)."""
    if cuts == "bytewise":
        return body + bytes([config, 15])
    assert len(cuts) < 15
    return body + b"".join(struct.pack("<H", c % 65536) for c in cuts) + bytes([config, len(cuts)])


def write(target: str, data: bytes) -> None:
    assert target in GENERATED, f"{target} is not in GENERATED"
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def piece(path: Path, start: int, length: int) -> bytes:
    return path.read_bytes()[start : start + length]


# The targets whose seeds this script makes; every other folder under fuzz/corpus/ is kept.
GENERATED = ["html", "rsc", "js_string", "decode", "url_rule", "settings", "creative"]


def main() -> None:
    for target in GENERATED:
        shutil.rmtree(CORPUS / target, ignore_errors=True)

    # html: bits 0-1 flush options, 2-3 target, 4 charset (utf-8 / windows-1252).
    for path, start, length, config in [
        (SITE / "index.html", 0, 2500, 0x00),
        (SITE / "index.html", 6000, 2500, 0x05),
        (SITE / "news" / "article.html", 0, 3000, 0x0A),
        (SITE / "embed" / "poll.html", 0, 1319, 0x03),
        (SITE / "latin1.latin1.html", 0, 3101, 0x10),
        (NEXT / "index.body", 0, 3000, 0x04),
        (NEXT / "nonce.body", 2000, 3000, 0x08),
    ]:
        write("html", trailer(piece(path, start, length), [97, 1024, 1500, 2900], config))
    write("html", trailer(piece(SITE / "embed" / "poll.html", 0, 600), "bytewise", 0x01))

    # rsc: bits 0-1 flush options, 2 page (inline scripts) instead of a Flight response,
    # 3 the 1024-byte cap, 4-5 target.
    for path, start, length, config in [
        (NEXT / "index.rsc.body", 0, 3000, 0x00),
        (NEXT / "about.rsc.body", 0, 2600, 0x14),
        (NEXT / "live.rsc.body", 0, 4000, 0x0C),
        (NEXT / "nonce.rsc.body", 0, 2000, 0x25),
        (NEXT / "about.prefetch.rsc.body", 0, 2613, 0x04),
        (NEXT / "index.segment._tree.rsc.body", 0, 186, 0x00),
    ]:
        write("rsc", trailer(piece(path, start, length), [300, 700, 1200, 1800, 2200, 2500], config))
    write("rsc", trailer(piece(NEXT / "about.segment._tree.rsc.body", 0, 233), "bytewise", 0x04))

    # js_string: push string bodies as Next.js wrote them (bit 2 clear: used as they are),
    # and text to escape (bit 2 set).
    page = (NEXT / "index.body").read_bytes()
    bodies = re.findall(rb'self\.__next_f\.push\(\[1,"((?:[^"\\]|\\.)*)"\]\)', page)
    for body in sorted(bodies, key=len)[:: max(1, len(bodies) // 5)][:5]:
        write("js_string", trailer(body[:2000], [5, 17, 40], 0x00))
    write("js_string", trailer("Café — « ✓ » 😀 <b>&amp;</b>\u2028\n\t\"\\ end".encode(), [3, 9], 0x04))
    write("js_string", trailer(rb"a\/b\u00e9\u003C\ud83d\ude00\ud83d x\u2029", "bytewise", 0x00))

    # decode: bits 0-1 flush options, 2-3 coding (gzip, zlib, raw deflate, br), 4 target,
    # 5-6 rewrite (css, html, flight), 7 arbitrary bytes labelled with the coding.
    texts = [
        (piece(SITE / "static" / "site.css", 0, 2500), 0 << 5),
        (piece(SITE / "index.html", 0, 2500), 1 << 5),
        (piece(NEXT / "about.rsc.body", 0, 2500), 2 << 5),
    ]
    for coding in range(4):
        for text, rewrite in texts:
            write("decode", trailer(text, [100, 900, 1700, 40, 300, 2000], rewrite | coding << 2))
    css = texts[0][0]
    encoded = [
        (gzip.compress(css, mtime=0), 0),
        (gzip.compress(css[:1000], mtime=0) + gzip.compress(css[1000:], mtime=0), 0),
        (zlib.compress(css), 1),
        (zlib.compress(css)[:-7], 1),
        (zlib.compressobj(6, zlib.DEFLATED, -15).compress(css) + zlib.compressobj(6, zlib.DEFLATED, -15).flush(), 2),
    ]
    for body, coding in encoded:
        write("decode", trailer(body, [10, 200, 333], 0x80 | coding << 2))

    # url_rule: bits 0-1 flush options, 2-3 origin (no port, :8443, :443, :80), 4-5 target.
    host = "origin.demo-publisher.example"
    forms = (
        f"a https://{host}/x b //{host}. c HTTP://{host.upper()}:80/ d "
        f"https:\\/\\/{host}\\/e \\/\\/{host}:443 f //{host}.evil.test/ g //{host}@x "
        f"h //{host}:8443/ i http://{host}:443/ j //{host}x"
    ).encode()
    for config in range(0, 64, 5):
        write("url_rule", trailer(forms, [7, 30, 31, 90, 140], config))
    write("url_rule", trailer(piece(SITE / "static" / "app.js", 0, 1500), [500, 1000], 0x00))
    write("url_rule", trailer(forms[:160], "bytewise", 0x14))

    # settings: a mode byte, then TOML and (after a NUL) NAME=value lines; mode 1: an unknown
    # key's name to add to the shipped file.
    shipped = (ROOT / "trusted-server.toml").read_bytes()
    write("settings", b"\x00" + shipped)
    write("settings", b"\x02" + shipped + b"\x00PUBLISHER__CONNECT_TIMEOUT_MS=lots\x00RESPONSE_HEADERS__X_ENV=1")
    write("settings", b"\x00[publisher]\ndomain = \"www.example.com\"\norigin_url = \"https://o.example.com:8443\"\n")
    write("settings", b"\x00[response_headers]\n\"bad name\" = \"x\"\n[integrations.nextjs]\nmax_held_bytes = 12\n")
    for mode in (1, 3, 5):
        write("settings", bytes([mode]) + b"flush_treshold")

    creative_seeds()


def creative_seeds() -> None:
    """creative: config % 3 picks the type (HTML in UTF-8, CSS, HTML in windows-1252)."""
    html = (
        b"<!doctype html><div style='background:url(\"https://ads.example/bg.png\")'>"
        b"<a href=https://ads.example/click?a=1&amp;b=2&c><img src=\"//cdn.ads.example/i.png\""
        b" srcset=\"https://ads.example/1.png 1x, /rel.png 2x,https://x.example/3.png 3x\"></a>"
        b"<meta http-equiv=refresh content=\"5; URL='https://ads.example/next'\">"
        b"<object data=\"https&#58;//ads.example/o.swf\"></object><video poster=HTTPS://ADS.EXAMPLE/p>"
        b"<style>@import \"https://ads.example/a.css\";b{background:url( https://ads.example/b )}"
        b"/* url(https://ads.example/c) */i{c:\"url(https://ads.example/d)\"}</style>"
        b"<script>var u='<img src=https://ads.example/e>'</script><!-- <img src=//ads.example/f> -->"
        b"<form action=\"&#x68;ttps://ads.example/f\"><button formaction=//ads.example/g>g</button></form>"
        b"<base href=https://ads.example/><img src=\"https://ads.example/&copy;\"></div>"
    )
    css = (
        b"@import 'https://ads.example/a.css' screen;@import url(//ads.example/b.css);"
        b"a{background:url(https://ads.example/a\\).png) no-repeat;b:URL( \"https\\3a //ads.example/c\" )}"
        b"c{d:-url(https://ads.example/x);e:#url(https://ads.example/y);f:url(data:image/png;base64,AAAA)}"
        b"/* url(https://ads.example/z) */g{content:\"url(https://ads.example/s)\"}"
        b"h{background:url(https://ads.example/bad url)}i{j:url(\"https://ads.example/\nnl\")}"
    )
    write("creative", trailer(html, [40, 200, 333, 512, 700], 0))
    write("creative", trailer(html, "bytewise", 3))
    write("creative", trailer(html.replace(b"ads.example/next", b"ads.example/n\xe9"), [100, 600], 2))
    write("creative", trailer(css, [12, 100, 250, 401], 1))
    write("creative", trailer(css, "bytewise", 4))


if __name__ == "__main__":
    main()
