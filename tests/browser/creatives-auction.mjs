// The creative corpus (fixtures/creatives, listed in its manifest.json) as auction markup, in
// headless Chromium: every creative is a bidder's `adm`, rendered by Prebid.js on a publisher
// page served by the edge, once as the bidder sent it and once made first-party by the edge.
//
// The page is fixtures/site/corpus-auction.html?creative=PATH&bidder=CODE on the edge's host:
// Prebid.js (/_gen/prebid.js) auctions one 300x250 slot through the edge's
// /_ts/openrtb2/auction with one bidder, and renders the winner into a frame of the page
// (Prebid 11 writes the markup into a `srcdoc` frame of its own inside it: a same-origin,
// "friendly" frame, no sandbox). The two bidders (crates/e2e/tests/browser.rs) are the same
// endpoint, the corpus partner's /bidders/corpus, which answers with the file the impression's
// `ext.bidder.creative` names, unchanged:
//   - corpus_direct, `rendering = "as-sent"`: the edge passes the markup as sent (the price
//     macro filled in), so the creative loads from the partner hosts;
//   - corpus_edge, `rendering = "first-party"` (the default): the markup went through the
//     edge's creative stage, its URLs signed first-party URLs.
// Each load is in a fresh browser context; every request (the page, Prebid's frame and any
// frame inside it, popups after a click, redirects; no service workers) is recorded and
// classified by host as creatives.mjs does: first-party (the edge), partner
// (demo-partner.example, demo-partner2.example) or other. A request of the first-party load
// escapes when it leaves the first-party host, except the landing page a /first-party/click
// redirects to. The creative's manifest `checks` are applied inside Prebid's render frame.
//
// The manifest's `auction` field says what this mode gives for each creative:
//   "first-party"   renders both ways, and first-party with every request on the first-party host;
//   "escapes: why"  renders both ways, some request of the first-party load leaves the host;
//   "breaks: why"   renders as sent, not first-party (what the edge must not do; listed loudly);
//   "fixes: why"    renders first-party, not as sent;
//   "fails: why"    renders neither way;
//   "n/a: why"      not run (e.g. relative URLs: an adm has no address of its own).
// Each load's auction is checked too: the requested bidder must win and Prebid must report the
// render as succeeded; the as-sent adm must be the file (price macro aside). A first-party adm
// the edge left as sent is noted.
//
//   node tests/browser/creatives-auction.mjs http://127.0.0.1:PORT 127.0.0.1:PARTNER_PORT
//
// Exit 1 on any problem (a load whose auction did not work, a run that disagrees with the
// manifest, saying what to write there), 2 on bad usage, 3 when Chromium or playwright-core is
// missing. TS_CREATIVES=a,b picks creatives by name.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { CHROMIUM, CHROMIUM_ARGS, chromiumOrExit } from './chromium.mjs'
import { CORPUS, PARTNER_NAMES, corpusKit, selectedCreatives, short, sleep } from './corpus.mjs'

const ENDPOINT = '/_ts/openrtb2/auction'
/** The two bidders: as sent, and made first-party. */
const AS_SENT = 'corpus_direct'
const FIRST_PARTY = 'corpus_edge'
/** The page's document (not its subresources: Prebid's bundle, the auction). */
const LOAD_TIMEOUT_MS = 15_000
/** The auction and Prebid's render, after the document. Generous: on a busy 2-core machine a
 * page, Prebid's bundle and the auction through Viceroy can take seconds. */
const AUCTION_TIMEOUT_MS = 20_000
/** How long a creative may take to satisfy its checks. */
const RENDER_TIMEOUT_MS = 6_000
/** Quiet time after rendering (and after a click) for late requests: beacons, pings. */
const SETTLE_MS = 500
/** How long a click may take to make its first request. */
const CLICK_TIMEOUT_MS = 8_000
/** Creatives measured at once (each with two browser contexts). */
const PARALLEL = 3
/** The whole run; the backstop in browser.rs is longer. */
const TOTAL_TIMEOUT_MS = 300_000

