#!/usr/bin/env python3
"""An independent, strict oracle for rewriting Next.js Flight (React Server Components) payloads.

The service rewrites origin URLs inside the Flight stream that Next.js embeds in its pages
(``self.__next_f.push([1,"…"])`` scripts) and serves as ``text/x-component``. Some Flight rows
are length-prefixed (``<id>:T<hex byte length>,<bytes>``), so a rewrite that changes a URL's
length must also fix the row header. This module decides whether a rewrite is correct. It is
written from the format description alone (docs/url-rule.md, docs/nextjs.md) and does
not share code with the rewriter.

Python 3 standard library only. Usage::

    flight_oracle.py check --original ORIG --rewritten OUT --origin A --scheme S --host B \
        [--kind html|flight] [--check-html]
    flight_oracle.py rows FILE [--kind html|flight] [--allow-incomplete] [--full]

``check`` exits 0 when the rewrite is correct and 1 (with one line per problem) when it is not.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import bisect
import json
import re
import sys
from dataclasses import dataclass, field

# ---------------------------------------------------------------------------------------------
# Format constants
# ---------------------------------------------------------------------------------------------

#: Row tags whose row is ``<tag><hex byte length>,<exactly that many bytes>`` (no newline).
LENGTH_TAGS = frozenset(b"TAOoUSsLlGgMmV")
#: Length-prefixed tags that carry binary typed-array data: never rewritten, byte-identical.
BINARY_TAGS = LENGTH_TAGS - {ord("T")}
#: Tag bytes that are consumed as a tag of a newline-terminated row. Any other byte after
#: ``<id>:`` starts the row's data (a row with no tag, e.g. ``0:{"a":1}``).
NEWLINE_TAGS = (frozenset(range(ord("A"), ord("Z") + 1)) - LENGTH_TAGS) | frozenset(b"#rx")

_HEX = frozenset(b"0123456789abcdef")
#: Bytes that can continue an authority: after the origin authority they block a rewrite.
AUTHORITY_CONTINUATION = frozenset(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:@"
)

_WS = frozenset(b" \t\n\f\r")
#: Elements whose content the HTML tokenizer reads as raw text up to the matching end tag.
_RAW_TEXT = {
    b"script", b"style", b"textarea", b"title", b"xmp", b"iframe", b"noembed", b"noframes",
    b"noscript",
}
_TAG_NAME = re.compile(rb"[A-Za-z][^\t\n\f\r />]*")
_JS_TYPES = {
    b"", b"text/javascript", b"application/javascript", b"module", b"text/ecmascript",
    b"application/ecmascript", b"text/jscript", b"application/x-javascript",
}
_BOOT_PREFIX = b"(self.__next_f=self.__next_f||[]).push("
_PUSH_PREFIX = b"self.__next_f.push("


class FlightError(Exception):
    """A violation of the format. ``code`` is a stable, short machine-readable reason."""

    def __init__(self, code: str, message: str, offset: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


# ---------------------------------------------------------------------------------------------
# The URL rule
# ---------------------------------------------------------------------------------------------


def _prefix_at(data: bytes, i: int) -> tuple[int, str, bool] | None:
    """The rule prefix ending right before ``data[i]``: (start, 'scheme'|'relative', escaped)."""
    if i >= 2 and data[i - 2:i] == b"//":
        for scheme in (b"https:", b"http:"):
            start = i - 2 - len(scheme)
            if start >= 0 and data[start:i - 2].lower() == scheme:
                return start, "scheme", False
        return i - 2, "relative", False
    if i >= 4 and data[i - 4:i] == b"\\/\\/":
        for scheme in (b"https:", b"http:"):
            start = i - 4 - len(scheme)
            if start >= 0 and data[start:i - 4].lower() == scheme:
                return start, "scheme", True
        return i - 4, "relative", True
    return None


def rule_matches(data: bytes, origin: bytes):
    """Yield (prefix start, origin start, origin end, prefix kind, escaped) for every
    occurrence the URL rule rewrites, left to right, non-overlapping."""
    last = 0
    i = data.find(origin)
    while i != -1:
        end = i + len(origin)
        if end == len(data) or data[end] not in AUTHORITY_CONTINUATION:
            p = _prefix_at(data, i)
            if p is not None and p[0] >= last:
                yield p[0], i, end, p[1], p[2]
                last = end
                i = data.find(origin, end)
                continue
        i = data.find(origin, i + 1)


def apply_rule(data: bytes, origin: str, scheme: str, host: str) -> tuple[bytes, int]:
    """Apply the one URL rule to ``data``; return (rewritten bytes, substitutions)."""
    a = origin.encode("ascii")
    s = scheme.encode("ascii")
    b = host.encode("utf-8")
    out = bytearray()
    last = 0
    count = 0
    for start, _i, end, kind, escaped in rule_matches(data, a):
        sep = b"\\/\\/" if escaped else b"//"
        out += data[last:start]
        out += (s + b":" + sep + b) if kind == "scheme" else (sep + b)
        last = end
        count += 1
    out += data[last:]
    return bytes(out), count


def leaks(data: bytes, origin: str, scheme: str, host: str) -> list[int]:
    """Offsets of origin occurrences that the rule would still rewrite (to something else)."""
    found = []
    a = origin.encode("ascii")
    for start, i, end, _kind, _esc in rule_matches(data, a):
        seg = data[start:end]
        if apply_rule(seg, origin, scheme, host)[0] != seg:
            found.append(i)
    return found


# ---------------------------------------------------------------------------------------------
# Flight rows
# ---------------------------------------------------------------------------------------------


@dataclass
class Row:
    index: int
    offset: int  # stream offset of the row's first byte
    id_text: str
    tag: str  # '' for a row without a tag letter
    length: int | None  # declared length of a length-prefixed row
    length_text: str | None
    payload_offset: int
    payload: bytes
    end: int  # stream offset just past the row (past the '\n' for newline rows)
    complete: bool = True

    @property
    def is_length_prefixed(self) -> bool:
        return self.length is not None

    @property
    def is_binary(self) -> bool:
        return self.is_length_prefixed and self.tag != "T"

    @property
    def id(self) -> int:
        return int(self.id_text, 16)

    def describe(self) -> str:
        kind = f"tag {self.tag}" if self.tag else "no tag"
        return f"row #{self.index} (id {self.id_text}, {kind}, stream offset {self.offset})"


def _show(b: bytes, limit: int = 60) -> str:
    r = repr(b[:limit])
    return r + ("…" if len(b) > limit else "")


def parse_row(stream: bytes, pos: int, index: int = 0, allow_incomplete: bool = False) -> Row:
    """Parse the row starting at ``pos``. Raises FlightError (code ``truncated`` when the
    stream ends inside the row, unless ``allow_incomplete``, which returns a partial row)."""
    n = len(stream)
    start = pos
    while pos < n and stream[pos] != 0x3A:  # ':'
        if stream[pos] not in _HEX:
            raise FlightError(
                "bad-id",
                f"row #{index} at stream offset {start}: byte {bytes([stream[pos]])!r} at offset "
                f"{pos} is not a lowercase hex digit of a row id (row starts {_show(stream[start:start + 40])})",
                pos,
            )
        pos += 1
    if pos >= n:
        if allow_incomplete:
            return Row(index, start, stream[start:pos].decode(), "", None, None, n, b"", n, False)
        raise FlightError(
            "truncated", f"row #{index} at stream offset {start}: stream ends inside the row id", start
        )
    id_text = stream[start:pos].decode("ascii")
    # React 19 writes hints with no id at all (`:HL[...]`); any other row needs one.
    if not id_text and not (pos + 1 < n and stream[pos + 1] == 0x48):  # 'H'
        raise FlightError("bad-id", f"row #{index} at stream offset {start}: empty row id", start)
    pos += 1  # ':'
    if pos >= n:
        if allow_incomplete:
            return Row(index, start, id_text, "", None, None, n, b"", n, False)
        raise FlightError(
            "truncated", f"row #{index} (id {id_text}) at stream offset {start}: stream ends after the id", start
        )
    tag_byte = stream[pos]
    if tag_byte in LENGTH_TAGS:
        tag = chr(tag_byte)
        pos += 1
        lstart = pos
        while pos < n and stream[pos] != 0x2C:  # ','
            if stream[pos] not in _HEX:
                raise FlightError(
                    "bad-length",
                    f"row #{index} (id {id_text}, tag {tag}) at stream offset {start}: byte "
                    f"{bytes([stream[pos]])!r} in the length is not a lowercase hex digit",
                    pos,
                )
            pos += 1
        if pos >= n:
            if allow_incomplete:
                return Row(index, start, id_text, tag, None, None, n, b"", n, False)
            raise FlightError(
                "truncated",
                f"row #{index} (id {id_text}, tag {tag}) at stream offset {start}: stream ends inside the length",
                start,
            )
        length_text = stream[lstart:pos].decode("ascii")
        if not length_text:
            raise FlightError(
                "bad-length", f"row #{index} (id {id_text}, tag {tag}) at stream offset {start}: empty length", lstart
            )
        length = int(length_text, 16)
        if length > 0x7FFFFFFF:
            raise FlightError(
                "bad-length",
                f"row #{index} (id {id_text}, tag {tag}): length {length_text} overflows the client's 32-bit counter",
                lstart,
            )
        pos += 1  # ','
        end = pos + length
        if end > n:
            if allow_incomplete:
                return Row(index, start, id_text, tag, length, length_text, pos, stream[pos:], n, False)
            raise FlightError(
                "truncated",
                f"row #{index} (id {id_text}, tag {tag}) at stream offset {start}: declares {length} "
                f"(0x{length_text}) bytes but only {n - pos} remain",
                start,
            )
        payload = stream[pos:end]
        if tag == "T":
            try:
                payload.decode("utf-8")
            except UnicodeDecodeError as e:
                raise FlightError(
                    "invalid-utf8",
                    f"row #{index} (id {id_text}, tag T): text is not valid UTF-8 at payload offset {e.start}",
                    pos + e.start,
                ) from None
        return Row(index, start, id_text, tag, length, length_text, pos, payload, end)
    tag = ""
    if tag_byte in NEWLINE_TAGS:
        tag = chr(tag_byte)
        pos += 1
    nl = stream.find(b"\n", pos)
    if nl == -1:
        if allow_incomplete:
            return Row(index, start, id_text, tag, None, None, pos, stream[pos:], n, False)
        raise FlightError(
            "truncated",
            f"row #{index} (id {id_text}) at stream offset {start}: newline row is not terminated "
            f"(stream ends after {_show(stream[start:], 80)})",
            start,
        )
    return Row(index, start, id_text, tag, None, None, pos, stream[pos:nl], nl + 1)


def parse_rows(stream: bytes, allow_incomplete: bool = False) -> list[Row]:
    """Parse the whole stream strictly. With ``allow_incomplete`` the last row may be partial
    (returned with ``complete=False``)."""
    rows: list[Row] = []
    pos = 0
    while pos < len(stream):
        try:
            row = parse_row(stream, pos, len(rows), allow_incomplete)
        except FlightError as e:
            prev = rows[-1] if rows else None
            if prev is not None and prev.is_length_prefixed and e.code in ("bad-id", "truncated"):
                e.message += (
                    f"; the previous {prev.describe()} declared length {prev.length} (0x{prev.length_text})"
                    " - if that length is wrong, the stream is misframed from there on"
                )
            raise
        rows.append(row)
        pos = row.end
    return rows


def serialize_row(row_id: str, tag: str, payload: bytes, length_prefixed: bool) -> bytes:
    head = row_id.encode("ascii") + b":" + tag.encode("ascii")
    if length_prefixed:
        return head + format(len(payload), "x").encode("ascii") + b"," + payload
    return head + payload + b"\n"


# ---------------------------------------------------------------------------------------------
# Extracting the Flight stream from HTML
# ---------------------------------------------------------------------------------------------


@dataclass
class Push:
    script_index: int  # index among all <script> elements
    script_offset: int  # document offset of '<script'
    kind: int  # 0, 1, 2 or 3
    data: bytes  # contribution to the Flight stream
    literal: tuple[int, int] | None  # document span of the string literal's contents ([1]/[3])
    stream_offset: int = 0


@dataclass
class Extraction:
    stream: bytes
    pushes: list[Push] = field(default_factory=list)
    flight_scripts: int = 0
    scripts: int = 0
    errors: list[FlightError] = field(default_factory=list)
    document: bytes = b""

    def locate(self, stream_offset: int) -> str:
        """Where a stream offset came from in the document."""
        data_pushes = [p for p in self.pushes if p.kind in (1, 3) and p.data]
        if not data_pushes:
            return ""
        starts = [p.stream_offset for p in data_pushes]
        k = bisect.bisect_right(starts, stream_offset) - 1
        if k < 0:
            return ""
        p = data_pushes[k]
        return (
            f" [in push #{self.pushes.index(p)} ([{p.kind},…]) of <script> #{p.script_index} at "
            f"document offset {p.script_offset}, line {line_of(self.document, p.script_offset)}, "
            f"{stream_offset - p.stream_offset} bytes into its chunk]"
        )

    def skeleton(self) -> tuple[bytes, list[tuple[int, int]]]:
        """The document with the contents of every [1]/[3] string literal removed, and the
        removed spans."""
        spans = sorted(p.literal for p in self.pushes if p.literal is not None)
        out = bytearray()
        last = 0
        for s, e in spans:
            out += self.document[last:s]
            last = e
        out += self.document[last:]
        return bytes(out), spans


def line_of(doc: bytes, offset: int) -> int:
    return doc.count(b"\n", 0, offset) + 1


def _parse_attrs(doc: bytes, k: int) -> tuple[dict[bytes, bytes], int]:
    """Attributes of a start tag from ``k`` (just after the tag name) to just past its '>'."""
    attrs: dict[bytes, bytes] = {}
    n = len(doc)
    while k < n:
        c = doc[k]
        if c in _WS or c == 0x2F:  # '/'
            k += 1
            continue
        if c == 0x3E:  # '>'
            return attrs, k + 1
        s = k
        k += 1
        while k < n and doc[k] not in _WS and doc[k] not in b"/>=":
            k += 1
        name = doc[s:k].lower()
        while k < n and doc[k] in _WS:
            k += 1
        value = b""
        if k < n and doc[k] == 0x3D:  # '='
            k += 1
            while k < n and doc[k] in _WS:
                k += 1
            if k < n and doc[k] in b"\"'":
                e = doc.find(doc[k:k + 1], k + 1)
                e = n if e == -1 else e
                value = doc[k + 1:e]
                k = e + 1
            else:
                s = k
                while k < n and doc[k] not in _WS and doc[k] != 0x3E:
                    k += 1
                value = doc[s:k]
        attrs.setdefault(name, value)
    return attrs, n


def _find_end_tag(doc: bytes, name: bytes, k: int) -> int:
    """Offset of the ``</name`` that ends a raw-text element (followed by space, '/' or '>')."""
    pat = re.compile(rb"</" + re.escape(name) + rb"(?=[\t\n\f\r />])", re.I)
    m = pat.search(doc, k)
    return -1 if m is None else m.start()


def decode_json_string(text: str, base: int = 0) -> str:
    """Decode the body of a JSON string literal (without the quotes) strictly, to a string in
    which escaped lone surrogates have already become U+FFFD (what TextEncoder does).

    ``base`` is only used for error offsets (a document offset of ``text[0]``)."""
    out: list[str] = []
    units: list[int] = []  # pending \\u escapes, joined into pairs at the end of a run

    def flush() -> None:
        i = 0
        while i < len(units):
            u = units[i]
            if 0xD800 <= u <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
                out.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
                i += 2
                continue
            out.append("\ufffd" if 0xD800 <= u <= 0xDFFF else chr(u))
            i += 1
        units.clear()

    simple = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
    i = 0
    n = len(text)

    def where(j: int) -> int:
        return base + len(text[:j].encode("utf-8", "surrogatepass"))

    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 >= n:
                raise FlightError("string-syntax", "string ends with a lone backslash", where(i))
            e = text[i + 1]
            if e == "u":
                hexd = text[i + 2:i + 6]
                if len(hexd) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexd):
                    raise FlightError("string-syntax", f"bad \\u escape {text[i:i + 6]!r}", where(i))
                units.append(int(hexd, 16))
                i += 6
                continue
            if e not in simple:
                raise FlightError(
                    "string-syntax", f"escape \\{e} is not valid in a JSON string", where(i)
                )
            flush()
            out.append(simple[e])
            i += 2
            continue
        flush()
        if c == "<":
            raise FlightError(
                "raw-lt", "raw '<' inside a Flight push string (must be written \\u003c)", where(i)
            )
        if c in "\u2028\u2029":
            raise FlightError(
                "raw-line-separator",
                f"raw U+{ord(c):04X} inside a Flight push string (must be written \\u{ord(c):04x})",
                where(i),
            )
        if ord(c) < 0x20:
            raise FlightError(
                "string-syntax", f"raw control character U+{ord(c):04X} inside a JSON string", where(i)
            )
        out.append(c)
        i += 1
    flush()
    return "".join(out)


def _string_literal(doc: bytes, k: int, end: int) -> tuple[int, int]:
    """``doc[k]`` is '"'. Return (contents start, contents end); the closing quote is at the end."""
    if k >= end or doc[k] != 0x22:
        raise FlightError("script-syntax", "expected a string literal", k)
    j = k + 1
    while j < end:
        c = doc[j]
        if c == 0x5C:  # backslash: UTF-8 continuation bytes are never '"' or '\\'
            j += 2
            continue
        if c == 0x22:
            return k + 1, j
        j += 1
    raise FlightError("script-syntax", "unterminated string literal", k)


def _decode_literal(doc: bytes, s: int, e: int) -> str:
    try:
        text = doc[s:e].decode("utf-8")
    except UnicodeDecodeError as err:
        raise FlightError("script-encoding", "push string is not valid UTF-8", s + err.start) from None
    return decode_json_string(text, s)


def _parse_flight_script(doc: bytes, cs: int, ce: int, script_index: int, script_offset: int) -> list[Push]:
    """Parse one script's text as a sequence of push statements. Raises FlightError."""
    while cs < ce and doc[cs] in _WS:
        cs += 1
    while ce > cs and doc[ce - 1] in _WS:
        ce -= 1
    pushes: list[Push] = []
    k = cs
    while True:
        if doc.startswith(_BOOT_PREFIX, k):
            k += len(_BOOT_PREFIX)
        elif doc.startswith(_PUSH_PREFIX, k):
            k += len(_PUSH_PREFIX)
        else:
            raise FlightError(
                "script-syntax",
                f"not a self.__next_f push statement: {_show(doc[k:ce], 50)}",
                k,
            )
        m = re.compile(rb"\[(0|[1-9][0-9]*)").match(doc, k, ce)
        if m is None:
            raise FlightError("script-syntax", f"push argument is not [<type>,…]: {_show(doc[k:ce], 30)}", k)
        kind = int(m.group(1))
        k = m.end()
        literal = None
        data = b""
        if kind == 0:
            pass
        elif kind in (1, 3):
            if not doc.startswith(b",", k):
                raise FlightError("script-syntax", f"[{kind},…] push without a string", k)
            s, e = _string_literal(doc, k + 1, ce)
            text = _decode_literal(doc, s, e)
            literal = (s, e)
            k = e + 1
            if kind == 1:
                data = text.encode("utf-8")
            else:
                try:
                    data = base64.b64decode(text.encode("ascii"), validate=True)
                except (binascii.Error, UnicodeEncodeError, ValueError):
                    raise FlightError("bad-base64", "[3,…] push string is not valid padded base64", s) from None
        elif kind == 2:
            if not doc.startswith(b",", k):
                raise FlightError("script-syntax", "[2,…] push without a value", k)
            try:
                rest = doc[k + 1:ce].decode("utf-8")
            except UnicodeDecodeError as err:
                raise FlightError("script-encoding", "[2,…] push is not valid UTF-8", k + 1 + err.start) from None
            try:
                _value, used = json.JSONDecoder().raw_decode(rest)
            except json.JSONDecodeError as err:
                raise FlightError("script-syntax", f"[2,…] value is not JSON: {err.msg}", k + 1) from None
            consumed = rest[:used]
            if "<" in consumed:
                raise FlightError("raw-lt", "raw '<' inside a [2,…] push", k + 1)
            k = k + 1 + len(consumed.encode("utf-8"))
        else:
            raise FlightError("script-syntax", f"unknown push type [{kind},…]", m.start())
        if not doc.startswith(b"])", k):
            raise FlightError("script-syntax", f"expected '])' after the push argument, found {_show(doc[k:ce], 20)}", k)
        k += 2
        pushes.append(Push(script_index, script_offset, kind, data, literal))
        if k < ce and doc[k] == 0x3B:  # ';'
            k += 1
        if k >= ce:
            return pushes


