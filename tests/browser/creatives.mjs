// The creative corpus (fixtures/creatives, listed in its manifest.json) in headless Chromium:
// each creative is loaded (a) directly from its partner URL and (b) through the edge's
// first-party proxy (`/first-party/sign` gives the signed `/first-party/proxy?…` URL, loaded as
// a page on the publisher's host). Every request of each load (subframes, popups after a click,
// redirects; service workers blocked) is recorded and classified by host: the first-party host
// (the service), a partner host (demo-partner.example, demo-partner2.example) or other. A
// request through the edge that leaves the first-party host escapes, except the landing page a
// `/first-party/click` redirects to (the advertiser's page, by design).
//
// (c), the markup as an auction `adm` that Prebid.js writes into its own frame of a publisher
// page, as sent and made first-party by the edge, is creatives-auction.mjs.
//
//   node tests/browser/creatives.mjs http://127.0.0.1:PORT 127.0.0.1:PARTNER_PORT
//
// BASE is the service under Viceroy; PARTNER is a demo origin serving fixtures/creatives, which
// Chromium reaches for creatives.demo-partner.example, img.demo-partner2.example and
// px.third-party.example (host resolver rules) and the service for the first two
// (`first_party.resolve`, set by crates/e2e/tests/browser.rs).
//
// Prints one line per creative and a summary. Exit 1 when a creative does not render
// directly, when one that renders directly does not render through the edge and the manifest
// does not say `breaks`, or when the manifest's `edge` expectation no longer matches what the
// run saw (either way: an improvement must be written into the manifest, and the line says
// what to write); 2 on bad usage; 3 when Chromium or playwright-core is missing.
import { CHROMIUM, CHROMIUM_ARGS, chromiumOrExit } from './chromium.mjs'
import { CREATIVE_HOST, PARTNER_NAMES, corpusKit, selectedCreatives, short, sleep } from './corpus.mjs'

/** A page load. */
const LOAD_TIMEOUT_MS = 10_000
/** How long a creative may take to satisfy its checks. */
const RENDER_TIMEOUT_MS = 6_000
/** Quiet time after rendering (and after a click) for late requests: beacons, pings. */
const SETTLE_MS = 500
/** How long a click may take to make its first request. */
const CLICK_TIMEOUT_MS = 8_000
/** Creatives measured at once (each with two browser contexts). */
const PARALLEL = 3
/** The whole run; the backstop in browser.rs is longer. */
const TOTAL_TIMEOUT_MS = 225_000

const base = process.argv[2]?.replace(/\/+$/, '')
const partner = process.argv[3]
if (!base || !/^https?:\/\/[^/]+$/.test(base) || !partner || !/^127\.0\.0\.1:\d+$/.test(partner)) {
  console.error('usage: node tests/browser/creatives.mjs http://HOST:PORT 127.0.0.1:PARTNER_PORT')
  process.exit(2)
}
const edgeHost = new URL(base).host
const chromium = chromiumOrExit('creative corpus')
const creatives = selectedCreatives()
const { hostClass, target, afterFirstPartyClick, holds, render } = corpusKit(edgeHost)

const problems = []
const problem = (text) => {
  problems.push(text)
  console.log(`    PROBLEM ${text}`)
}