const base = process.argv[2]?.replace(/\/+$/, '')
const partner = process.argv[3]
if (!base || !/^https?:\/\/[^/]+$/.test(base) || !partner || !/^127\.0\.0\.1:\d+$/.test(partner)) {
  console.error('usage: node tests/browser/creatives-auction.mjs http://HOST:PORT 127.0.0.1:PARTNER_PORT')
  process.exit(2)
}
const edgeHost = new URL(base).host
const chromium = chromiumOrExit('creative corpus (auction)')
const creatives = selectedCreatives()
const { hostClass, target, afterFirstPartyClick, holds, render } = corpusKit(edgeHost)

const problems = []
const problem = (text) => {
  problems.push(text)
  console.log(`    PROBLEM ${text}`)
}
const kind = (expectation) => expectation.split(':')[0].trim()

/** Prebid's render frame: the srcdoc frame it made inside the page's slot frame (or the slot
 * frame itself, should Prebid write into it); null while there is none. */
async function renderFrame(page) {
  const slot = await (await page.$('#slot iframe'))?.contentFrame()
  if (!slot) return null
  return slot.childFrames()[0] ?? slot
}

/** The file `c.path`, as the bidder sends it. */
const fileOf = (c) => readFileSync(path.join(CORPUS, c.path), 'utf8')

/** Whether `adm` is `file` with its `${AUCTION_PRICE}` macros filled in with a number. */
function asSentAdm(adm, file) {
  const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(`^${file.split('${AUCTION_PRICE}').map(escape).join('[0-9.]+')}$`).test(adm)
}

/** Loads the corpus auction page for creative `c` with `bidder` in a fresh context: what the
 * auction gave, what rendered, every request made. */
async function load(browser, c, bidder) {
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
  const auction = { winner: null, render: null, adm: null }
  try {
    const page = await context.newPage()
    page.on('pageerror', (err) => notes.push(`page error: ${String(err.message ?? err).split('\n')[0]}`))
    page.on('console', (msg) => {
      if (msg.type() === 'error') notes.push(`console error: ${msg.text().split('\n')[0]}`)
    })
    page.on('response', async (res) => {
      if (new URL(res.url()).pathname !== ENDPOINT) return
      try {
        const answer = JSON.parse((await res.body()).toString('utf8'))
        auction.adm = answer.seatbid?.[0]?.bid?.[0]?.adm ?? null
      } catch (e) {
        notes.push(`the auction answer is not JSON: ${e.message.split('\n')[0]}`)
      }
    })
    const url = `${base}/corpus-auction.html?creative=${encodeURIComponent(c.path)}&bidder=${bidder}`
    try {
      await page.goto(url, { waitUntil: 'domcontentloaded', timeout: LOAD_TIMEOUT_MS })
    } catch (e) {
      notes.push(`goto: ${e.message.split('\n')[0]}`)
    }
    try {
      await page.waitForFunction(() => document.body?.dataset.render === 'done', null, { timeout: AUCTION_TIMEOUT_MS })
    } catch (e) {
      notes.push(`Prebid never finished: ${e.message.split('\n')[0]}`)
    }
    const report = JSON.parse((await page.locator('#bids').textContent().catch(() => '')) || '{}')
    auction.winner = report.winner?.bidder ?? null
    auction.render = report.render ?? null
    const failing = await render(() => renderFrame(page), c.checks, requests, RENDER_TIMEOUT_MS)
    await sleep(SETTLE_MS)
    let clicked = null
    if (failing.length === 0 && c.click) {
      const before = requests.length
      try {
        const frame = await renderFrame(page)
        // No actionability waits (a busy machine makes them time out), and no waiting for the
        // navigation a click starts: what it requested is read from the record below.
        await frame.click(c.click, { timeout: CLICK_TIMEOUT_MS, force: true, noWaitAfter: true })
      } catch (e) {
        notes.push(`click: ${e.message.split('\n')[0]}`)
      }
      const until = Date.now() + CLICK_TIMEOUT_MS
      while (requests.length === before && Date.now() < until) await sleep(100)
      await sleep(SETTLE_MS * 2)
      clicked = requests.slice(before).filter((r) => !r.req.redirectedFrom())
    }
    // Beacons and pings must arrive, not only be fired: a request for each PATH at the partner
    // (through the proxy or not) answered below 400, waited for (a busy machine is slow to).
    const until = Date.now() + RENDER_TIMEOUT_MS
    for (const p of c.delivers ?? []) {
      while (!(await holds(page.mainFrame(), `req ${p}`, requests)) && Date.now() < until) await sleep(200)
      if (!(await holds(page.mainFrame(), `req ${p}`, requests))) failing.push(`delivers ${p}`)
    }
    return { rendered: failing.length === 0, failing, requests, notes, clicked, auction }
  } catch (e) {
    notes.push(`aborted: ${e.message.split('\n')[0]}`)
    return { rendered: false, failing: ['(aborted)'], requests, notes, clicked: null, auction }
  } finally {
    await Promise.race([context.close().catch(() => {}), sleep(5000)])
  }
}