def extract_flight(doc: bytes) -> Extraction:
    """Find every Flight push script in an HTML document and concatenate its bytes."""
    ex = Extraction(stream=b"", document=doc)
    stream = bytearray()
    bootstrapped = False
    seen_data = False
    n = len(doc)
    i = 0
    while True:
        j = doc.find(b"<", i)
        if j == -1:
            break
        if doc.startswith(b"<!--", j):
            if doc.startswith(b"<!-->", j):
                i = j + 5
            elif doc.startswith(b"<!--->", j):
                i = j + 6
            else:
                e = doc.find(b"-->", j + 4)
                i = n if e == -1 else e + 3
            continue
        if doc.startswith(b"<!", j) or doc.startswith(b"<?", j):
            e = doc.find(b">", j)
            i = n if e == -1 else e + 1
            continue
        if doc.startswith(b"</", j):
            m = _TAG_NAME.match(doc, j + 2)
            if m is None:
                i = j + 2
                continue
            _attrs, i = _parse_attrs(doc, m.end())
            continue
        m = _TAG_NAME.match(doc, j + 1)
        if m is None:
            i = j + 1
            continue
        name = m.group().lower()
        attrs, k = _parse_attrs(doc, m.end())
        i = k
        if name == b"plaintext":
            break
        if name not in _RAW_TEXT:
            continue
        ce = _find_end_tag(doc, name, k)
        content_end = n if ce == -1 else ce
        if ce == -1:
            i = n
        else:
            e = doc.find(b">", ce)
            i = n if e == -1 else e + 1
        if name != b"script":
            continue
        script_index = ex.scripts
        ex.scripts += 1
        if b"__next_f" not in doc[k:content_end]:
            continue
        ex.flight_scripts += 1
        where = f"<script> #{script_index} at document offset {j} (line {line_of(doc, j)})"
        if ce == -1:
            ex.errors.append(FlightError("unclosed-script", f"{where} mentions __next_f but is never closed", j))
            continue
        typ = attrs.get(b"type", b"").strip().lower()
        if typ not in _JS_TYPES:
            ex.errors.append(FlightError("script-syntax", f"{where} has type={typ!r}: the browser will not run it", j))
            continue
        if b"src" in attrs:
            ex.errors.append(FlightError("script-syntax", f"{where} has a src attribute: its text is ignored", j))
            continue
        try:
            pushes = _parse_flight_script(doc, k, content_end, script_index, j)
        except FlightError as err:
            err.message = f"{where}: {err.message} (document offset {err.offset}, line {line_of(doc, err.offset or j)})"
            ex.errors.append(err)
            continue
        for p in pushes:
            if p.kind == 0:
                if seen_data:
                    ex.errors.append(FlightError(
                        "late-bootstrap", f"{where}: a [0] push after data pushes resets the client's buffer", j))
                bootstrapped = True
            elif p.kind in (1, 3):
                if not bootstrapped:
                    ex.errors.append(FlightError(
                        "missing-bootstrap", f"{where}: a [{p.kind},…] push before any [0] push", j))
                seen_data = True
                p.stream_offset = len(stream)
                stream += p.data
            ex.pushes.append(p)
    ex.stream = bytes(stream)
    return ex


