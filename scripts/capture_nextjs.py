#!/usr/bin/env python3
"""Captures a running Next.js app into replayable fixtures, with the arrival time of every chunk.

    capture_nextjs.py --base http://127.0.0.1:PORT --probe probe.json --app DIR --out DIR

`probe.json` lists the requests a real browser made (scripts/nextjs_browser_probe.mjs). Each
page load and each distinct Flight request (navigation, prefetch, segment prefetch) is sent
again, one at a time, from a raw socket that timestamps every chunk of the body. The output
format is described in fixtures/nextjs/README.md. Static assets are copied from the build
(`.next/static`, `public/`) and fetched from the server (everything else the browser loaded).
"""

import argparse
import json
import re
import shutil
import socket
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

# Time allowed for one whole response (connect, headers, body).
RESPONSE_TIMEOUT_S = 30.0
ORIGIN_HOST = "origin.demo-publisher.example"

# Request headers of the browser's requests that are sent again (lower-case name ->
# spelling used on the wire). Others (cookies, referer, client hints) are not needed.
REPLAYED_HEADERS = {
    "rsc": "RSC",
    "next-router-state-tree": "Next-Router-State-Tree",
    "next-router-prefetch": "Next-Router-Prefetch",
    "next-router-segment-prefetch": "Next-Router-Segment-Prefetch",
    "next-url": "Next-Url",
    "accept": "Accept",
    "accept-language": "Accept-Language",
    "user-agent": "User-Agent",
    "sec-fetch-dest": "Sec-Fetch-Dest",
    "sec-fetch-mode": "Sec-Fetch-Mode",
    "sec-fetch-site": "Sec-Fetch-Site",
}
# The Flight request headers that select which response a path gets.
SELECTING_HEADERS = ("RSC", "Next-Router-Prefetch", "Next-Router-Segment-Prefetch")


def kind_of(headers):
    """Which response a request selects: html, rsc, prefetch or segment-prefetch."""
    h = {k.lower(): v for k, v in headers.items()}
    if h.get("rsc") != "1":
        return "html"
    if "next-router-segment-prefetch" in h:
        return "segment-prefetch"
    if h.get("next-router-prefetch") == "1":
        return "prefetch"
    return "rsc"


def capture_name(path, kind, headers):
    """Filesystem-safe name: `index`, `about`, `about.rsc`, `about.prefetch.rsc`, ..."""
    rest = path[len("/next"):].strip("/")
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", rest) or "index"
    if kind == "html":
        return base
    if kind == "rsc":
        return f"{base}.rsc"
    if kind == "prefetch":
        return f"{base}.prefetch.rsc"
    segment = {k.lower(): v for k, v in headers.items()}["next-router-segment-prefetch"]
    seg = re.sub(r"[^A-Za-z0-9_-]+", "-", segment).strip("-") or "root"
    return f"{base}.segment.{seg}.rsc"


class Response:
    def __init__(self):
        self.status = 0
        self.headers = []
        self.chunks = []  # (bytes, at_ms since the end of the head)
        self.complete = False

    @property
    def body(self):
        return b"".join(c for c, _ in self.chunks)

    def header(self, name):
        for n, v in self.headers:
            if n.lower() == name:
                return v
        return None