/** The requests of a load that left the first-party host (not after a first-party click). */
function escapesOf(requests) {
  const out = []
  for (const r of requests) {
    const cls = hostClass(r.url)
    if (cls !== null && cls !== 'first-party' && !afterFirstPartyClick(r.req)) out.push(`${cls} ${r.method} ${short(r.url)}`)
  }
  return [...new Set(out)]
}

/** Failed requests of a load, as `status host/path`. */
function failedOf(requests) {
  const out = []
  for (const r of requests) {
    if (hostClass(r.url) === null) continue
    if ((r.status === null && r.failure) || (r.status !== null && r.status >= 400)) {
      out.push(`${r.status ?? r.failure} ${short(target(r.url))}`)
    }
  }
  return [...new Set(out)]
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
  console.log(`creative corpus (auction): FAILED: over ${TOTAL_TIMEOUT_MS / 1000}s`)
  process.exit(1)
}, TOTAL_TIMEOUT_MS)

const rows = []
try {
  const run = creatives.filter((c) => kind(c.auction ?? '') !== 'n/a')
  console.log(`creative corpus (auction): ${run.length} of ${creatives.length} creatives as adm, ` +
    `bidders ${AS_SENT} (as-sent) and ${FIRST_PARTY} (first-party), edge ${base}, partner ${partner}`)
  let free = PARALLEL
  const waiting = []
  const measure = async (c) => {
    if (free === 0) await new Promise((r) => waiting.push(r))
    free -= 1
    try {
      const [d, e] = await Promise.all([load(browser, c, AS_SENT), load(browser, c, FIRST_PARTY)])
      return { d, e }
    } finally {
      free += 1
      waiting.shift()?.()
    }
  }
  const measured = creatives.map((c) => (kind(c.auction ?? '') === 'n/a' ? Promise.resolve(null) : measure(c)))
  for (const m of measured) m.catch(() => {})
  const yes = (b) => (b ? 'yes' : 'NO')
  for (const [i, c] of creatives.entries()) {
    if (c.auction === undefined) {
      problem(`${c.name} has no "auction" expectation in fixtures/creatives/manifest.json`)
      continue
    }
    const m = await measured[i]
    if (m === null) {
      console.log(`  ${c.name}: not run (${c.auction})`)
      rows.push({ name: c.name, na: true, expected: 'n/a' })
      continue
    }
    const { d, e } = m
    const escapes = escapesOf(e.requests)
    const file = fileOf(c)
    // The auction itself: the bidder asked must win and Prebid must have rendered it, else
    // what is measured is not the creative.
    for (const [bidder, x] of [[AS_SENT, d], [FIRST_PARTY, e]]) {
      if (x.auction.winner !== bidder) problem(`${c.name}: ${bidder} did not win (winner ${x.auction.winner}; ${x.notes.join('; ')})`)
      else if (x.auction.render !== 'succeeded') problem(`${c.name}: ${bidder}'s render: ${x.auction.render}`)
    }
    if (d.auction.adm !== null && !asSentAdm(d.auction.adm, file)) {
      problem(`${c.name}: the as-sent adm is not the file as the bidder sent it`)
    }
    // (Not a problem by itself: the stage leaves markup whose URLs it cannot see unchanged.)
    const unchanged = e.auction.adm !== null && asSentAdm(e.auction.adm, file)
    const seen = !d.rendered && !e.rendered ? 'fails' : !d.rendered ? 'fixes' : !e.rendered ? 'breaks'
      : escapes.length ? 'escapes' : 'first-party'
    const expected = kind(c.auction)
    rows.push({ name: c.name, direct: d.rendered, edge: e.rendered, escapes, seen, expected })
    console.log(`  ${c.name}: renders as sent ${yes(d.rendered)}, first-party ${yes(e.rendered)}; ` +
      `escapes: ${escapes.length ? escapes.join(', ') : 'none'}${unchanged ? '; the edge left the adm as sent' : ''}`)
    for (const [how, x] of [['as sent', d], ['first-party', e]]) {
      if (!x.rendered) console.log(`      ${how}: not holding: ${x.failing.join('; ')}; ${[...new Set(x.notes)].join('; ')}`)
      const failed = failedOf(x.requests)
      if (failed.length) console.log(`      ${how}: failed requests: ${failed.join(', ')}`)
      for (const note of x.notes.filter((n) => n.startsWith('click'))) console.log(`      ${how}: ${note}`)
    }
    if (e.clicked) console.log(`      first-party: the click requested ${e.clicked.map((r) => `${r.method} ${short(r.url)}`).join(', ') || 'nothing'}`)
    if (d.rendered && d.clicked?.length === 0) problem(`${c.name}: the click made no request as sent`)
    if (e.rendered && e.clicked?.length === 0) problem(`${c.name}: the click made no request first-party`)
    if (seen !== expected) {
      const why = {
        breaks: `renders as sent but not first-party (${e.failing.join('; ')})`,
        fixes: `renders first-party but not as sent (${d.failing.join('; ')})`,
        fails: `renders neither as sent (${d.failing.join('; ')}) nor first-party (${e.failing.join('; ')})`,
        escapes: `renders both ways, first-party with escaping requests (${escapes.join(', ')})`,
        'first-party': 'renders both ways, first-party with every request on the first-party host',
      }[seen]
      problem(`${c.name}: ${why}; the manifest says "auction": "${c.auction}": set it to ` +
        `${seen === 'first-party' ? '"first-party"' : `"${seen}: <why>"`} in fixtures/creatives/manifest.json`)
    }
  }
} catch (e) {
  problem(`aborted: ${e.stack ?? e}`)
} finally {
  clearTimeout(watchdog)
  await Promise.race([browser.close().catch(() => {}), sleep(10_000)])
}