def sniff_kind(body: bytes) -> str:
    return "html" if body.lstrip()[:1] == b"<" else "flight"


# ---------------------------------------------------------------------------------------------
# Comparing an original and a rewritten document
# ---------------------------------------------------------------------------------------------


@dataclass
class Problem:
    code: str
    message: str
    side: str = "rewritten"  # 'original' or 'rewritten'

    def __str__(self) -> str:
        return f"[{self.code}] ({self.side}) {self.message}"


@dataclass
class Report:
    kind: str
    problems: list[Problem] = field(default_factory=list)
    rows: int = 0
    t_rows: int = 0
    t_rows_resized: int = 0
    binary_rows: int = 0
    urls: int = 0
    urls_outside: int | None = None
    original_stream_bytes: int = 0
    rewritten_stream_bytes: int = 0
    original_bytes: int = 0
    rewritten_bytes: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def codes(self) -> list[str]:
        return [p.code for p in self.problems]

    def summary(self) -> str:
        outside = "" if self.urls_outside is None else f", {self.urls_outside} outside Flight"
        return (
            f"{'OK' if self.ok else 'FAIL'} {self.kind}: {self.rows} rows ({self.t_rows} T, "
            f"{self.t_rows_resized} T resized, {self.binary_rows} binary), {self.urls} URLs substituted "
            f"in Flight{outside}; Flight stream {self.original_stream_bytes} -> "
            f"{self.rewritten_stream_bytes} bytes; body {self.original_bytes} -> {self.rewritten_bytes} bytes"
        )

    def text(self) -> str:
        return "\n".join([self.summary()] + [str(p) for p in self.problems])


