// Unit tests of the first-party script's API: `node --test js/tsjs/test/` (scripts/test.sh).
// Each test loads the real source into a fresh JavaScript context whose `window` and `fetch`
// are fakes, so what the script asks for and what it makes of each answer is observable.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

const ROOT = path.join(__dirname, '..', '..', '..');
const SOURCE = fs.readFileSync(path.join(ROOT, 'js/tsjs/src/tsjs.js'), 'utf8');

/** A fake `Response` with `status` and a JSON (or unparseable) body. */
function answer(status, body) {
  return {
    status,
    ok: status >= 200 && status < 300,
    json: () =>
      typeof body === 'string' ? Promise.reject(new SyntaxError('bad json')) : Promise.resolve(body),
  };
}

/**
 * A fresh context with the script loaded. `respond(url, init)` answers each fetch (a value
 * or a promise); every call is recorded in `calls`. `document` throws on any use: the script
 * must never write a per-reader value into the page.
 */
function load(respond, times = 1) {
  const calls = [];
  const window = {
    URL,
    location: { href: 'https://www.pub.test/news/article.html?x=1' },
    fetch: (url, init) => {
      calls.push({ url, init });
      return Promise.resolve().then(() => respond(url, init));
    },
    document: new Proxy(
      {},
      {
        get(_, key) {
          throw new Error(`the script touched document.${String(key)}`);
        },
      }
    ),
  };
  window.window = window;
  const context = vm.createContext(window);
  for (let i = 0; i < times; i++) {
    vm.runInContext(SOURCE, context, { filename: 'tsjs.js' });
  }
  return { tsjs: window.tsjs, calls, window };
}

test('version is the service package version', () => {
  const cargo = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8');
  const pkg = cargo.slice(cargo.indexOf('\n[package]'));
  const version = /\nversion = "([^"]+)"/.exec(pkg)[1];
  const { tsjs } = load(() => answer(404));
  assert.equal(tsjs.version, version);
  assert.equal(typeof tsjs.getEdgeId, 'function');
  assert.equal(typeof tsjs.getConsent, 'function');
  assert.equal(typeof tsjs.sign, 'function');
});

test('getEdgeId asks GET /_ts/ec same-origin, uncached, and resolves the ec string', async () => {
  const { tsjs, calls } = load(() => answer(200, { ec: 'abc123.XyZ9_q' }));
  assert.equal(await tsjs.getEdgeId(), 'abc123.XyZ9_q');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].url, '/_ts/ec');
  assert.equal(calls[0].init.credentials, 'same-origin');
  assert.equal(calls[0].init.cache, 'no-store');
  assert.equal(calls[0].init.method ?? 'GET', 'GET');
});

test('getEdgeId asks once per page', async () => {
  const { tsjs, calls } = load(() => answer(200, { ec: 'id.1' }));
  const [a, b] = await Promise.all([tsjs.getEdgeId(), tsjs.getEdgeId()]);
  assert.equal(await tsjs.getEdgeId(), 'id.1');
  assert.deepEqual([a, b], ['id.1', 'id.1']);
  assert.equal(calls.length, 1);
});

test('getEdgeId resolves null when there is no ID', async () => {
  for (const [status, body] of [
    [200, { ec: null }],
    [200, {}],
    [200, { ec: '' }],
    [200, { ec: 42 }],
    [200, null],
    [200, 'not json'],
    [404, {}],
    [500, { ec: 'ignored' }],
  ]) {
    const { tsjs } = load(() => answer(status, body));
    assert.equal(await tsjs.getEdgeId(), null, `${status} ${JSON.stringify(body)}`);
  }
});

test('getConsent asks GET /_ts/consent once, same-origin, uncached, and resolves the decision', async () => {
  const body = { rule: 'opt-in', edge_id: false, origin: false, reasons: ['opt-in-region', 'no-tcf'] };
  const { tsjs, calls } = load(() => answer(200, body));
  const [a, b] = await Promise.all([tsjs.getConsent(), tsjs.getConsent()]);
  assert.deepEqual({ ...a, reasons: [...a.reasons] }, body);
  assert.equal(a, b);
  assert.ok(Object.isFrozen(a));
  assert.equal(calls.length, 1);
  assert.equal(calls[0].url, '/_ts/consent');
  assert.equal(calls[0].init.credentials, 'same-origin');
  assert.equal(calls[0].init.cache, 'no-store');
  assert.equal(calls[0].init.method ?? 'GET', 'GET');
});

test('getConsent resolves null when the answer is not a decision', async () => {
  for (const [status, body] of [
    [200, {}],
    [200, null],
    [200, 'not json'],
    [200, { rule: 'none', edge_id: 'yes', origin: true, reasons: [] }],
    [200, { rule: 'none', edge_id: true, origin: true }],
    [404, {}],
    [500, { rule: 'none', edge_id: true, origin: true, reasons: [] }],
  ]) {
    const { tsjs } = load(() => answer(status, body));
    assert.equal(await tsjs.getConsent(), null, `${status} ${JSON.stringify(body)}`);
  }
});

