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
 * or a promise); every call is recorded in `calls`. `document` is a parsed page without a bids
 * block: it answers only `readyState` and `getElementById('ts-bids')` (none), and throws on
 * any other use: without bids, the script must never write anything into the page.
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
      {
        readyState: 'complete',
        getElementById: (id) => {
          if (id !== 'ts-bids') throw new Error(`the script looked for #${id}`);
          return null;
        },
      },
      {
        get(target, key) {
          if (key in target) return target[key];
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
  assert.equal(typeof tsjs.onBids, 'function');
  assert.equal(typeof tsjs.pageBids, 'function');
  assert.equal(tsjs.bids, null);
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

// ---- The navigation auction's bids: a fake document with a #ts-bids block and slot elements ----

/** A minimal element: attributes, children, text. */
class FakeElement {
  constructor(tag, id = null) {
    this.tagName = tag.toUpperCase();
    this.attributes = new Map();
    this.order = [];
    this.childNodes = [];
    this.textContent = '';
    if (id !== null) this.attributes.set('id', id);
  }
  setAttribute(name, value) {
    this.attributes.set(name, String(value));
    this.order.push(name);
  }
  getAttribute(name) {
    return this.attributes.has(name) ? this.attributes.get(name) : null;
  }
  get firstChild() {
    return this.childNodes[0] ?? null;
  }
  removeChild(child) {
    this.childNodes = this.childNodes.filter((c) => c !== child);
    return child;
  }
  appendChild(child) {
    // What the frame carried when it entered the document.
    child.attributesWhenAppended = new Map(child.attributes);
    this.childNodes.push(child);
    return child;
  }
  get iframes() {
    return this.childNodes.filter((c) => c.tagName === 'IFRAME');
  }
}

/** The bids block's text as the edge writes it: JSON with `<`, `>`, `&` escaped. */
function blockText(data) {
  return JSON.stringify(data).replace(/</g, '\\u003c').replace(/>/g, '\\u003e').replace(/&/g, '\\u0026');
}

/** A bid as the edge writes it, for slot `id`. */
function bid(id, extra = {}) {
  return {
    bidder: 'fast',
    id: `bid-${id}`,
    price: 1.5,
    adm: `<a href="/first-party/proxy?x"><img src="/first-party/proxy?img-${id}"></a>`,
    burl: `https://www.pub.test/first-party/proxy?win-${id}`,
    w: 300,
    h: 250,
    crid: 'c1',
    adomain: ['adv.example'],
    mtype: 1,
    type: 'banner',
    ...extra,
  };
}

function slot(b, hb_pb = '1.50') {
  return b ? { bid: b, targeting: { hb_pb, hb_bidder: b.bidder, hb_size: `${b.w}x${b.h}` } } : { bid: null, targeting: {} };
}

/**
 * A page with slot elements `ids` (each holding a placeholder child), the bids block `text`
 * (a string, or `null` for none), and `readyState`. Returns the context's window, the
 * elements, the fetch calls, the warnings and errors logged, and `parsed()` to fire
 * DOMContentLoaded.
 */
function page({ ids = ['ad-top', 'ad-side'], text = null, readyState = 'complete', respond = () => answer(404), window: extra = {} } = {}) {
  const elements = new Map();
  for (const id of ids) {
    const element = new FakeElement('div', id);
    element.appendChild(new FakeElement('span'));
    elements.set(id, element);
  }
  if (text !== null) {
    const block = new FakeElement('script', 'ts-bids');
    block.textContent = text;
    elements.set('ts-bids', block);
  }
  const listeners = [];
  const document = {
    readyState,
    getElementById: (id) => elements.get(id) ?? null,
    createElement: (tag) => new FakeElement(tag),
    addEventListener: (type, fn) => listeners.push([type, fn]),
  };
  const calls = [];
  const logged = { warn: [], error: [] };
  const timers = [];
  const window = {
    URL,
    location: { href: 'https://www.pub.test/ads.html?ref=1' },
    fetch: (url, init) => {
      calls.push({ url, init });
      return Promise.resolve().then(() => respond(url, init));
    },
    console: { warn: (m) => logged.warn.push(m), error: (m) => logged.error.push(m) },
    setTimeout: (fn) => timers.push(fn),
    document,
    ...extra,
  };
  window.window = window;
  vm.runInContext(SOURCE, vm.createContext(window), { filename: 'tsjs.js' });
  const parsed = () => {
    document.readyState = 'interactive';
    for (const [type, fn] of listeners) if (type === 'DOMContentLoaded') fn();
  };
  return { tsjs: window.tsjs, window, elements, calls, logged, timers, parsed, listeners };
}

const TWO_SLOTS = {
  v: 1,
  id: 'nav-1',
  cur: 'USD',
  slots: {
    'ad-top': slot(bid('top', { w: 728, h: 90 }), '2.50'),
    'ad-side': slot(bid('side')),
  },
};

/** Lets pending promise callbacks run. */
const settle = () => new Promise((r) => setImmediate(r));

test('bids: the block is read once the document is parsed, and each winner renders in a sandboxed frame', () => {
  const { tsjs, elements, parsed, calls } = page({ text: blockText(TWO_SLOTS), readyState: 'loading' });
  assert.equal(tsjs.bids, null);
  assert.equal(elements.get('ad-top').iframes.length, 0);
  parsed();
  assert.equal(tsjs.bids['ad-top'].targeting.hb_pb, '2.50');
  assert.equal(tsjs.bids['ad-side'].bid.id, 'bid-side');
  for (const [id, w, h] of [['ad-top', '728', '90'], ['ad-side', '300', '250']]) {
    const element = elements.get(id);
    // The placeholder is gone: the frame is the element's only child.
    assert.equal(element.childNodes.length, 1, id);
    const [frame] = element.iframes;
    assert.ok(frame, id);
    assert.equal(frame.getAttribute('srcdoc'), TWO_SLOTS.slots[id].bid.adm);
    assert.equal(frame.getAttribute('width'), w);
    assert.equal(frame.getAttribute('height'), h);
    assert.equal(frame.getAttribute('scrolling'), 'no');
    assert.equal(frame.getAttribute('data-ts-bid'), `bid-${id.slice(3)}`);
    assert.match(frame.getAttribute('style'), /border:\s*0/);
    const sandbox = frame.getAttribute('sandbox').split(/\s+/);
    assert.ok(sandbox.includes('allow-scripts'));
    assert.ok(!sandbox.includes('allow-same-origin'), sandbox.join(' '));
    assert.ok(!sandbox.includes('allow-top-navigation'));
    // The sandbox came before the markup, and both before the frame entered the page.
    assert.ok(frame.order.indexOf('sandbox') < frame.order.indexOf('srcdoc'));
    assert.equal(frame.attributesWhenAppended.get('sandbox'), frame.getAttribute('sandbox'));
    assert.equal(frame.attributesWhenAppended.get('srcdoc'), frame.getAttribute('srcdoc'));
  }
  // Each burl once.
  assert.deepEqual(calls.map((c) => c.url).sort(), [
    'https://www.pub.test/first-party/proxy?win-side',
    'https://www.pub.test/first-party/proxy?win-top',
  ]);
});

test('bids: a document already parsed is read at once; markup with </script> and & survives the escapes', () => {
  const adm = '<script>document.title = "a</script>b" && 1</script><b>&amp;</b>';
  const data = { v: 1, slots: { 'ad-top': slot(bid('top', { adm })) } };
  const text = blockText(data);
  assert.ok(!text.includes('</script'));
  const { tsjs, elements } = page({ text });
  assert.equal(tsjs.bids['ad-top'].bid.adm, adm);
  assert.equal(elements.get('ad-top').iframes[0].getAttribute('srcdoc'), adm);
});

test('bids: a block that is not JSON of version 1 renders nothing and only warns', async () => {
  for (const text of [
    '{"v":1,"slots":{"ad-top":',
    '',
    'null',
    '[]',
    blockText({ ...TWO_SLOTS, v: 2 }),
    blockText({ ...TWO_SLOTS, v: '1' }),
    blockText({ v: 1 }),
    blockText({ v: 1, slots: [] }),
  ]) {
    const seen = [];
    const { tsjs, elements, calls, logged } = page({ text });
    tsjs.onBids((s) => seen.push(s));
    await settle();
    assert.equal(tsjs.bids, null, text);
    assert.deepEqual(seen, [], text);
    assert.equal(elements.get('ad-top').iframes.length, 0, text);
    assert.equal(elements.get('ad-top').childNodes.length, 1, text);
    assert.equal(calls.length, 0, text);
    assert.equal(logged.warn.length, 1, text);
    assert.equal(logged.error.length, 0, text);
  }
});

test('bids: a page without a block gets no render and no callback', async () => {
  const seen = [];
  const { tsjs, elements, calls, logged } = page({ text: null });
  tsjs.onBids((s) => seen.push(s));
  await settle();
  assert.equal(tsjs.bids, null);
  assert.deepEqual(seen, []);
  assert.equal(elements.get('ad-side').iframes.length, 0);
  assert.equal(calls.length, 0);
  assert.deepEqual(logged, { warn: [], error: [] });
});

test('bids: missing elements, null bids, empty markup and native bids are not rendered', () => {
  const data = {
    v: 1,
    slots: {
      'ad-missing': slot(bid('missing')),
      'ad-null': slot(null),
      'ad-empty': slot(bid('empty', { adm: '' })),
      'ad-noadm': slot(bid('noadm', { adm: undefined })),
      'ad-native': slot(bid('native', { type: 'native', adm: '{"native":{}}' })),
      'ad-top': slot(bid('top')),
    },
  };
  const { tsjs, elements, calls } = page({
    ids: ['ad-null', 'ad-empty', 'ad-noadm', 'ad-native', 'ad-top'],
    text: blockText(data),
  });
  for (const id of ['ad-null', 'ad-empty', 'ad-noadm', 'ad-native']) {
    assert.equal(elements.get(id).iframes.length, 0, id);
    assert.equal(elements.get(id).childNodes.length, 1, id);
  }
  assert.equal(elements.get('ad-top').iframes.length, 1);
  // Page code still sees every slot.
  assert.deepEqual(Object.keys(tsjs.bids).sort(), Object.keys(data.slots).sort());
  assert.equal(tsjs.bids['ad-null'].bid, null);
  assert.deepEqual({ ...tsjs.bids['ad-null'].targeting }, {});
  // Only the rendered slot's burl went out.
  assert.deepEqual(calls.map((c) => c.url), ['https://www.pub.test/first-party/proxy?win-top']);
});

test('bids: a slot marked data-ts-render="manual" is left to page code', () => {
  const data = { v: 1, slots: { 'ad-top': slot(bid('top')), 'ad-side': slot(bid('side')) } };
  const { elements, parsed, calls, tsjs } = page({ text: blockText(data), readyState: 'loading' });
  elements.get('ad-top').setAttribute('data-ts-render', 'manual');
  parsed();
  assert.equal(elements.get('ad-top').iframes.length, 0);
  assert.equal(elements.get('ad-top').childNodes.length, 1);
  assert.equal(elements.get('ad-side').iframes.length, 1);
  assert.deepEqual(calls.map((c) => c.url), ['https://www.pub.test/first-party/proxy?win-side']);
  assert.equal(tsjs.bids['ad-top'].bid.id, 'bid-top');
});

test('bids: burl is fetched once, GET without cookies, and only when it is http(s)', () => {
  const data = {
    v: 1,
    slots: {
      a: slot(bid('a', { burl: 'https://www.pub.test/first-party/proxy?win' })),
      b: slot(bid('b', { burl: 'javascript:alert(1)' })),
      c: slot(bid('c', { burl: 'data:text/html,x' })),
      d: slot(bid('d', { burl: '/first-party/proxy?relative' })),
      e: slot(bid('e', { burl: 42 })),
      f: slot(bid('f', { burl: undefined })),
      g: slot(bid('g', { burl: 'http://[bad' })),
    },
  };
  const { calls, elements } = page({ ids: ['a', 'b', 'c', 'd', 'e', 'f', 'g'], text: blockText(data) });
  for (const id of 'abcdefg') assert.equal(elements.get(id).iframes.length, 1, id);
  assert.deepEqual(calls.map((c) => c.url), [
    'https://www.pub.test/first-party/proxy?win',
    'https://www.pub.test/first-party/proxy?relative',
  ]);
  for (const { init } of calls) {
    assert.equal(init.method, 'GET');
    assert.equal(init.credentials, 'omit');
    assert.equal(init.mode, 'no-cors');
    assert.equal(init.keepalive, true);
  }
});

test('bids: without fetch, burl goes by sendBeacon', () => {
  const beacons = [];
  const { elements } = page({
    text: blockText(TWO_SLOTS),
    window: { fetch: undefined, navigator: { sendBeacon: (u) => beacons.push(u) } },
  });
  assert.equal(elements.get('ad-top').iframes.length, 1);
  assert.deepEqual(beacons.sort(), [
    'https://www.pub.test/first-party/proxy?win-side',
    'https://www.pub.test/first-party/proxy?win-top',
  ]);
});

test('bids: onBids gets the slots once they are read, at once when already read; a throwing callback does not stop the others', () => {
  const { tsjs, parsed, timers } = page({ text: blockText(TWO_SLOTS), readyState: 'loading' });
  const early = [];
  tsjs.onBids(() => {
    throw new Error('page bug');
  });
  tsjs.onBids((s) => early.push(s));
  assert.deepEqual(early, []);
  parsed();
  assert.equal(early.length, 1);
  assert.equal(early[0], tsjs.bids);
  assert.equal(early[0]['ad-top'].targeting.hb_pb, '2.50');
  // The page's error is reported apart (a timer rethrows it), not swallowed.
  assert.equal(timers.length, 1);
  assert.throws(timers[0], /page bug/);
  const late = [];
  tsjs.onBids((s) => late.push(s));
  assert.deepEqual(late, [tsjs.bids]);
  assert.equal(early.length, 1);
  assert.throws(() => tsjs.onBids('nope'), { name: 'TypeError' });
});

test('bids: the slots page code gets are frozen', () => {
  const { tsjs } = page({ text: blockText(TWO_SLOTS) });
  assert.ok(Object.isFrozen(tsjs.bids));
  assert.ok(Object.isFrozen(tsjs.bids['ad-top']));
  assert.ok(Object.isFrozen(tsjs.bids['ad-top'].bid));
  assert.ok(Object.isFrozen(tsjs.bids['ad-top'].bid.adomain));
  assert.ok(Object.isFrozen(tsjs.bids['ad-top'].targeting));
});

test('pageBids asks GET /_ts/page-bids for the path, same-origin and uncached, and renders the answer', async () => {
  const next = {
    v: 1,
    slots: { 'ad-top': slot(bid('top', { id: 'bid-top-2', burl: 'https://www.pub.test/first-party/proxy?win-2' }), '3.00') },
  };
  const { tsjs, elements, calls } = page({
    text: blockText(TWO_SLOTS),
    respond: (url) => (url.startsWith('/_ts/page-bids') ? answer(200, next) : answer(200, {})),
  });
  const first = elements.get('ad-top').iframes[0];
  const seen = [];
  tsjs.onBids((s) => seen.push(s));
  assert.equal(seen.length, 1);
  calls.length = 0;
  const slots = await tsjs.pageBids('/ads.html');
  assert.equal(slots, tsjs.bids);
  assert.equal(slots['ad-top'].targeting.hb_pb, '3.00');
  assert.equal(seen.length, 2);
  assert.equal(seen[1], slots);
  assert.equal(calls[0].url, '/_ts/page-bids?path=%2Fads.html');
  assert.equal(calls[0].init.credentials, 'same-origin');
  assert.equal(calls[0].init.cache, 'no-store');
  assert.equal(calls[0].init.method ?? 'GET', 'GET');
  // A new frame with the new bid, in place of the old one; its burl once.
  const [frame] = elements.get('ad-top').iframes;
  assert.notEqual(frame, first);
  assert.equal(elements.get('ad-top').childNodes.length, 1);
  assert.equal(frame.getAttribute('data-ts-bid'), 'bid-top-2');
  assert.deepEqual(calls.slice(1).map((c) => c.url), ['https://www.pub.test/first-party/proxy?win-2']);
});

test('pageBids encodes the path, defaults to the page own, and refuses another origin', async () => {
  const { tsjs, calls } = page({ respond: () => answer(404) });
  await tsjs.pageBids('/news/a b?x=1&y=2#f');
  await tsjs.pageBids();
  await tsjs.pageBids('https://www.pub.test/sport/');
  assert.deepEqual(calls.map((c) => c.url), [
    '/_ts/page-bids?path=%2Fnews%2Fa%2520b',
    '/_ts/page-bids?path=%2Fads.html',
    '/_ts/page-bids?path=%2Fsport%2F',
  ]);
  await assert.rejects(tsjs.pageBids('https://evil.example/ads.html'), { name: 'TypeError', message: /not a path/ });
  await assert.rejects(tsjs.pageBids('//evil.example/x'), { name: 'TypeError' });
  assert.equal(calls.length, 3);
});

test('pageBids resolves null without bids, leaves the slots alone, and tsjs.bids becomes null', async () => {
  for (const [status, body] of [
    [404, {}],
    [500, TWO_SLOTS],
    [200, 'not json'],
    [200, { ...TWO_SLOTS, v: 2 }],
  ]) {
    const seen = [];
    const { tsjs, elements, logged } = page({ text: blockText(TWO_SLOTS), respond: () => answer(status, body) });
    const frame = elements.get('ad-top').iframes[0];
    tsjs.onBids((s) => seen.push(s));
    assert.equal(await tsjs.pageBids('/other.html'), null);
    assert.equal(tsjs.bids, null);
    assert.equal(seen.length, 1);
    assert.equal(elements.get('ad-top').iframes[0], frame);
    assert.equal(logged.error.length, 0);
  }
});

test('pageBids: only the latest call is shown', async () => {
  const answers = {
    '/_ts/page-bids?path=%2Fone': { v: 1, slots: { 'ad-top': slot(bid('top', { id: 'one' })) } },
    '/_ts/page-bids?path=%2Ftwo': { v: 1, slots: { 'ad-top': slot(bid('top', { id: 'two' })) } },
  };
  let release;
  const gate = new Promise((r) => (release = r));
  const { tsjs, elements } = page({
    respond: (url) => (url.endsWith('one') ? gate.then(() => answer(200, answers[url])) : answer(200, answers[url])),
  });
  const one = tsjs.pageBids('/one');
  assert.equal((await tsjs.pageBids('/two'))['ad-top'].bid.id, 'two');
  release();
  assert.equal(await one, null);
  assert.equal(tsjs.bids['ad-top'].bid.id, 'two');
  assert.equal(elements.get('ad-top').iframes[0].getAttribute('data-ts-bid'), 'two');
});

test('pageBids rejects when the request fails', async () => {
  const { tsjs } = page({
    respond: () => {
      throw new TypeError('network down');
    },
  });
  await assert.rejects(tsjs.pageBids('/ads.html'), /network down/);
});