def first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for k in range(n):
        if a[k] != b[k]:
            return k
    return n


def _context(b: bytes, at: int, radius: int = 30) -> str:
    return repr(b[max(0, at - radius):at + radius])


def _classify_payload(expected: bytes, actual: bytes, origin: str) -> str:
    """Name a payload difference by the number of origin authorities on each side."""
    a = origin.encode()
    if actual.count(a) > expected.count(a):
        return "url-not-rewritten"
    if actual.count(a) < expected.count(a):
        return "url-wrongly-rewritten"
    return "payload-mismatch"


def _frames(stream: bytes, pos: int) -> bool:
    """Whether a row boundary at ``pos`` is plausible: the end, or a well-formed row starts."""
    if pos == len(stream):
        return True
    try:
        parse_row(stream, pos, allow_incomplete=True)
        return True
    except FlightError:
        return False


def _walk(report: Report, orig_rows: list[Row], expected: list[bytes], act: bytes,
          ex: Extraction | None, origin: str) -> bool:
    """Walk the rewritten stream row by row against the expected rows. Records the first
    problem and returns False on failure."""
    loc = ex.locate if ex is not None else (lambda _o: "")
    n = len(act)
    pos = 0
    for i, (orow, exp) in enumerate(zip(orig_rows, expected)):
        if pos >= n:
            missing = ", ".join(r.id_text for r in orig_rows[i:i + 8])
            report.problems.append(Problem(
                "missing-rows",
                f"rewritten stream ends at byte {n} before row #{i}; {len(orig_rows) - i} row(s) missing "
                f"(ids {missing}{'…' if len(orig_rows) - i > 8 else ''})"))
            return False
        try:
            arow = parse_row(act, pos, i)
        except FlightError as e:
            # (every earlier row, lengths included, already matched: the problem is in this row)
            report.problems.append(Problem(
                e.code, f"where row #{i} (id {orow.id_text}) was expected: {e.message}{loc(pos)}"))
            return False
        if arow.id_text != orow.id_text:
            if i + 1 < len(orig_rows) and arow.id_text == orig_rows[i + 1].id_text:
                code, what = "dropped-row", f"row #{i} (id {orow.id_text}) is missing (found the next row's id)"
            elif arow.id_text == orig_rows[i - 1].id_text if i > 0 else False:
                code, what = "extra-row", f"an extra row with id {arow.id_text} precedes row #{i}"
            else:
                code, what = "id-mismatch", f"row #{i}: expected id {orow.id_text}, found id {arow.id_text}"
            report.problems.append(Problem(code, f"{what} at stream offset {pos}{loc(pos)}"))
            return False
        if arow.tag != orow.tag or arow.is_length_prefixed != orow.is_length_prefixed:
            report.problems.append(Problem(
                "tag-mismatch",
                f"row #{i} (id {orow.id_text}): expected tag {orow.tag or '(none)'!r}, found "
                f"{arow.tag or '(none)'!r} at stream offset {pos}{loc(pos)}"))
            return False
        if orow.is_length_prefixed:
            want = len(exp)
            if arow.length != want:
                what = (f"row #{i} (id {orow.id_text}, tag {orow.tag}) at stream offset {pos}: declared length "
                        f"{arow.length} (0x{arow.length_text}), expected {want} (0x{want:x}); the original declared "
                        f"{orow.length} (0x{orow.length_text})")
                tail = act[arow.payload_offset:arow.payload_offset + want]
                if tail == exp:
                    report.problems.append(Problem("length-mismatch", (
                        f"{what} (the bytes that follow are the correct rewritten payload: only the length "
                        f"header is wrong){loc(pos)}")))
                    return False
                if _frames(act, arow.end):
                    # The row is consistent with its own length: its content is what is wrong.
                    d = first_difference(exp, arow.payload)
                    code = "binary-modified" if orow.is_binary else _classify_payload(exp, arow.payload, origin)
                    report.problems.append(Problem(code, (
                        f"{what}. The declared length matches the row's own content, which differs from the "
                        f"expected content at payload offset {d} (stream offset {arow.payload_offset + d}): "
                        f"expected {_context(exp, d)}, found {_context(arow.payload, d)}"
                        f"{loc(arow.payload_offset + d)}")))
                    return False
                report.problems.append(Problem("length-mismatch", f"{what}{loc(pos)}"))
                return False
            if arow.length_text != format(want, "x"):
                report.problems.append(Problem(
                    "noncanonical-length",
                    f"row #{i} (id {orow.id_text}): length written {arow.length_text!r}, React writes "
                    f"{want:x} (lowercase, no leading zeros){loc(pos)}"))
                return False
        if arow.payload != exp:
            d = first_difference(exp, arow.payload)
            if orow.is_binary:
                code = "binary-modified"
            else:
                code = _classify_payload(exp, arow.payload, origin)
            report.problems.append(Problem(
                code,
                f"row #{i} (id {orow.id_text}, tag {orow.tag or '(none)'}): payload differs at payload offset {d} "
                f"(stream offset {arow.payload_offset + d}); expected {_context(exp, d)}, found "
                f"{_context(arow.payload, d)}{loc(arow.payload_offset + d)}"))
            return False
        pos = arow.end
    if pos < n:
        try:
            extra = parse_row(act, pos, len(orig_rows), allow_incomplete=True)
            what = f"starting with a row with id {extra.id_text}"
        except FlightError:
            what = f"starting {_show(act[pos:pos + 40])}"
        report.problems.append(Problem(
            "extra-data", f"rewritten stream has {n - pos} bytes after the last expected row, {what}{loc(pos)}"))
        return False
    return True


