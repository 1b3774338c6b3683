// The navigation auction in headless Chromium: the service auctions the two slots of the demo
// page (fixtures/site/ads.html, [[auction.slots]] for /ads.html) while the page streams and
// writes the winners into it as <script type="application/json" id="ts-bids">; the first-party
// script (tsjs) renders them. Checks:
//   - the page came through the service with a #ts-bids block, and made no request to
//     /_ts/openrtb2/auction (the bids came with the page);
//   - tsjs.bids has a winning bid with a non-empty hb_pb and a size of its slot for each slot
//     (ad-top 728x90 or 970x250, ad-side 300x250 or 300x600), and the page's caption shows it;
//   - each slot holds one frame, sandboxed without allow-same-origin, of the bid's size, whose
//     srcdoc document has an <img> that loaded (the demo bidders' creatives are <a><img></a>);
//   - each bid's burl was requested once per slot it won, on the first-party host;
//   - then tsjs.pageBids('/ads.html') (what a single-page app calls after a navigation) asks
//     /_ts/page-bids?path=%2Fads.html once, and both slots render again in new frames, each
//     new burl requested once;
//   - no console error, no uncaught page error, no failed request, and every request the page
//     made, and every resource its creative frames loaded (their Resource Timing: playwright does
//     not see requests from Chromium's process-isolated sandboxed frames), went to the
//     first-party host (the report lists them).
//
//   node tests/browser/page-bids.mjs http://127.0.0.1:PORT
//
// BASE is the service (under Viceroy) proxying the demo origin, with the demo's
// [[auction.slots]] for /ads.html enabled. Exit 0 when everything held, 1 on any problem, 2 on
// bad usage, 3 when Chromium or playwright-core is missing.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { CHROMIUM, chromiumOrExit, launch, trackPage } from './chromium.mjs'

/** Longest wait for any one thing (the page load, a render, an image). */
const STEP_TIMEOUT_MS = 20_000
/** The whole run; past it the report so far is printed and the run fails. */
const TOTAL_TIMEOUT_MS = 90_000
const ENDPOINT = '/_ts/openrtb2/auction'
const PAGE_BIDS = '/_ts/page-bids?path=%2Fads.html'
const SLOTS = { 'ad-top': ['728x90', '970x250'], 'ad-side': ['300x250', '300x600'] }

const base = process.argv[2]?.replace(/\/+$/, '')
if (!base || !/^https?:\/\/[^/]+$/.test(base)) {
  console.error('usage: node tests/browser/page-bids.mjs http://HOST:PORT')
  process.exit(2)
}
const host = new URL(base).host
const chromium = chromiumOrExit('page-bids test')

const t0 = Date.now()
const problems = []
const problem = (text) => {
  problems.push(text)
  console.log(`    PROBLEM ${text}`)
}

/** Every request the page and its frames made: method, URL, type, status or failure. */
const requests = []
const track = (page) => trackPage(page, requests, problem)

/**
 * What the creative frames loaded, from their own Resource Timing entries: Chromium isolates
 * sandboxed frames in processes of their own, and playwright's request events miss requests
 * made there (seen: a creative's <img> fetched, no event), so the frames are asked too.
 */
const frameResources = []

/** Why a request failed, or null: no response, a status of 400 or more, a broken transfer. */
function failed(r) {
  if (r.status === null) return r.failure ?? 'no response'
  if (r.status >= 400) return `status ${r.status}`
  if (r.failure) return `${r.failure} after status ${r.status}`
  return null
}

/** The page's bids as plain data (tsjs.bids is frozen, not cloneable as is), or null. */
function readBids(page) {
  return page.evaluate(() => (window.tsjs && window.tsjs.bids ? JSON.parse(JSON.stringify(window.tsjs.bids)) : null))
}

/** Waits until every slot holds a frame no earlier phase saw, and marks them as `phase`'s. */
async function waitFrames(page, phase) {
  try {
    await page.waitForFunction(
      ({ ids, phase }) => {
        const frames = ids.map((id) => document.querySelector(`#${id} > iframe`))
        if (!frames.every((f) => f && f.dataset.phase === undefined)) return false
        // Marked, so the next phase can tell its frames from these.
        for (const f of frames) f.dataset.phase = phase
        return true
      },
      { ids: Object.keys(SLOTS), phase },
      { timeout: STEP_TIMEOUT_MS },
    )
    return true
  } catch (e) {
    problem(`${phase}: the slots never all held a new frame: ${e.message.split('\n')[0]}`)
    return false
  }
}

/**
 * Each slot against `bids`: a winner with hb_pb and a size of the slot, one frame of its size
 * and bid, sandboxed without allow-same-origin, whose document has an <img> that loaded.
 */