/** Loads `url` in a fresh context; what rendered and every request made. */
async function load(browser, url, creative) {
  const context = await browser.newContext({ serviceWorkers: 'block', viewport: { width: 1000, height: 800 } })
  const requests = []
  const entries = new Map()
  context.on('request', (req) => {
    const entry = { req, url: req.url(), method: req.method(), type: req.resourceType(), status: null, failure: null }
    entries.set(req, entry)
    requests.push(entry)
  })
  context.on('response', (res) => {
    const entry = entries.get(res.request())
    if (entry) entry.status = res.status()
  })
  context.on('requestfailed', (req) => {
    const entry = entries.get(req)
    if (entry) entry.failure = req.failure()?.errorText ?? 'failed'
  })
  const notes = []
  try {
    const page = await context.newPage()
    page.on('pageerror', (err) => notes.push(`page error: ${String(err.message ?? err).split('\n')[0]}`))
    page.on('console', (msg) => {
      if (msg.type() === 'error') notes.push(`console error: ${msg.text().split('\n')[0]}`)
    })
    try {
      await page.goto(url, { waitUntil: 'load', timeout: LOAD_TIMEOUT_MS })
    } catch (e) {
      // A loader that navigates on (location.replace) interrupts the first navigation.
      notes.push(`goto: ${e.message.split('\n')[0]}`)
    }
    const failing = await render(async () => page.mainFrame(), creative.checks, requests, RENDER_TIMEOUT_MS)
    await sleep(SETTLE_MS)
    let clicked = null
    if (failing.length === 0 && creative.click) {
      const before = requests.length
      try {
        await page.click(creative.click, { timeout: CLICK_TIMEOUT_MS })
      } catch (e) {
        notes.push(`click: ${e.message.split('\n')[0]}`)
      }
      // The click's first request (a popup may take a while on a busy machine), then the rest.
      const until = Date.now() + CLICK_TIMEOUT_MS
      while (requests.length === before && Date.now() < until) await sleep(100)
      await sleep(SETTLE_MS * 2)
      // What the click asked for first: a navigation, a popup, a ping.
      clicked = requests.slice(before).filter((r) => !r.req.redirectedFrom())
    }
    // Beacons and pings must arrive, not only be fired: a request for each PATH at the partner
    // (through the proxy or not) answered below 400.
    for (const path of creative.delivers ?? []) {
      if (!(await holds(page.mainFrame(), `req ${path}`, requests))) failing.push(`delivers ${path}`)
    }
    return { rendered: failing.length === 0, failing, requests, notes, clicked }
  } finally {
    await Promise.race([context.close().catch(() => {}), sleep(5000)])
  }
}

async function sign(url) {
  const res = await fetch(`${base}/first-party/sign?url=${encodeURIComponent(url)}`)
  if (!res.ok) throw new Error(`/first-party/sign answered ${res.status} for ${url}`)
  return `${base}${(await res.json()).url}`
}

const t0 = Date.now()
const rules = PARTNER_NAMES.map((h) => `MAP ${h} ${partner}`).join(',')
const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [...CHROMIUM_ARGS, `--host-resolver-rules=${rules}`],
  timeout: LOAD_TIMEOUT_MS,
})
const watchdog = setTimeout(() => {
  console.log(`creative corpus: FAILED: over ${TOTAL_TIMEOUT_MS / 1000}s`)
  process.exit(1)
}, TOTAL_TIMEOUT_MS)