def compare(original: bytes, rewritten: bytes, origin: str, scheme: str, host: str,
            kind: str | None = None, check_html: bool = False) -> Report:
    """Decide whether ``rewritten`` is ``original`` correctly rewritten under the URL rule."""
    kind = kind or sniff_kind(original)
    if kind not in ("html", "flight"):
        raise ValueError(f"kind must be html or flight, not {kind!r}")
    report = Report(kind, original_bytes=len(original), rewritten_bytes=len(rewritten))

    ex_o = ex_r = None
    if kind == "html":
        ex_o = extract_flight(original)
        ex_r = extract_flight(rewritten)
        for side, ex in (("original", ex_o), ("rewritten", ex_r)):
            for err in ex.errors:
                report.problems.append(Problem(err.code, err.message, side))
        if report.problems:
            return report
        s_o, s_r = ex_o.stream, ex_r.stream
    else:
        s_o, s_r = original, rewritten
    report.original_stream_bytes = len(s_o)
    report.rewritten_stream_bytes = len(s_r)

    try:
        orig_rows = parse_rows(s_o)
    except FlightError as e:
        report.problems.append(Problem(e.code, e.message + (ex_o.locate(e.offset or 0) if ex_o else ""), "original"))
        return report

    expected: list[bytes] = []
    for r in orig_rows:
        if r.is_binary:
            expected.append(r.payload)
            report.binary_rows += 1
            continue
        new, count = apply_rule(r.payload, origin, scheme, host)
        report.urls += count
        expected.append(new)
        if r.tag == "T":
            report.t_rows += 1
            if len(new) != len(r.payload):
                report.t_rows_resized += 1
    report.rows = len(orig_rows)

    walked = _walk(report, orig_rows, expected, s_r, ex_r, origin)

    # Leak check, independent of the comparison: no origin URL the rule would still rewrite
    # may remain in the rewritten stream's non-binary rows.
    try:
        act_rows = parse_rows(s_r, allow_incomplete=True)
        scopes = [(r.payload_offset, r.payload) for r in act_rows if not r.is_binary]
    except FlightError:
        # Misframed: scan the whole stream, minus the original binary payloads found in it.
        scopes = []
        last = 0
        for r in orig_rows:
            if r.is_binary and r.payload:
                k = s_r.find(r.payload, last)
                if k != -1:
                    scopes.append((last, s_r[last:k]))
                    last = k + len(r.payload)
        scopes.append((last, s_r[last:]))
    leaked = [base + off for base, data in scopes for off in leaks(data, origin, scheme, host)]
    if leaked:
        at = leaked[0]
        report.problems.append(Problem(
            "leak",
            f"{len(leaked)} origin URL(s) the rule rewrites remain in the rewritten Flight stream; first at "
            f"stream offset {at}: {_context(s_r, at)}{ex_r.locate(at) if ex_r else ''}"))

    if walked:
        want = b"".join(serialize_row(r.id_text, r.tag, e, r.is_length_prefixed) for r, e in zip(orig_rows, expected))
        if want != s_r:  # cannot happen if the walk is right; a guard for the guard
            d = first_difference(want, s_r)
            report.problems.append(Problem(
                "stream-mismatch", f"rewritten stream differs at byte {d}: expected {_context(want, d)}, "
                                   f"found {_context(s_r, d)}"))

    if check_html and kind == "html":
        _check_outside(report, ex_o, ex_r, origin, scheme, host)
    return report


