"""Self-tests of the Flight oracle: hand-built pages and streams, correct and broken rewrites.

The "correct" rewritten documents here are built from the same templates as the originals with
the target URLs written in by hand (and every T length computed from the text), so they do not
depend on the oracle's own implementation of the rule.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

import flight_oracle as fo

HERE = Path(__file__).resolve().parent
A = "origin.demo-publisher.example"
TARGETS = [
    pytest.param("http", "www.a-much-longer-first-party-host.example:7676", id="longer"),
    pytest.param("https", "p.test", id="shorter"),
]


# ------------------------------------------------------------------------------------------
# Building pages the way Next.js does
# ------------------------------------------------------------------------------------------


def js(s: str) -> str:
    """A chunk string as Next.js writes it inside a push script."""
    j = json.dumps(s, ensure_ascii=False)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                     ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        j = j.replace(raw, esc)
    return j


def push_script(piece, nonce=None) -> str:
    open_tag = f'<script nonce="{nonce}">' if nonce else "<script>"
    if isinstance(piece, bytes):
        arg = f"[3,{json.dumps(base64.b64encode(piece).decode())}]"
    else:
        arg = f"[1,{js(piece)}]"
    return f"{open_tag}self.__next_f.push({arg})</script>"


def page(pieces, urls, nonce="r4nd0m", head_extra="") -> bytes:
    """An HTML page carrying ``pieces`` (str → [1,…], bytes → [3,…]) as Flight pushes."""
    boot = f'<script nonce="{nonce}">(self.__next_f=self.__next_f||[]).push([0])</script>'
    scripts = "".join(push_script(p, nonce if k % 2 else None) for k, p in enumerate(pieces))
    html = (
        "<!DOCTYPE html><html><head>"
        f'<link rel="stylesheet" href="{urls["css"]}/_next/static/css/app.css">'
        f'<script async src="{urls["rel_js"]}/_next/static/chunks/main.js"></script>'
        f"{head_extra}</head><body>"
        f'<a href="{urls["https"]}/news">news</a> <a href="//{A}.evil.test/">x</a>'
        f"{boot}{scripts}"
        '<script>window.__other = "no flight here";</script>'
        "</body></html>"
    )
    return html.encode("utf-8")


def t_row(row_id: str, text: str, declared: int | None = None) -> str:
    n = len(text.encode("utf-8")) if declared is None else declared
    return f"{row_id}:T{n:x},{text}"


def urls_for(scheme: str | None, host: str | None) -> dict:
    """URL spellings in the original (scheme None) or as they must look after rewriting."""
    if scheme is None:
        return dict(
            https=f"https://{A}", upper=f"HTTP://{A}", rel=f"//{A}", rel_js=f"//{A}",
            css=f"https://{A}", esc=f"https:\\/\\/{A}", esc_rel=f"\\/\\/{A}", esc_http=f"http:\\/\\/{A}",
            t_url=f"https://{A}", t_rel=f"//{A}", t_end=f"//{A}",
            evil=f"//{A}.evil.test", port=f"//{A}:8443",
        )
    return dict(
        https=f"{scheme}://{host}", upper=f"{scheme}://{host}", rel=f"//{host}", rel_js=f"//{host}",
        css=f"{scheme}://{host}", esc=f"{scheme}:\\/\\/{host}", esc_rel=f"\\/\\/{host}",
        esc_http=f"{scheme}:\\/\\/{host}", t_url=f"{scheme}://{host}", t_rel=f"//{host}", t_end=f"//{host}",
        evil=f"//{A}.evil.test", port=f"//{A}:8443",
    )


#: rewritable URL spots in the Flight template below (each key used once): https, upper, rel,
#: esc, esc_rel, esc_http, t_url, t_rel, t_end; css and rel_js are outside the Flight stream.
FLIGHT_URLS = 9

BINARY_PAYLOAD = b"\x00\xff\xfe//" + A.encode() + b"/bin\x80"


def long_text(u: dict) -> str:
    return (
        "Café ✓ 😀 — read more at " + u["t_url"] + "/news/a?x=1&y=<2> \u2028 and "
        + "lorem ipsum dolor sit amet é ✓ 😀 " * 40
        + " image " + u["t_rel"] + "/img.png"
        + " not " + u["evil"] + "/x, nor " + f"//{A}@evil.test" + ", nor bare " + A
        + " — the end ✓"
    )


def flight_pieces(u: dict, *, t_declared=None, drop=(), rename=None, truncate=0, resplit=False) -> list:
    """The Flight stream of the test page, split into push pieces.

    Row 4 (a T row) is split across three [1,…] pushes (header in the first); row 6 is a binary
    'A' row carried in a [3,…] push; row 1f is a T row whose text ends with a URL."""
    rename = rename or {}
    text = long_text(u)
    rows = [
        ("0", f'0:["$","html",null,{{"lang":"en","href":"{u["https"]}/"}}]\n'),
        ("2", f'2:HL["{u["upper"]}/_next/static/css/app.css","style"]\n'),
        ("3", f'3:I[123,["static/chunks/1.js"],"{u["rel"]}/x"]\n'),
        ("4", t_row("4", text, t_declared)),
        ("5", f'5:["$","a",null,{{"href":"$4","json":"{{\\"u\\":\\"{u["esc"]}/y\\",\\"v\\":\\"{u["esc_rel"]}/z\\",'
              f'\\"w\\":\\"{u["esc_http"]}/w\\"}}","port":"{u["port"]}/p"}}]\n'),
        ("6", b"6:A" + format(len(BINARY_PAYLOAD), "x").encode() + b"," + BINARY_PAYLOAD),
        ("a", 'a:E{"digest":"123"}\n'),
        ("1f", t_row("1f", "short ✓ text ending with a URL " + u["t_end"])),
        ("b", 'b:["$","p",null,{"children":"é ✓ 😀 \\u0026 <b>"}]\n'),
    ]
    out = []
    for rid, row in rows:
        if rid in drop:
            continue
        if rid in rename:
            row = rename[rid] + (row[len(rid):] if isinstance(row, str) else row[len(rid):])
        out.append((rid, row))
    # Join into pieces: everything up to row 4's header in piece 0, row 4 split in three.
    pieces: list = []
    cur = ""
    for rid, row in out:
        if rid == "4":
            head_end = row.index(",") + 1
            cur += row[:head_end]
            pieces.append(cur)
            body = row[head_end:]
            third = len(body) // 3
            pieces.append(body[:third])
            pieces.append(body[third:2 * third])
            cur = body[2 * third:]
        elif isinstance(row, bytes):
            if cur:
                pieces.append(cur)
            pieces.append(row)
            cur = ""
        else:
            cur += row
    if cur:
        pieces.append(cur)
    if truncate:
        last = pieces[-1]
        pieces[-1] = last[:-truncate]
    if resplit:  # a different chunking of the same stream: the oracle must not care
        stream = b"".join(p if isinstance(p, bytes) else p.encode() for p in pieces)
        pieces = _chunk_bytes(stream, 777)
    return pieces


def _chunk_bytes(stream: bytes, size: int) -> list:
    """Split a stream into pieces; pieces that are not valid UTF-8 become [3,…] pushes."""
    pieces = []
    for k in range(0, len(stream), size):
        b = stream[k:k + size]
        try:
            pieces.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            pieces.append(b)
    return pieces


def stream_of(pieces) -> bytes:
    return b"".join(p if isinstance(p, bytes) else p.encode("utf-8") for p in pieces)


def original_page() -> bytes:
    u = urls_for(None, None)
    return page(flight_pieces(u), u)


def rewritten_page(scheme, host, **kw) -> bytes:
    u = urls_for(scheme, host)
    for k, v in kw.pop("urls", {}).items():
        u[k] = v
    return page(flight_pieces(u, **kw), u)


def check(orig, new, scheme, host, **kw) -> fo.Report:
    return fo.compare(orig, new, A, scheme, host, **kw)


# ------------------------------------------------------------------------------------------
# Extraction and parsing
# ------------------------------------------------------------------------------------------


def test_extract_decodes_pushes_and_base64():
    u = urls_for(None, None)
    pieces = flight_pieces(u)
    ex = fo.extract_flight(page(pieces, u))
    assert ex.errors == []
    assert ex.stream == stream_of(pieces)
    assert [p.kind for p in ex.pushes] == [0] + [3 if isinstance(p, bytes) else 1 for p in pieces]
    assert ex.flight_scripts == len(pieces) + 1


def test_rows_parse_with_t_row_split_across_three_scripts():
    u = urls_for(None, None)
    pieces = flight_pieces(u)
    # the T row's header ends one script and its text fills the next two and part of a third
    assert pieces[0].endswith(",") and ":T" in pieces[0].rsplit("\n", 1)[-1]
    rows = fo.parse_rows(fo.extract_flight(page(pieces, u)).stream)
    assert [r.id_text for r in rows] == ["0", "2", "3", "4", "5", "6", "a", "1f", "b"]
    assert [r.tag for r in rows] == ["", "H", "I", "T", "", "A", "E", "T", ""]
    t = rows[3]
    text = long_text(u).encode("utf-8")
    assert t.payload == text and t.length == len(text)
    assert t.length > len(long_text(u))  # multibyte: bytes, not characters
    assert rows[5].payload == BINARY_PAYLOAD and rows[5].is_binary
    assert rows[1].payload.startswith(b'L["HTTP://')


def test_multibyte_byte_lengths():
    text = "é✓😀<"
    stream = t_row("1", text).encode()
    assert stream.startswith(b"1:Ta,")  # 2 + 3 + 4 + 1 bytes
    html = page([stream.decode()], urls_for(None, None))
    assert b"\\u003c" in html and b"<\"])" not in html
    rows = fo.parse_rows(fo.extract_flight(html).stream)
    assert rows[0].payload.decode() == text


def test_json_string_decoding_is_strict():
    assert fo.decode_json_string(r"a\"\\\/\b\f\n\r\t\u00e9\u003c") == 'a"\\/\b\f\n\r\té<'
    assert fo.decode_json_string(r"\ud83d\ude00") == "😀"
    # lone surrogates become U+FFFD, as TextEncoder does
    assert fo.decode_json_string(r"x\ud83dy").encode() == b"x\xef\xbf\xbdy"
    assert fo.decode_json_string(r"\ude00\ud83d").encode() == b"\xef\xbf\xbd" * 2
    for bad, code in ((r"\x41", "string-syntax"), ("\\'", "string-syntax"), (r"\u12", "string-syntax"),
                      ("a<b", "raw-lt"), ("a\u2028", "raw-line-separator"), ("a\nb", "string-syntax")):
        with pytest.raises(fo.FlightError) as e:
            fo.decode_json_string(bad)
        assert e.value.code == code, bad


def test_surrogate_pair_split_across_pushes_is_two_replacement_characters():
    html = (b"<script>(self.__next_f=self.__next_f||[]).push([0])</script>"
            b'<script>self.__next_f.push([1,"0:T20,\\ud83d"])</script>'
            b'<script>self.__next_f.push([1,"\\ude00\\ud83d\\ude00"])</script>')
    ex = fo.extract_flight(html)
    assert ex.errors == []
    rows = fo.parse_rows(ex.stream, allow_incomplete=True)
    assert rows[0].payload == b"\xef\xbf\xbd" * 2 + "😀".encode()
    assert not rows[0].complete


def test_a_character_cut_between_two_push_strings_is_an_error_not_joined():
    # Each push string is its own JavaScript string: the browser decodes each one on its own,
    # so a character whose bytes are split between two strings reaches React as two U+FFFD
    # (and a T row around it outgrows its length). The oracle must not join the strings' raw
    # bytes before decoding them.
    text = "A" * 3 + "\u2713" * 4
    head = f"1:T{len(text.encode()):x},".encode()
    raw = text.encode()
    boot = b"<script>(self.__next_f=self.__next_f||[]).push([0])</script>"

    def two_pushes(cut: int) -> bytes:
        return (boot + b'<script>self.__next_f.push([1,"' + head + raw[:cut] + b'"])</script><p>x</p>'
                b'<script>self.__next_f.push([1,"' + raw[cut:] + b'"])</script>')

    whole_chars = [i for i in range(len(raw) + 1) if i == len(raw) or raw[i] & 0xC0 != 0x80]
    for cut in range(len(raw) + 1):
        ex = fo.extract_flight(two_pushes(cut))
        if cut in whole_chars:
            assert ex.errors == [], cut
            assert fo.parse_rows(ex.stream)[0].payload == raw
        else:
            assert {e.code for e in ex.errors} == {"script-encoding"}, cut
            r = check(two_pushes(len(raw)), two_pushes(cut), "https", "p.test")
            assert "script-encoding" in r.codes, cut


def test_newline_rows_and_tags():
    s = b'0:{"a":1}\n1:["$","div",null,{}]\n2:HL["x","style"]\n3:I[1,[],"y"]\n4:T3,abc5:D{"a":1}\n'
    rows = fo.parse_rows(s)
    assert [(r.id_text, r.tag, r.payload) for r in rows] == [
        ("0", "", b'{"a":1}'), ("1", "", b'["$","div",null,{}]'), ("2", "H", b'L["x","style"]'),
        ("3", "I", b'[1,[],"y"]'), ("4", "T", b"abc"), ("5", "D", b'{"a":1}')]


@pytest.mark.parametrize("stream,code", [
    (b"0:T5,abc", "truncated"),
    (b'0:{"a":1}', "truncated"),
    (b"0:T3,abcX:[]\n", "bad-id"),
    (b"0:T3,abcd\n", "bad-id"),  # declared 3, 4 bytes follow: misframed
    (b"G:[]\n", "bad-id"),
    (b"A:[]\n", "bad-id"),  # ids are lowercase hex, as React writes and reads them
    (b":[]\n", "bad-id"),
    (b"0:TA,abcdefghij", "bad-length"),
    (b"0:T,", "bad-length"),
    (b"0:T2,\xc3(", "invalid-utf8"),
])
def test_parse_rejects(stream, code):
    with pytest.raises(fo.FlightError) as e:
        fo.parse_rows(stream)
    assert e.value.code == code


def test_misframing_message_names_the_previous_length_row():
    with pytest.raises(fo.FlightError) as e:
        fo.parse_rows(b"0:T3,abcd\n1:[]\n")
    assert "declared length 3" in e.value.message


def test_allow_incomplete():
    rows = fo.parse_rows(b"0:T5,abc", allow_incomplete=True)
    assert rows[0].payload == b"abc" and not rows[0].complete


def test_text_x_component_body_is_the_stream():
    u = urls_for(None, None)
    stream = stream_of(flight_pieces(u))
    assert fo.sniff_kind(stream) == "flight"
    rows = fo.parse_rows(stream)
    assert len(rows) == 9


def test_scripts_that_mention_next_f_but_do_not_match_are_errors():
    boot = b"<script>(self.__next_f=self.__next_f||[]).push([0])</script>"
    cases = {
        b"<script>self.__next_f.push([1,'single'])</script>": "script-syntax",
        b'<script>self.__next_f.push([1, "space"])</script>': "script-syntax",
        b'<script>self.__next_f.push([1,"a"]);foo()</script>': "script-syntax",
        b'<script>self.__next_f.push([4,"a"])</script>': "script-syntax",
        b'<script>self.__next_f.push([1,"a"])': "unclosed-script",
        b'<script type="application/json">self.__next_f.push([1,"a"])</script>': "script-syntax",
        b'<script>self.__next_f.push([3,"not base64!"])</script>': "bad-base64",
        b'<script>self.__next_f.push([1,"a<b"])</script>': "raw-lt",
        b'<script>self.__next_f.push([1,"\xe2\x80\xa8"])</script>': "raw-line-separator",
        b'<script>console.log(self.__next_f)</script>': "script-syntax",
    }
    for script, code in cases.items():
        ex = fo.extract_flight(boot + script)
        assert [e.code for e in ex.errors] == [code], script
    ex = fo.extract_flight(b'<script>self.__next_f.push([1,"0:[]\\n"])</script>')
    assert [e.code for e in ex.errors] == ["missing-bootstrap"]


def test_script_forms_that_are_accepted():
    html = (b'<SCRIPT data-x=">" nonce=\'n\'>(self.__next_f=self.__next_f||[]).push([0]);'
            b'self.__next_f.push([2,{"a":"\\u003c"}])</SCRIPT>'
            b'<!-- <script>self.__next_f.push([1,"ignored"])</script> -->'
            b'<textarea><script>self.__next_f.push([1,"ignored"])</script></textarea>'
            b'<script async nonce="abc">\nself.__next_f.push([1,"0:[\\"x\\"]\\n"])\n</script >'
            b'<script>self.__next_f.push([1,""])</script>')
    ex = fo.extract_flight(html)
    assert ex.errors == []
    assert ex.stream == b'0:["x"]\n'
    assert [p.kind for p in ex.pushes] == [0, 2, 1, 1]


# ------------------------------------------------------------------------------------------
# The rule itself
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("src,want", [
    (f"https://{A}/x", "S://B/x"),
    (f"HtTpS://{A}", "S://B"),
    (f"http://{A}?q", "S://B?q"),
    (f"//{A}/x", "//B/x"),
    (f"ftp://{A}/x", "ftp://B/x"),
    (f"https:\\/\\/{A}\\/x", "S:\\/\\/B\\/x"),
    (f"HTTP:\\/\\/{A}", "S:\\/\\/B"),
    (f"\\/\\/{A}\"", "\\/\\/B\""),
    (f"//{A}.evil.test", None),
    (f"//{A}:8443", None),
    (f"//{A}@evil.test", None),
    (f"//{A}_x", None),
    (f"//{A}-x", None),
    (f"//x{A}", None),
    (f"https://user@{A}", None),
    (f"{A}/x", None),
    (f"https:/\\/{A}", None),
    (f"//{A}%2F", "//B%2F"),
    (f"//{A}//{A}", "//B//B"),
])
def test_rule(src, want):
    got, n = fo.apply_rule(src.encode(), A, "S", "B")
    if want is None:
        assert got == src.encode() and n == 0
    else:
        assert got == want.encode() and n >= 1


# ------------------------------------------------------------------------------------------
# Correct rewrites pass
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_correct_html_rewrite_passes(scheme, host):
    orig = original_page()
    new = rewritten_page(scheme, host)
    r = check(orig, new, scheme, host, check_html=True)
    assert r.ok, r.text()
    assert r.rows == 9 and r.t_rows == 2 and r.t_rows_resized == 2 and r.binary_rows == 1
    assert r.urls == FLIGHT_URLS
    assert r.urls_outside == 3  # the css link, the script src and the <a href>
    assert r.original_stream_bytes != r.rewritten_stream_bytes


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_correct_flight_rewrite_passes(scheme, host):
    orig = stream_of(flight_pieces(urls_for(None, None)))
    new = stream_of(flight_pieces(urls_for(scheme, host)))
    r = check(orig, new, scheme, host, kind="flight")
    assert r.ok, r.text()
    assert r.urls == FLIGHT_URLS and r.t_rows_resized == 2


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_rechunked_flight_scripts_pass_the_stream_check_but_not_the_html_check(scheme, host):
    orig = original_page()
    new = rewritten_page(scheme, host, resplit=True)
    assert check(orig, new, scheme, host).ok
    r = check(orig, new, scheme, host, check_html=True)
    assert r.codes == ["html-mismatch"]


def test_identity_with_nothing_to_rewrite():
    doc = original_page()
    r = check(doc, doc, "https", "unrelated.example")
    assert not r.ok  # the origin URLs were left: that is a leak
    plain = doc.replace(A.encode(), b"x" * len(A))  # same length: the T lengths stay right
    r = check(plain, plain, "https", "p.test", check_html=True)
    assert r.ok, r.text()
    assert r.urls == 0


# ------------------------------------------------------------------------------------------
# Broken rewrites fail, for the right reason
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_t_length_not_updated(scheme, host):
    orig_len = len(long_text(urls_for(None, None)).encode())
    new_len = len(long_text(urls_for(scheme, host)).encode())
    assert orig_len != new_len
    r = check(original_page(), rewritten_page(scheme, host, t_declared=orig_len), scheme, host)
    assert r.codes[0] == "length-mismatch", r.text()
    msg = r.problems[0].message
    assert "row #3 (id 4, tag T)" in msg
    assert f"declared length {orig_len} (0x{orig_len:x}), expected {new_len} (0x{new_len:x})" in msg
    assert "only the length header is wrong" in msg
    assert "<script> #" in msg  # located in the document


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_t_length_not_updated_flight_kind(scheme, host):
    orig_len = len(long_text(urls_for(None, None)).encode())
    orig = stream_of(flight_pieces(urls_for(None, None)))
    new = stream_of(flight_pieces(urls_for(scheme, host), t_declared=orig_len))
    r = check(orig, new, scheme, host, kind="flight")
    assert r.codes[0] == "length-mismatch", r.text()
    # standalone, the stream is misframed
    with pytest.raises(fo.FlightError):
        fo.parse_rows(new)


@pytest.mark.parametrize("scheme,host", TARGETS)
@pytest.mark.parametrize("spot,row", [("https", "0"), ("rel", "3"), ("esc_rel", "5"), ("t_rel", "4"),
                                      ("t_end", "1f")])
def test_fail_url_left_unrewritten(scheme, host, spot, row):
    new = rewritten_page(scheme, host, urls={spot: urls_for(None, None)[spot]})
    r = check(original_page(), new, scheme, host)
    first = r.problems[0]
    assert first.code == "url-not-rewritten", r.text()
    assert f"(id {row}," in first.message
    if row in ("4", "1f"):  # a T row whose length matches its (wrong) text
        assert "declared length matches the row's own content" in first.message
    assert "leak" in r.codes


@pytest.mark.parametrize("scheme,host", TARGETS)
@pytest.mark.parametrize("spot,wrong,row", [("evil", "//{B}.evil.test", "4"), ("port", "//{B}:8443", "5")])
def test_fail_url_rewritten_that_should_not_be(scheme, host, spot, wrong, row):
    new = rewritten_page(scheme, host, urls={spot: wrong.format(B=host)})
    r = check(original_page(), new, scheme, host)
    assert r.codes == ["url-wrongly-rewritten"], r.text()
    assert f"(id {row}," in r.problems[0].message


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_url_wrongly_rewritten_in_t_row_same_length(scheme, host):
    # the wrong rewrite and the right length: detected as a payload difference
    B2 = "x" * len(A)  # same length as the origin, so the T length stays what a right rewrite gives
    u = urls_for(scheme, host)
    good = long_text(u)
    bad = good.replace(f"//{A}.evil.test", f"//{B2}.evil.test")
    assert bad != good
    stream_good = stream_of(flight_pieces(u))
    stream_bad = stream_good.replace(good.encode(), bad.encode())  # same byte length: header stays valid
    assert stream_bad != stream_good
    orig = stream_of(flight_pieces(urls_for(None, None)))
    r = check(orig, stream_bad, scheme, host, kind="flight")
    assert r.codes[0] == "url-wrongly-rewritten", r.text()
    assert "(id 4, tag T)" in r.problems[0].message


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_dropped_row(scheme, host):
    r = check(original_page(), rewritten_page(scheme, host, drop={"3"}), scheme, host)
    assert r.codes[0] == "dropped-row", r.text()
    assert "row #2 (id 3) is missing" in r.problems[0].message


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_dropped_last_row(scheme, host):
    r = check(original_page(), rewritten_page(scheme, host, drop={"b"}), scheme, host)
    assert r.codes == ["missing-rows"], r.text()


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_truncated_stream(scheme, host):
    r = check(original_page(), rewritten_page(scheme, host, truncate=10), scheme, host)
    assert r.codes[0] == "truncated", r.text()
    assert "id b" in r.problems[0].message
    orig = stream_of(flight_pieces(urls_for(None, None)))
    new = stream_of(flight_pieces(urls_for(scheme, host)))
    t = fo.parse_rows(new)[3]
    assert t.tag == "T"
    for end in (t.payload_offset + 10, t.payload_offset - 3, t.end - 1, len(new) - 1):
        r = check(orig, new[:end], scheme, host, kind="flight")
        assert r.codes == ["truncated"], (end, r.text())
    r = check(orig, new[:t.end], scheme, host, kind="flight")  # cut exactly after the T row
    assert r.codes == ["missing-rows"], r.text()


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_raw_lt_in_push_string(scheme, host):
    new = rewritten_page(scheme, host)
    assert new.count(b"\\u003c") >= 1
    bad = new.replace(b"\\u003c", b"<", 1)
    r = check(original_page(), bad, scheme, host)
    assert r.codes == ["raw-lt"], r.text()
    assert r.problems[0].side == "rewritten"
    assert "line 1" in r.problems[0].message


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_row_id_changed(scheme, host):
    r = check(original_page(), rewritten_page(scheme, host, rename={"5": "15"}), scheme, host)
    assert r.codes[0] == "id-mismatch", r.text()
    assert "expected id 5, found id 15" in r.problems[0].message


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_binary_row_rewritten(scheme, host):
    orig = stream_of(flight_pieces(urls_for(None, None)))
    new = stream_of(flight_pieces(urls_for(scheme, host)))
    bad_payload = BINARY_PAYLOAD.replace(A.encode(), host.encode())
    bad_row = b"6:A" + format(len(bad_payload), "x").encode() + b"," + bad_payload
    good_row = b"6:A" + format(len(BINARY_PAYLOAD), "x").encode() + b"," + BINARY_PAYLOAD
    r = check(orig, new.replace(good_row, bad_row), scheme, host, kind="flight")
    assert r.codes == ["binary-modified"], r.text()
    same = BINARY_PAYLOAD.replace(A.encode(), b"Z" * len(A))
    r = check(orig, new.replace(good_row, good_row.replace(BINARY_PAYLOAD, same)), scheme, host, kind="flight")
    assert r.codes == ["binary-modified"], r.text()


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_noncanonical_length(scheme, host):
    new = stream_of(flight_pieces(urls_for(scheme, host)))
    n = len(long_text(urls_for(scheme, host)).encode())
    padded = new.replace(f"4:T{n:x},".encode(), f"4:T0{n:x},".encode())
    orig = stream_of(flight_pieces(urls_for(None, None)))
    r = check(orig, padded, scheme, host, kind="flight")
    assert r.codes == ["noncanonical-length"], r.text()


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_fail_html_outside_flight_not_rewritten(scheme, host):
    new = rewritten_page(scheme, host)
    bad = new.replace(f'href="{scheme}://{host}/news"'.encode(), f'href="https://{A}/news"'.encode())
    assert bad != new
    assert check(original_page(), bad, scheme, host).ok  # not the Flight check's business
    r = check(original_page(), bad, scheme, host, check_html=True)
    assert r.codes == ["html-mismatch"], r.text()
    assert f"https://{A}/news".encode() in bad[:200] or "line 1" in r.problems[0].message


def test_fail_invalid_original_is_reported_as_original():
    u = urls_for(None, None)
    orig = page(flight_pieces(u, t_declared=5), u)
    r = check(orig, orig, "https", "p.test")
    assert r.problems[0].side == "original"


def test_fail_invalid_utf8_t_row_via_base64():
    boot = b"<script>(self.__next_f=self.__next_f||[]).push([0])</script>"
    html = boot + b'<script>self.__next_f.push([3,"' + base64.b64encode(b"0:T2,\xc3(") + b'"])</script>'
    r = check(html, html, "https", "p.test")
    assert r.codes == ["invalid-utf8"]


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------


def run_cli(*args):
    return subprocess.run([sys.executable, str(HERE / "flight_oracle.py"), *args],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("scheme,host", TARGETS)
def test_cli_check(tmp_path, scheme, host):
    o = tmp_path / "orig.html"
    o.write_bytes(original_page())
    good = tmp_path / "good.html"
    good.write_bytes(rewritten_page(scheme, host))
    orig_len = len(long_text(urls_for(None, None)).encode())
    bad = tmp_path / "bad.html"
    bad.write_bytes(rewritten_page(scheme, host, t_declared=orig_len))
    common = ["--origin", A, "--scheme", scheme, "--host", host]
    p = run_cli("check", "--original", str(o), "--rewritten", str(good), *common, "--check-html")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("OK html: 9 rows (2 T, 2 T resized, 1 binary), 9 URLs substituted")
    p = run_cli("check", "--original", str(o), "--rewritten", str(bad), *common, "--kind", "html")
    assert p.returncode == 1
    assert "[length-mismatch]" in p.stdout and "row #3 (id 4, tag T)" in p.stdout


def test_cli_rows(tmp_path):
    f = tmp_path / "page.html"
    f.write_bytes(original_page())
    p = run_cli("rows", str(f))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "id=4 tag=T len=0x" in p.stdout and "id=6 tag=A" in p.stdout
    s = tmp_path / "rsc.txt"
    s.write_bytes(b"0:T5,abc")
    assert run_cli("rows", str(s)).returncode == 1
    p = run_cli("rows", str(s), "--allow-incomplete")
    assert p.returncode == 0 and "PARTIAL" in p.stdout


# ------------------------------------------------------------------------------------------
# The fixture hook (test_rewriter_output.py) itself
# ------------------------------------------------------------------------------------------

REFERENCE_REWRITER = r"""
import base64, json, sys
sys.path.insert(0, sys.argv[1])
import flight_oracle as fo
ctype, origin, scheme, host = sys.argv[2:6]
body = sys.stdin.buffer.read()
def rows(s):
    out = b""
    for r in fo.parse_rows(s):
        p = r.payload if r.is_binary else fo.apply_rule(r.payload, origin, scheme, host)[0]
        out += fo.serialize_row(r.id_text, r.tag, p, r.is_length_prefixed)
    return out