test('getConsent rejects on a network failure and asks again on the next call', async () => {
  let fail = true;
  const { tsjs, calls } = load(() => {
    if (fail) throw new TypeError('network down');
    return answer(200, { rule: 'none', edge_id: true, origin: true, reasons: ['elsewhere'] });
  });
  await assert.rejects(tsjs.getConsent(), /network down/);
  fail = false;
  assert.equal((await tsjs.getConsent()).rule, 'none');
  assert.equal(calls.length, 2);
});

test('getEdgeId rejects on a network failure and asks again on the next call', async () => {
  let fail = true;
  const { tsjs, calls } = load(() => {
    if (fail) throw new TypeError('network down');
    return answer(200, { ec: 'later' });
  });
  await assert.rejects(tsjs.getEdgeId(), /network down/);
  fail = false;
  assert.equal(await tsjs.getEdgeId(), 'later');
  assert.equal(calls.length, 2);
});

test('sign asks /first-party/sign with the absolute URL, encoded', async () => {
  const { tsjs, calls } = load(() => answer(200, { url: 'https://www.pub.test/fp/signed' }));
  assert.equal(await tsjs.sign('https://ads.example/x?a=1&b=2#f'), 'https://www.pub.test/fp/signed');
  assert.equal(await tsjs.sign('/img/a b.png'), 'https://www.pub.test/fp/signed');
  assert.equal(calls[0].url, '/first-party/sign?url=https%3A%2F%2Fads.example%2Fx%3Fa%3D1%26b%3D2%23f');
  assert.equal(calls[1].url, '/first-party/sign?url=https%3A%2F%2Fwww.pub.test%2Fimg%2Fa%2520b.png');
  assert.equal(calls[0].init.credentials, 'same-origin');
});

test('sign rejects with "signing is unavailable" without the endpoint (404) or its key (503)', async () => {
  for (const [status, body] of [
    [404, 'Not Found'],
    [503, { error: 'first-party URLs are unavailable' }],
  ]) {
    const { tsjs } = load(() => answer(status, body));
    await assert.rejects(tsjs.sign('https://ads.example/x'), (e) => {
      assert.match(e.message, /signing is unavailable/);
      assert.equal(e.code, 'SIGNING_UNAVAILABLE', `${status}`);
      return true;
    });
  }
});

test('sign rejects a target the service refuses (400) as refused', async () => {
  const { tsjs } = load(() => answer(400, { error: 'this URL cannot be signed' }));
  await assert.rejects(tsjs.sign('http://169.254.169.254/'), (e) => {
    assert.equal(e.code, 'SIGNING_REFUSED');
    assert.match(e.message, /cannot be signed/);
    return true;
  });
});

test('sign rejects other failures with another code', async () => {
  for (const [status, body] of [
    [500, {}],
    [403, {}],
    [200, { nope: 1 }],
  ]) {
    const { tsjs } = load(() => answer(status, body));
    await assert.rejects(tsjs.sign('https://ads.example/x'), (e) => {
      assert.equal(e.code, 'SIGNING_FAILED', `${status}`);
      assert.doesNotMatch(e.message, /unavailable/);
      return true;
    });
  }
});

test('sign rejects what is not a URL without asking', async () => {
  const { tsjs, calls } = load(() => answer(200, { url: 'x' }));
  await assert.rejects(tsjs.sign('http://[bad'), { name: 'TypeError', message: /not a URL/ });
  assert.equal(calls.length, 0);
});

test('loading twice keeps the first instance and its state', async () => {
  const { tsjs, window, calls } = load(() => answer(200, { ec: 'one' }), 1);
  assert.equal(await tsjs.getEdgeId(), 'one');
  vm.runInContext(SOURCE, vm.createContext(window), { filename: 'tsjs.js' });
  assert.equal(window.tsjs, tsjs);
  assert.equal(await window.tsjs.getEdgeId(), 'one');
  assert.equal(calls.length, 1);
});

test('the API object cannot be changed or replaced by page code', () => {
  const { tsjs, window } = load(() => answer(404), 2);
  assert.ok(Object.isFrozen(tsjs));
  assert.throws(() => {
    'use strict';
    window.tsjs = {};
  }, TypeError);
  assert.equal(window.tsjs, tsjs);
});

test('a page value of its own under tsjs is replaced by the API', () => {
  const window = {
    URL,
    location: { href: 'https://www.pub.test/' },
    fetch: () => Promise.reject(new Error('unused')),
    tsjs: { que: [] },
  };
  window.window = window;
  vm.runInContext(SOURCE, vm.createContext(window));
  assert.equal(window.tsjs.__tsjs, true);
  assert.equal(typeof window.tsjs.getEdgeId, 'function');
});