async function checkSlots(page, bids, phase) {
  for (const [id, sizes] of Object.entries(SLOTS)) {
    const slot = bids?.[id]
    const bid = slot?.bid
    const keys = slot?.targeting ?? {}
    console.log(`    ${phase} ${id}: ${bid ? `${bid.bidder} ${bid.id} price ${bid.price} ${bid.w}x${bid.h}` : 'no bid'}; targeting ${JSON.stringify(keys)}`)
    if (!bid) {
      problem(`${phase}: ${id} has no winning bid in tsjs.bids`)
      continue
    }
    if (typeof keys.hb_pb !== 'string' || keys.hb_pb === '') problem(`${phase}: ${id} has no hb_pb: ${JSON.stringify(keys.hb_pb)}`)
    if (!sizes.includes(`${bid.w}x${bid.h}`)) problem(`${phase}: ${id}'s winner is ${bid.w}x${bid.h}, not ${sizes.join(' or ')}`)
    const frames = await page.$$(`#${id} > iframe`)
    const children = await page.$eval(`#${id}`, (e) => e.children.length)
    if (frames.length !== 1 || children !== 1) problem(`${phase}: ${id} holds ${children} element(s), ${frames.length} frame(s), not one frame`)
    if (frames.length === 0) continue
    const attrs = await frames[0].evaluate((f) => ({
      sandbox: f.getAttribute('sandbox'),
      width: f.getAttribute('width'),
      height: f.getAttribute('height'),
      bid: f.getAttribute('data-ts-bid'),
      srcdoc: f.hasAttribute('srcdoc'),
    }))
    if (attrs.sandbox === null || /\ballow-same-origin\b/.test(attrs.sandbox)) problem(`${phase}: ${id}'s frame sandbox is ${JSON.stringify(attrs.sandbox)}`)
    if (attrs.width !== String(bid.w) || attrs.height !== String(bid.h)) problem(`${phase}: ${id}'s frame is ${attrs.width}x${attrs.height}, its bid ${bid.w}x${bid.h}`)
    if (attrs.bid !== String(bid.id)) problem(`${phase}: ${id}'s frame shows bid ${attrs.bid}, tsjs.bids has ${bid.id}`)
    if (!attrs.srcdoc) problem(`${phase}: ${id}'s frame has no srcdoc`)
    const frame = await frames[0].contentFrame()
    if (!frame) {
      problem(`${phase}: ${id}'s frame has no document`)
      continue
    }
    try {
      await frame.waitForLoadState('load', { timeout: STEP_TIMEOUT_MS })
      await frame.waitForFunction(
        () => document.images.length > 0 && [...document.images].every((i) => i.complete && i.naturalWidth > 0),
        null,
        { timeout: STEP_TIMEOUT_MS },
      )
    } catch (e) {
      problem(`${phase}: ${id}'s creative has no loaded <img>: ${e.message.split('\n')[0]}`)
    }
    const images = await frame
      .evaluate(() => [...document.images].map((i) => ({ src: i.currentSrc || i.src, loaded: i.complete && i.naturalWidth > 0 })))
      .catch((e) => `unreadable: ${e.message.split('\n')[0]}`)
    console.log(`    ${phase} ${id} creative: images ${JSON.stringify(images)}`)
    for (const f of [frame, ...frame.childFrames()]) {
      const names = await f.evaluate(() => performance.getEntriesByType('resource').map((e) => e.name)).catch((e) => {
        problem(`${phase}: ${id}'s creative frame could not be read: ${e.message.split('\n')[0]}`)
        return []
      })
      frameResources.push(...names.map((url) => ({ url, where: `${phase} ${id}` })))
    }
  }
}

/** Each winner's burl: requested once among `seen`, on the first-party host. */
function checkBurls(bids, seen, phase) {
  for (const id of Object.keys(SLOTS)) {
    const burl = bids?.[id]?.bid?.burl
    if (typeof burl !== 'string' || burl === '') {
      problem(`${phase}: ${id}'s bid has no burl`)
      continue
    }
    const url = new URL(burl, base)
    if (url.host !== host) problem(`${phase}: ${id}'s burl is on ${url.host}, not the first-party host ${host}`)
    const hits = seen.filter((r) => r.url === url.href)
    // Two slots won by one bidder at one price may share a burl (the demo bidders' name the
    // bidder and price, not the slot): once per slot that has it.
    const want = Object.keys(SLOTS).filter((other) => bids?.[other]?.bid?.burl === burl).length
    console.log(`    ${phase} ${id} burl: ${hits.length} request(s) ${hits.map((r) => `${r.method} -> ${r.status ?? r.failure}`).join(', ')}`)
    if (hits.length !== want) problem(`${phase}: ${id}'s burl was requested ${hits.length} times, not ${want} (once per slot with it): ${url.href}`)
  }
}