const ran = rows.filter((r) => !r.na)
const n = ran.length
const count = (f) => ran.filter(f).length
const pad = (s, w) => String(s).padEnd(w)
const width = Math.max(8, ...rows.map((r) => r.name.length))
console.log('')
console.log(`  ${pad('creative', width)}  as-sent  first-party  expected     escapes`)
for (const r of rows) {
  if (r.na) {
    console.log(`  ${pad(r.name, width)}  ${pad('-', 7)}  ${pad('-', 11)}  n/a`)
    continue
  }
  console.log(`  ${pad(r.name, width)}  ${pad(r.direct ? 'yes' : 'NO', 7)}  ${pad(r.edge ? 'yes' : 'NO', 11)}  ` +
    `${pad(r.expected, 11)}  ${r.escapes.length ? r.escapes.join(', ') : '-'}`)
}
const broken = ran.filter((r) => r.direct && !r.edge).map((r) => r.name)
console.log('')
if (broken.length) {
  console.log(`creative corpus (auction): RENDER AS SENT BUT NOT FIRST-PARTY (${broken.length}): ${broken.join(', ')}`)
}
console.log(`creative corpus (auction): as sent: ${count((r) => r.direct)}/${n} render; first-party: ` +
  `${count((r) => r.edge)}/${n} render, ${count((r) => r.edge && r.escapes.length === 0)}/${n} without escaping ` +
  `(${count((r) => r.escapes.some((x) => x.startsWith('partner')))} reach a partner host, ` +
  `${count((r) => r.escapes.some((x) => x.startsWith('other')))} another host); ` +
  `${rows.length - n} n/a; ${((Date.now() - t0) / 1000).toFixed(1)}s`)
const code = problems.length === 0 && rows.length === creatives.length ? 0 : 1
console.log(code === 0
  ? 'creative corpus (auction): PASSED: every creative as the manifest expects'
  : `creative corpus (auction): FAILED with ${problems.length} problem(s)`)
process.exit(code)
