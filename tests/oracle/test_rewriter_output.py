"""Run the real rewriter over the captured Next.js fixtures and judge its output with the oracle.

Set ``TS_REWRITE`` to a command (split with shlex; run from the repository root) that reads a
body on stdin and writes the rewritten body to stdout, called as::

    $TS_REWRITE <content-type> <origin-authority> <scheme> <target-authority>

Captures come from ``fixtures/nextjs/index.json`` (a JSON list of objects with ``name`` and a
content type), bodies from ``fixtures/nextjs/<name>.body``. ``TS_FIXTURES_DIR`` overrides the
directory. Without ``TS_REWRITE`` every test here is skipped; with it, missing fixtures fail.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

import flight_oracle as fo

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("TS_FIXTURES_DIR") or ROOT / "fixtures" / "nextjs")
REWRITE = os.environ.get("TS_REWRITE", "").strip()
ORIGIN = "origin.demo-publisher.example"
TARGETS = [
    ("http", "www.a-much-longer-first-party-host.example:7676"),  # longer than the origin
    ("https", "p.test"),  # shorter
]
SKIP_REASON = "TS_REWRITE is not set (the command that rewrites a body on stdin; see this file's docstring)"
_CTYPE_KEYS = ("content_type", "content-type", "contentType", "Content-Type", "mime", "type")


@dataclass(frozen=True)
class Capture:
    name: str
    content_type: str

    @property
    def kind(self) -> str | None:
        ct = self.content_type.split(";")[0].strip().lower()
        return {"text/html": "html", "text/x-component": "flight"}.get(ct)

    @property
    def body_path(self) -> Path:
        return FIXTURES / f"{self.name}.body"


def _load() -> tuple[list[Capture], str | None]:
    index = FIXTURES / "index.json"
    if not index.is_file():
        return [], f"no fixtures: {index} does not exist"
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        return [], f"{index} is not readable JSON: {e}"
    if isinstance(data, dict):  # tolerate {"captures": [...]}
        lists = [v for v in data.values() if isinstance(v, list)]
        data = lists[0] if len(lists) == 1 else None
    if not isinstance(data, list):
        return [], f"{index} is not a JSON list of captures"
    captures = []
    for k, entry in enumerate(data):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return [], f"{index} entry #{k} has no string 'name': {entry!r}"
        ctype = next((entry[key] for key in _CTYPE_KEYS if isinstance(entry.get(key), str)), None)
        if ctype is None and isinstance(entry.get("status"), int) and not 200 <= entry["status"] < 300:
            continue  # a redirect or error capture has no body to rewrite
        if ctype is None:
            return [], f"{index} entry #{k} ({entry['name']}) has no content type (tried {', '.join(_CTYPE_KEYS)})"
        captures.append(Capture(entry["name"], ctype))
    if not captures:
        return [], f"no fixtures: {index} lists no captures"
    return captures, None


CAPTURES, LOAD_PROBLEM = _load()
CASES = [
    pytest.param(c, s, h, id=f"{c.name}-{'longer' if len(h) > len(ORIGIN) else 'shorter'}")
    for c in CAPTURES
    for s, h in TARGETS
]


def _need_rewriter() -> None:
    if not REWRITE:
        pytest.skip(SKIP_REASON)
    if LOAD_PROBLEM:
        pytest.fail(f"TS_REWRITE is set but the fixtures are missing: {LOAD_PROBLEM}", pytrace=False)


@functools.lru_cache(maxsize=None)
def _rewrite(name: str, content_type: str, scheme: str, host: str) -> bytes:
    body = (FIXTURES / f"{name}.body").read_bytes()
    cmd = shlex.split(REWRITE) + [content_type, ORIGIN, scheme, host]
    p = subprocess.run(cmd, input=body, capture_output=True, cwd=ROOT, timeout=600)
    if p.returncode != 0:
        raise AssertionError(
            f"{shlex.join(cmd)} exited {p.returncode} for {name}: {p.stderr.decode('utf-8', 'replace')[-2000:]}")
    return p.stdout


@functools.lru_cache(maxsize=None)
def _report(capture: Capture, scheme: str, host: str, check_html: bool = False) -> fo.Report:
    out = _rewrite(capture.name, capture.content_type, scheme, host)
    return fo.compare(capture.body_path.read_bytes(), out, ORIGIN, scheme, host, capture.kind, check_html)


def test_fixtures_present():
    _need_rewriter()
    missing = [str(c.body_path) for c in CAPTURES if not c.body_path.is_file()]
    assert not missing, f"capture bodies missing: {missing}"
    kinds = {c.kind for c in CAPTURES}
    assert kinds & {"html", "flight"}, "no text/html or text/x-component capture in the index"


@pytest.mark.parametrize("capture,scheme,host", CASES or [pytest.param(None, None, None, id="no-captures")])
def test_flight_rewrite_is_correct(capture, scheme, host):
    _need_rewriter()
    if capture.kind is None:
        pytest.skip(f"{capture.content_type}: the oracle judges text/html and text/x-component only")
    report = _report(capture, scheme, host)
    assert report.ok, f"{capture.name} -> {scheme}://{host}\n{report.text()}"


HTML_CASES = [p for p in CASES if p.values[0].kind == "html"]


@pytest.mark.parametrize("capture,scheme,host", HTML_CASES or [pytest.param(None, None, None, id="no-captures")])
def test_html_outside_flight_is_rule_applied(capture, scheme, host):
    _need_rewriter()
    report = _report(capture, scheme, host, True)
    assert report.ok, f"{capture.name} -> {scheme}://{host}\n{report.text()}"


def test_some_t_row_was_resized():
    """Guards against a vacuous pass: some capture must exercise a T length change."""
    _need_rewriter()
    judged = [(c, s, h) for c in CAPTURES for s, h in TARGETS if c.kind is not None]
    assert judged, "no capture the oracle can judge"
    resized = urls = 0
    for c, s, h in judged:
        try:
            r = _report(c, s, h)
        except AssertionError:
            continue  # the per-capture test reports it
        if r.ok:
            resized += r.t_rows_resized
            urls += r.urls
    assert urls > 0, "no correctly rewritten capture had an origin URL inside its Flight stream"
    assert resized > 0, "no correctly rewritten capture had a T row whose length changed: the T-length fix is untested"