/** Every request: failures are problems, and so is any host but the first-party one. */
function checkRequests() {
  const hosts = {}
  for (const r of requests) {
    const h = new URL(r.url).host
    hosts[h] = (hosts[h] ?? 0) + 1
    const why = failed(r)
    if (why) problem(`request failed (${why}): ${r.method} ${r.url}`)
  }
  console.log(`    ${requests.length} requests, by host: ${JSON.stringify(hosts)}`)
  for (const r of requests) console.log(`      ${r.method} ${r.url} [${r.type}] -> ${r.status ?? r.failure}`)
  for (const h of Object.keys(hosts)) {
    if (h !== host) problem(`${hosts[h]} request(s) went to ${h}, not the first-party host ${host}`)
  }
  console.log(`    ${frameResources.length} resource(s) loaded in the creative frames`)
  for (const r of frameResources) {
    console.log(`      ${r.where}: ${r.url}`)
    if (new URL(r.url).host !== host) problem(`${r.where}: the creative loaded ${r.url}, not on the first-party host ${host}`)
  }
  if (frameResources.length === 0) problem('the creative frames report no resource loaded (their <img>s at least)')
  const auctions = requests.filter((r) => new URL(r.url).pathname === ENDPOINT)
  if (auctions.length !== 0) problem(`the page asked ${ENDPOINT} ${auctions.length} time(s): the bids should come with the page`)
}

const userDataDir = mkdtempSync(path.join(tmpdir(), 'ts-page-bids-'))
let context = null
let finished = false
async function finish() {
  if (finished) return
  finished = true
  clearTimeout(watchdog)
  const closing = context ? context.close().catch(() => {}) : Promise.resolve()
  await Promise.race([closing, new Promise((r) => setTimeout(r, 10_000))])
  rmSync(userDataDir, { recursive: true, force: true })
  const took = `${((Date.now() - t0) / 1000).toFixed(1)}s`
  if (problems.length === 0) {
    console.log(`page-bids test: PASSED in ${took}: both slots rendered the bids written into the page, and again from ${PAGE_BIDS}, all on ${host}`)
  } else {
    console.log(`page-bids test: FAILED in ${took} with ${problems.length} problem(s):`)
    for (const p of problems) console.log(`  - ${p}`)
  }
  process.exit(problems.length === 0 ? 0 : 1)
}
const watchdog = setTimeout(() => {
  problem(`the whole run took longer than ${TOTAL_TIMEOUT_MS / 1000}s`)
  finish()
}, TOTAL_TIMEOUT_MS)

try {
  console.log(`page-bids test: ${CHROMIUM} via playwright-core, ${base}/ads.html`)
  context = await launch(chromium, userDataDir, { timeout: STEP_TIMEOUT_MS })
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(STEP_TIMEOUT_MS)
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS)
  track(page)
  const res = await page.goto(`${base}/ads.html`, { waitUntil: 'load' })
  if (!res || res.status() !== 200) problem(`document status ${res?.status()}`)
  else if (!res.headers()['x-ts-version']) problem('the page did not come through the service (no x-ts-version)')
  const block = await page.evaluate(() => document.getElementById('ts-bids')?.getAttribute('type') ?? null)
  if (block !== 'application/json') problem(`the page has no <script type="application/json" id="ts-bids"> (found ${JSON.stringify(block)})`)

  // Phase 1: the bids written into the page.
  if (await waitFrames(page, 'page')) {
    const bids = await readBids(page)
    await checkSlots(page, bids, 'page')
    checkBurls(bids, requests, 'page')
    for (const id of Object.keys(SLOTS)) {
      const caption = await page.textContent(`#${id}-caption`)
      const pb = bids?.[id]?.targeting?.hb_pb
      if (pb && !caption.includes(pb)) problem(`page: ${id}'s caption does not show hb_pb ${pb}: ${JSON.stringify(caption)}`)
    }

    // Phase 2: what a single-page app does after a navigation.
    const from = requests.length
    const before = Object.fromEntries(Object.keys(SLOTS).map((id) => [id, bids?.[id]?.bid?.id]))
    const answered = await page.evaluate(() => window.tsjs.pageBids('/ads.html').then((s) => (s ? Object.keys(s) : null)))
    console.log(`    pageBids('/ads.html') resolved slots ${JSON.stringify(answered)}`)
    if (answered === null) problem(`tsjs.pageBids('/ads.html') resolved null`)
    if (await waitFrames(page, 'pageBids')) {
      const again = await readBids(page)
      await checkSlots(page, again, 'pageBids')
      const seen = requests.slice(from)
      checkBurls(again, seen, 'pageBids')
      for (const id of Object.keys(SLOTS)) {
        const now = again?.[id]?.bid?.id
        console.log(`    ${id}: bid ${before[id]} then ${now}${now === before[id] ? ' (same id, new frame)' : ''}`)
      }
    }
    const asks = requests.filter((r) => {
      const u = new URL(r.url)
      return u.pathname + u.search === PAGE_BIDS
    })
    if (asks.length !== 1) problem(`expected one request to ${PAGE_BIDS}, saw ${asks.length}`)
    for (const r of asks) {
      if (new URL(r.url).host !== host) problem(`${PAGE_BIDS} went to ${new URL(r.url).host}`)
      if (r.method !== 'GET' || r.status !== 200) problem(`${PAGE_BIDS}: ${r.method} answered ${r.status ?? r.failure}`)
    }
  }
  checkRequests()
} catch (e) {
  problem(`aborted: ${e.stack ?? e}`)
}
await finish()