def _check_outside(report: Report, ex_o: Extraction, ex_r: Extraction, origin: str, scheme: str, host: str) -> None:
    sk_o, _ = ex_o.skeleton()
    sk_r, spans_r = ex_r.skeleton()
    want, count = apply_rule(sk_o, origin, scheme, host)
    report.urls_outside = count
    if want == sk_r:
        return
    d = first_difference(want, sk_r)
    # map the skeleton offset back to a document offset in the rewritten document
    doc_off = d
    for s, e in spans_r:
        if s <= doc_off:
            doc_off += e - s
        else:
            break
    report.problems.append(Problem(
        "html-mismatch",
        f"the rewritten document outside the Flight push strings differs from the rule applied to the original "
        f"at document offset {doc_off} (line {line_of(ex_r.document, doc_off)}): expected {_context(want, d)}, "
        f"found {_context(sk_r, d)}"))


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as f:
        return f.read()


def _cmd_check(args: argparse.Namespace) -> int:
    original = _read(args.original)
    rewritten = _read(args.rewritten)
    report = compare(original, rewritten, args.origin, args.scheme, args.host, args.kind, args.check_html)
    print(report.summary())
    for p in report.problems:
        print(p)
    return 0 if report.ok else 1


def _cmd_rows(args: argparse.Namespace) -> int:
    body = _read(args.file)
    kind = args.kind or sniff_kind(body)
    ex = None
    if kind == "html":
        ex = extract_flight(body)
        print(f"# {ex.scripts} scripts, {ex.flight_scripts} Flight scripts, {len(ex.pushes)} pushes, "
              f"stream {len(ex.stream)} bytes")
        for err in ex.errors:
            print(f"error: {err}")
        stream = ex.stream
    else:
        stream = body
    status = 0
    try:
        rows = parse_rows(stream, allow_incomplete=args.allow_incomplete)
    except FlightError as e:
        print(f"error: {e}{ex.locate(e.offset or 0) if ex else ''}")
        return 1
    limit = None if args.full else 100
    for r in rows:
        length = f" len=0x{r.length_text}({r.length})" if r.is_length_prefixed else ""
        flag = "" if r.complete else " PARTIAL"
        shown = r.payload if limit is None else r.payload[:limit]
        more = "" if limit is None or len(r.payload) <= limit else f"…(+{len(r.payload) - limit})"
        print(f"#{r.index} @{r.offset} id={r.id_text} tag={r.tag or '-'}{length} bytes={len(r.payload)}{flag} "
              f"{shown!r}{more}")
    if ex is not None and ex.errors:
        status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="decide whether a rewrite is correct")
    c.add_argument("--original", required=True)
    c.add_argument("--rewritten", required=True)
    c.add_argument("--origin", required=True, help="origin authority, e.g. origin.demo-publisher.example")
    c.add_argument("--scheme", required=True, help="target scheme, e.g. https")
    c.add_argument("--host", required=True, help="target authority, e.g. www.example.com:8443")
    c.add_argument("--kind", choices=("html", "flight"), help="default: sniffed from the original")
    c.add_argument("--check-html", action="store_true",
                   help="also require the HTML outside the Flight push strings to equal the rule applied")
    c.set_defaults(func=_cmd_check)
    r = sub.add_parser("rows", help="dump the Flight rows of a document or stream")
    r.add_argument("file")
    r.add_argument("--kind", choices=("html", "flight"))
    r.add_argument("--allow-incomplete", action="store_true", help="accept a partial last row")
    r.add_argument("--full", action="store_true", help="print whole payloads")
    r.set_defaults(func=_cmd_rows)
    args = ap.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