const rows = []
try {
  console.log(`creative corpus: ${creatives.length} creatives, edge ${base}, partner ${partner}`)
  // PARALLEL creatives at a time, both loads of each at once, each load in its own context;
  // reported in the manifest's order.
  let free = PARALLEL
  const waiting = []
  const measure = async (c) => {
    if (free === 0) await new Promise((r) => waiting.push(r))
    free -= 1
    try {
      const direct = `http://${CREATIVE_HOST}/${c.path}`
      const [d, e] = await Promise.all([load(browser, direct, c), load(browser, await sign(direct), c)])
      return { d, e }
    } finally {
      free += 1
      waiting.shift()?.()
    }
  }
  const measured = creatives.map((c) => measure(c))
  // Every promise is awaited below; none may reject unseen meanwhile.
  for (const m of measured) m.catch(() => {})
  for (const [i, c] of creatives.entries()) {
    const { d, e } = await measured[i]
    const escapes = []
    const failed = []
    for (const r of e.requests) {
      const cls = hostClass(r.url)
      if (cls === null) continue
      if (cls !== 'first-party' && !afterFirstPartyClick(r.req)) escapes.push(`${cls} ${r.method} ${short(r.url)}`)
      // (An image or a page cut off when its context closed, after a good status, is not.)
      if ((r.status === null && r.failure) || (r.status !== null && r.status >= 400)) {
        failed.push(`${r.status ?? r.failure} ${short(target(r.url))}`)
      }
    }
    const seen = !e.rendered ? 'breaks' : escapes.length ? 'escapes' : 'first-party'
    const expected = c.edge.split(':')[0].trim()
    rows.push({ name: c.name, direct: d.rendered, edge: e.rendered, escapes: [...new Set(escapes)], seen, expected })
    const yes = (b) => (b ? 'yes' : 'NO')
    console.log(`  ${c.name}: renders directly ${yes(d.rendered)}, through the edge ${yes(e.rendered)}; ` +
      `escapes: ${escapes.length ? [...new Set(escapes)].join(', ') : 'none'}`)
    if (!d.rendered) console.log(`      direct: not holding: ${d.failing.join('; ')}; ${[...new Set(d.notes)].join('; ')}`)
    if (!e.rendered) console.log(`      edge: not holding: ${e.failing.join('; ')}; ${[...new Set(e.notes)].join('; ')}`)
    if (failed.length) console.log(`      edge: failed requests: ${[...new Set(failed)].join(', ')}`)
    for (const [how, x] of [['direct', d], ['edge', e]]) {
      for (const note of x.notes.filter((n) => n.startsWith('click'))) console.log(`      ${how}: ${note}`)
    }
    if (e.clicked) console.log(`      edge: the click requested ${e.clicked.map((r) => `${r.method} ${short(r.url)}`).join(', ') || 'nothing'}`)
    if (!d.rendered) problem(`${c.name} does not render directly (the fixture or its check is wrong)`)
    if (d.rendered && d.clicked?.length === 0) problem(`${c.name}: the click made no request directly`)
    if (e.rendered && e.clicked?.length === 0) problem(`${c.name}: the click made no request through the edge`)
    if (d.rendered && seen !== expected) {
      const why = seen === 'breaks'
        ? `renders directly but not through the edge (${e.failing.join('; ')})`
        : seen === 'escapes'
          ? `renders through the edge with escaping requests (${[...new Set(escapes)].join(', ')})`
          : 'renders through the edge with every request first-party'
      problem(`${c.name}: ${why}; the manifest says "${c.edge}": set its "edge" to ` +
        `${seen === 'first-party' ? '"first-party"' : `"${seen}: <why>"`} in fixtures/creatives/manifest.json`)
    }
  }
} catch (e) {
  problem(`aborted: ${e.stack ?? e}`)
} finally {
  clearTimeout(watchdog)
  await Promise.race([browser.close().catch(() => {}), sleep(10_000)])
}

const n = rows.length
const count = (f) => rows.filter(f).length
const pad = (s, w) => String(s).padEnd(w)
const width = Math.max(8, ...rows.map((r) => r.name.length))
console.log('')
console.log(`  ${pad('creative', width)}  direct  edge  expected     escapes`)
for (const r of rows) {
  console.log(`  ${pad(r.name, width)}  ${pad(r.direct ? 'yes' : 'NO', 6)}  ${pad(r.edge ? 'yes' : 'NO', 4)}  ` +
    `${pad(r.expected, 11)}  ${r.escapes.length ? r.escapes.join(', ') : '-'}`)
}
console.log('')
console.log(`creative corpus: directly: ${count((r) => r.direct)}/${n} render; through the edge: ` +
  `${count((r) => r.edge)}/${n} render, ${count((r) => r.edge && r.escapes.length === 0)}/${n} without escaping ` +
  `(${count((r) => r.escapes.some((x) => x.startsWith('partner')))} reach a partner host, ` +
  `${count((r) => r.escapes.some((x) => x.startsWith('other')))} another host); ` +
  `${((Date.now() - t0) / 1000).toFixed(1)}s`)
const code = problems.length === 0 && n === creatives.length ? 0 : 1
console.log(code === 0
  ? 'creative corpus: PASSED: every creative as the manifest expects'
  : `creative corpus: FAILED with ${problems.length} problem(s)`)
process.exit(code)