class Reader:
    """Buffered socket reader that knows when the data it returns arrived."""

    def __init__(self, sock, deadline):
        self.sock = sock
        self.deadline = deadline
        self.buf = b""

    def fill(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("response took too long")
        self.sock.settimeout(left)
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("connection closed early")
        self.buf += data

    def until(self, marker):
        while marker not in self.buf:
            self.fill()
        i = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def fetch(base, method, target, headers):
    """One request on a fresh connection; returns a Response with timed chunks."""
    u = urlsplit(base)
    deadline = time.monotonic() + RESPONSE_TIMEOUT_S
    sock = socket.create_connection((u.hostname, u.port), timeout=RESPONSE_TIMEOUT_S)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        lines = [f"{method} {target} HTTP/1.1"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        r = Reader(sock, deadline)
        head = r.until(b"\r\n\r\n")
        t_head = time.monotonic()
        at = lambda: round((time.monotonic() - t_head) * 1000.0, 1)  # noqa: E731
        resp = Response()
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        resp.status = int(status_line.split(" ")[1])
        for line in header_lines:
            if line:
                name, value = line.split(":", 1)
                resp.headers.append((name.strip(), value.strip()))
        if method == "HEAD" or resp.status in (204, 304):
            resp.complete = True
            return resp
        te = (resp.header("transfer-encoding") or "").lower()
        if te == "chunked":
            while True:
                size_line = r.until(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    while r.until(b"\r\n") != b"\r\n":
                        pass
                    break
                data = r.exactly(size)
                resp.chunks.append((data, at()))
                if r.exactly(2) != b"\r\n":
                    raise ValueError("missing CRLF after a chunk")
        elif resp.header("content-length") is not None:
            left = int(resp.header("content-length"))
            while left > 0:
                if not r.buf:
                    r.fill()
                data, r.buf = r.buf[:left], r.buf[left:]
                left -= len(data)
                resp.chunks.append((data, at()))
        else:
            while True:
                if r.buf:
                    data, r.buf = r.buf, b""
                    resp.chunks.append((data, at()))
                try:
                    r.fill()
                except EOFError:
                    break
        resp.complete = True
        return resp
    finally:
        sock.close()


def flight_scripts(html):
    """The decoded strings of the page's `self.__next_f.push([1,"..."])` scripts, with the
    byte offset of each script in the page."""
    text = html.decode("utf-8")
    pattern = re.compile(
        r'<script(?: nonce="[^"]*")?>self\.__next_f\.push\((\[1,".*?"\])\)</script>', re.S
    )
    out = []
    for m in pattern.finditer(text):
        offset = len(text[: m.start()].encode("utf-8"))
        out.append((offset, json.loads(m.group(1))[1].encode("utf-8")))
    return out


def flight_rows(stream):
    """Yields (start, id, tag, end) for each row of a Flight byte stream."""
    i = 0
    row = re.compile(rb"([0-9a-f]*):([A-Za-z]?)")
    while i < len(stream):
        m = row.match(stream, i)
        if not m:
            raise ValueError(f"unparsable Flight row at byte {i}")
        tag = m.group(2).decode()
        if tag == "T":
            comma = stream.index(b",", m.end())
            end = comma + 1 + int(stream[m.end() : comma], 16)
        else:
            end = stream.index(b"\n", i) + 1
        yield i, m.group(1).decode(), tag, end
        i = end


def analyse_html(html):
    """Counts push scripts, nonces and T rows, and lists the T rows whose bytes span more
    than one push script."""
    scripts = flight_scripts(html)
    stream = b"".join(s for _, s in scripts)
    starts = []
    pos = 0
    for _, s in scripts:
        starts.append(pos)
        pos += len(s)

    def script_at(byte):
        return max(i for i, s in enumerate(starts) if s <= byte)

    t_rows, crossing = 0, []
    for start, row_id, tag, end in flight_rows(stream):
        if tag != "T":
            continue
        t_rows += 1
        first, last = script_at(start), script_at(end - 1)
        if first != last:
            crossing.append(
                {
                    "id": row_id,
                    "text_bytes": end - stream.index(b",", start) - 1,
                    "first_script": first,
                    "last_script": last,
                    "header_script_offset": scripts[first][0],
                    "end_script_offset": scripts[last][0],
                }
            )
    nonces = sorted(set(re.findall(rb'<script nonce="([^"]*)"', html)))
    return {
        "push_scripts": len(scripts),
        "flight_bytes": len(stream),
        "t_rows": t_rows,
        "t_rows_crossing_scripts": crossing,
        "script_nonces": [n.decode() for n in nonces],
    }


def analyse_flight(body):
    rows = list(flight_rows(body))
    return {"rows": len(rows), "t_rows": sum(1 for r in rows if r[2] == "T")}


def request_headers(browser_headers, accept_default):
    h = {"Host": ORIGIN_HOST}
    for name, value in browser_headers.items():
        spelled = REPLAYED_HEADERS.get(name.lower())
        if spelled:
            h[spelled] = value
    h.setdefault("Accept", accept_default)
    h["Accept-Encoding"] = "identity"
    h["Connection"] = "close"
    return h


def select_requests(probe):
    """Picks, in the order the browser made them, the first request for each
    (path, kind): page loads and Flight requests under /next."""
    chosen = {}
    for req in probe["requests"]:
        u = urlsplit(req["url"])
        if not (u.path == "/next" or u.path.startswith("/next/")) or req["method"] != "GET":
            continue
        headers = req.get("headers", {})
        is_page = req["resource_type"] == "document"
        if not is_page and "rsc" not in {k.lower() for k in headers}:
            continue
        kind = kind_of(headers)
        key = (u.path, kind, headers.get("next-router-segment-prefetch"))
        if key not in chosen:
            target = u.path + (f"?{u.query}" if u.query else "")
            chosen[key] = (u.path, target, kind, headers, req["step"])
    return list(chosen.values())


def asset_requests(probe):
    """Other same-server requests the browser made under /next (icons, public files, chunks)."""
    out = []
    base = urlsplit(probe["base"])
    for req in probe["requests"]:
        u = urlsplit(req["url"])
        if (u.hostname, u.port) != (base.hostname, base.port):
            continue
        if not u.path.startswith("/next/") or req["resource_type"] == "document":
            continue
        if "rsc" in {k.lower() for k in req.get("headers", {})}:
            continue
        target = u.path + (f"?{u.query}" if u.query else "")
        if target not in out:
            out.append(target)
    return out


def write_json(path, value):
    path.write_text(json.dumps(value, indent=1, ensure_ascii=True) + "\n", encoding="ascii")


def write_meta(path, request, status, headers, chunks):
    """NAME.meta.json, with one line per response header and per chunk."""
    lines = ["{", f' "request": {json.dumps(request, ensure_ascii=True)},', f' "status": {status},']
    lines.append(' "headers": [')
    lines += [f"  {json.dumps(h, ensure_ascii=True)}," for h in headers]
    lines[-1] = lines[-1].rstrip(",") if headers else lines[-1]
    lines += [" ],", ' "chunks": [']
    lines += [f"  {json.dumps(c)}," for c in chunks]
    lines[-1] = lines[-1].rstrip(",") if chunks else lines[-1]
    lines += [" ]", "}"]
    text = "\n".join(lines) + "\n"
    json.loads(text)  # still one JSON document
    path.write_text(text, encoding="ascii")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="http://127.0.0.1:PORT of `next start`")
    ap.add_argument("--probe", required=True, type=Path)
    ap.add_argument("--app", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()

    probe = json.loads(args.probe.read_text())
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        if old.name in ("README.md", ".gitattributes"):
            continue
        shutil.rmtree(old) if old.is_dir() else old.unlink()

    plan = select_requests(probe)
    # The trailing-slash form of the base path answers with Next's 308 to /next.
    plan.append(("/next/", "/next/", "html", {}, "not made by the browser: /next/ redirects"))

    captures = []
    for path, target, kind, browser_headers, step in plan:
        name = capture_name(path, kind, browser_headers)
        if path == "/next/":
            name = "index.trailing-slash"
        accept = "text/html,application/xhtml+xml,*/*;q=0.8" if kind == "html" else "*/*"
        sent = request_headers(browser_headers, accept)
        resp = fetch(args.base, "GET", target, sent)
        if not resp.complete:
            sys.exit(f"{name}: incomplete response")
        body = resp.body
        (out / f"{name}.body").write_bytes(body)
        write_meta(
            out / f"{name}.meta.json",
            {"method": "GET", "path": target, "headers": sent},
            resp.status,
            [[n.lower(), v] for n, v in resp.headers],
            [{"len": len(c), "at_ms": t} for c, t in resp.chunks],
        )
        content_type = resp.header("content-type")
        entry = {
            "name": name,
            "kind": kind,
            "method": "GET",
            "path": path,
            "rsc_query": "_rsc=" in target,
            "select": {k: sent[k] for k in SELECTING_HEADERS if k in sent},
            "status": resp.status,
            "content_type": content_type,
            "body_bytes": len(body),
            "chunks": len(resp.chunks),
            "last_chunk_ms": resp.chunks[-1][1] if resp.chunks else 0.0,
            "browser_step": step,
        }
        if resp.status == 200 and (content_type or "").startswith("text/html"):
            entry["flight"] = analyse_html(body)
        elif (content_type or "").startswith("text/x-component"):
            entry["flight"] = analyse_flight(body)
        captures.append(entry)
        print(
            f"  {name:34} {resp.status} {content_type or '-':26} {len(body):7} B "
            f"{len(resp.chunks):3} chunks, last at {entry['last_chunk_ms']:7.1f} ms"
        )

    static = out / "static"
    copied = 0
    build_static = args.app / ".next" / "static"
    for src in sorted(build_static.rglob("*")):
        if src.is_file():
            dst = static / "next" / "_next" / "static" / src.relative_to(build_static)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            copied += 1
    public = args.app / "public"
    for src in sorted(public.rglob("*")) if public.is_dir() else []:
        if src.is_file():
            dst = static / "next" / src.relative_to(public)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
            copied += 1
    fetched = 0
    for target in asset_requests(probe):
        resp = fetch(args.base, "GET", target, {"Host": ORIGIN_HOST, "Connection": "close"})
        if resp.status != 200:
            sys.exit(f"asset {target}: status {resp.status}")
        dst = static / urlsplit(target).path.lstrip("/")
        if dst.exists():
            if dst.read_bytes() != resp.body:
                sys.exit(f"asset {target}: the server's bytes differ from the build's")
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(resp.body)
        fetched += 1

    versions = {}
    for pkg in ("next", "react", "react-dom"):
        meta = json.loads((args.app / "node_modules" / pkg / "package.json").read_text())
        versions[pkg] = meta["version"]
    write_json(
        out / "index.json",
        {
            "app": "fixtures/nextjs-app",
            "versions": versions,
            "base_path": "/next",
            "build_id": (args.app / ".next" / "BUILD_ID").read_text().strip(),
            "static_dir": "static",
            "captures": captures,
        },
    )
    print(f"  static: {copied} files from the build, {fetched} fetched from the server")
    print(f"wrote {len(captures)} captures to {out}")


if __name__ == "__main__":
    main()