if ctype.startswith("text/x-component"):
    sys.stdout.buffer.write(rows(body))
    sys.exit()
ex = fo.extract_flight(body)
new = rows(ex.stream)
out, last, first = b"", 0, True
for p in ex.pushes:
    if p.literal is None:
        continue
    s, e = p.literal
    out += fo.apply_rule(body[last:s], origin, scheme, host)[0]
    if first:  # the whole new stream goes into the first push, the others are left empty
        text = json.dumps(new.decode(), ensure_ascii=False)[1:-1]
        for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                     ("\u2029", "\\u2029")):
            text = text.replace(a, b)
        out += text.encode() if p.kind == 1 else base64.b64encode(new)
        first = False
    last = e
sys.stdout.buffer.write(out + fo.apply_rule(body[last:], origin, scheme, host)[0])
"""


def run_hook(tmp_path, rewrite, fixtures):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("TS_REWRITE", "TS_FIXTURES_DIR")}
    if rewrite is not None:
        env["TS_REWRITE"] = rewrite
    env["TS_FIXTURES_DIR"] = str(fixtures)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           str(HERE / "test_rewriter_output.py")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def test_hook_skips_without_ts_rewrite_and_fails_without_fixtures(tmp_path):
    p = run_hook(tmp_path, None, tmp_path / "none")
    assert p.returncode == 0 and "TS_REWRITE is not set" in p.stdout and "skipped" in p.stdout, p.stdout
    p = run_hook(tmp_path, "cat", tmp_path / "none")
    assert p.returncode == 1 and "fixtures are missing" in p.stdout, p.stdout


def test_hook_passes_a_correct_rewriter_and_fails_cat(tmp_path):
    fx = tmp_path / "fx"
    fx.mkdir()
    u = urls_for(None, None)
    pieces = flight_pieces(u)
    (fx / "page.body").write_bytes(page([p for p in pieces if isinstance(p, str)], u))
    (fx / "rsc.body").write_bytes(stream_of(pieces))
    (fx / "index.json").write_text(json.dumps([
        {"name": "page", "content_type": "text/html; charset=utf-8"},
        {"name": "rsc", "content_type": "text/x-component"}]))
    ref = tmp_path / "ref.py"
    ref.write_text(REFERENCE_REWRITER)
    p = run_hook(tmp_path, f"{sys.executable} {ref} {HERE}", fx)
    assert p.returncode == 0 and "failed" not in p.stdout, p.stdout
    p = run_hook(tmp_path, "cat", fx)
    assert p.returncode == 1 and "test_some_t_row_was_resized" in p.stdout, p.stdout
