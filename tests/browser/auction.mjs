// A Prebid.js auction through the service, in headless Chromium: the demo page
// (fixtures/site/auction.html, with Prebid.js 11 from js/prebid bundled to /_gen/prebid.js)
// sends its two ad slots to the service's Prebid Server-compatible endpoint, and the winners
// must render. Checks:
//   - the page came through the service, and Prebid POSTed its OpenRTB request to
//     /_ts/openrtb2/auction on the page's own (first-party) host, once, answered 200 with JSON;
//   - each slot (div-banner-1 300x250, div-banner-2 728x90) has a winning bid from `fast` or
//     `slow` with a non-empty hb_pb, and Prebid reported its render as succeeded;
//   - the creative rendered: the frame in each slot (or a frame inside it: Prebid 11 renders
//     the markup into a frame of its own) has an <img>;
//   - no console error, no uncaught page error, no failed request, and every request the page
//     made went to the first-party host (the report lists the hosts).
//
//   node tests/browser/auction.mjs http://127.0.0.1:PORT
//
// BASE is the service (under Viceroy) proxying the demo origin, which serves the page and the
// bundle (scripts/setup.sh, ensure_prebid_bundle, builds it). Exit 0 when everything held, 1 on
// any problem, 2 on bad usage, 3 when Chromium or playwright-core is missing.
// crates/e2e/tests/browser.rs runs it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { CHROMIUM, chromiumOrExit, launch, trackPage } from './chromium.mjs'

/** Longest wait for any one thing (the page load, the auction, the renders). */
const STEP_TIMEOUT_MS = 20_000
/** The whole run; past it the report so far is printed and the run fails. */
const TOTAL_TIMEOUT_MS = 90_000
const ENDPOINT = '/_ts/openrtb2/auction'
const SLOTS = { 'div-banner-1': '300x250', 'div-banner-2': '728x90' }
const BIDDERS = ['fast', 'slow']

const base = process.argv[2]?.replace(/\/+$/, '')
if (!base || !/^https?:\/\/[^/]+$/.test(base)) {
  console.error('usage: node tests/browser/auction.mjs http://HOST:PORT')
  process.exit(2)
}
const host = new URL(base).host
const chromium = chromiumOrExit('auction test')

const t0 = Date.now()
const problems = []
const problem = (text) => {
  problems.push(text)
  console.log(`    PROBLEM ${text}`)
}

/** Every request the page made: method, URL, type, status or failure. */
const requests = []
const track = (page) => trackPage(page, requests, problem)

/** Why a request failed, or null: no response, a status of 400 or more, a broken transfer. */
function failed(r) {
  if (r.status === null) return r.failure ?? 'no response'
  if (r.status >= 400) return `status ${r.status}`
  if (r.failure) return `${r.failure} after status ${r.status}`
  return null
}

/** Waits for `body[data-NAME="done"]`; a problem when it never comes. */
async function waitDone(page, name) {
  try {
    await page.waitForFunction((n) => document.body?.dataset[n] === 'done', name, { timeout: STEP_TIMEOUT_MS })
    return true
  } catch (e) {
    problem(`data-${name} never became "done": ${e.message.split('\n')[0]}`)
    return false
  }
}

/** The OpenRTB POST(s) to the endpoint: where they went, the answer, the request's shape. */
async function checkEndpoint() {
  const posts = requests.filter((r) => new URL(r.url).pathname === ENDPOINT)
  if (posts.length !== 1) problem(`expected one request to ${ENDPOINT}, saw ${posts.length}`)
  for (const r of posts) {
    const url = new URL(r.url)
    const response = await r.req.response().catch(() => null)
    const headers = response ? await response.allHeaders() : {}
    console.log(`    endpoint: ${r.method} ${r.url} -> ${r.status ?? r.failure} ${headers['content-type'] ?? ''}`)
    if (url.host !== host) problem(`the auction request went to ${url.host}, not the first-party host ${host}`)
    if (r.method !== 'POST') problem(`the auction request was a ${r.method}`)
    if (r.status !== 200) problem(`the auction request was answered ${r.status ?? r.failure}`)
    if (!(headers['content-type'] ?? '').startsWith('application/json')) {
      problem(`the auction answer's content type is ${headers['content-type']}`)
    }
    let body = null
    try {
      body = JSON.parse(r.req.postData() ?? '')
    } catch (e) {
      problem(`the auction request's body is not JSON: ${e.message}`)
    }
    if (body) {
      const imps = (body.imp ?? []).map((imp) => `${imp.id} [${Object.keys(imp.ext?.prebid?.bidder ?? {}).join(',')}]`)
      console.log(`    request: ${imps.length} imps (${imps.join('; ')}), tmax ${body.tmax}`)
      for (const code of Object.keys(SLOTS)) {
        const imp = body.imp?.find((i) => i.id === code)
        if (!imp) problem(`the auction request has no imp ${code}`)
        for (const bidder of BIDDERS) {
          if (imp && !imp.ext?.prebid?.bidder?.[bidder]) problem(`imp ${code} does not ask ${bidder}`)
        }
      }
    }
    if (response) {
      try {
        const answer = JSON.parse((await response.body()).toString('utf8'))
        const seats = (answer.seatbid ?? []).map((s) => `${s.seat}: ${(s.bid ?? []).map((b) => `${b.impid} ${b.price}`).join(', ')}`)
        console.log(`    answer: ${seats.join('; ') || 'no seatbid'}; responsetimemillis ${JSON.stringify(answer.ext?.responsetimemillis)}`)
        // Prebid Server answers with the request's id.
        if (body && answer.id !== body.id) problem(`the answer's id ${JSON.stringify(answer.id)} is not the request's ${JSON.stringify(body.id)}`)
      } catch (e) {
        problem(`the auction answer is not JSON: ${e.message.split('\n')[0]}`)
      }
    }
  }
}

/** The page's own report (#bids): a winner per slot from fast or slow, with hb_pb, rendered. */
async function checkWinners(page) {
  const report = JSON.parse((await page.locator('#bids').textContent()) || '{}')
  console.log(`    auction ${report.auctionId}: timed out ${report.timedOut}`)
  for (const [code, size] of Object.entries(SLOTS)) {
    const slot = report.slots?.[code]
    const w = slot?.winner
    console.log(`    ${code}: received ${JSON.stringify(slot?.received)}; winner ${w ? `${w.bidder} cpm ${w.cpm} hb_pb ${w.hb_pb} ${w.size}` : 'none'}; render ${slot?.render}`)
    if (!w) {
      problem(`${code} has no winning bid`)
      continue
    }
    if (!BIDDERS.includes(w.bidder)) problem(`${code}'s winner is from ${w.bidder}, not ${BIDDERS.join(' or ')}`)
    if (typeof w.hb_pb !== 'string' || w.hb_pb === '') problem(`${code}'s winner has no hb_pb: ${JSON.stringify(w.hb_pb)}`)
    if (w.size !== size) problem(`${code}'s winner is ${w.size}, not ${size}`)
    if (slot.render !== 'succeeded') problem(`${code}: Prebid's render ${slot.render ?? 'never reported'}`)
  }
}

/** Each slot's creative: an <img> in the frame the page made, or in a frame inside it. */
async function checkCreatives(page) {
  for (const code of Object.keys(SLOTS)) {
    const handle = await page.$(`#${code} iframe`)
    const frame = handle ? await handle.contentFrame() : null
    if (!frame) {
      problem(`${code} has no creative frame`)
      continue
    }
    const frames = [frame, ...frame.childFrames(), ...frame.childFrames().flatMap((f) => f.childFrames())]
    const images = []
    for (const f of frames) {
      try {
        await f.waitForLoadState('load', { timeout: STEP_TIMEOUT_MS })
        images.push(...(await f.evaluate(() =>
          [...document.images].map((i) => ({ src: i.currentSrc || i.src, loaded: i.complete && i.naturalWidth > 0 })),
        )))
      } catch (e) {
        console.log(`    (${code}: a frame could not be read: ${e.message.split('\n')[0]})`)
      }
    }
    console.log(`    ${code} creative: ${frames.length} frame(s), images ${JSON.stringify(images)}`)
    if (images.length === 0) problem(`${code}'s creative has no <img>`)
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
}

const userDataDir = mkdtempSync(path.join(tmpdir(), 'ts-auction-'))
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
    console.log(`auction test: PASSED in ${took}: Prebid's request went to ${ENDPOINT} on ${host}, both slots rendered a winner`)
  } else {
    console.log(`auction test: FAILED in ${took} with ${problems.length} problem(s):`)
    for (const p of problems) console.log(`  - ${p}`)
  }
  process.exit(problems.length === 0 ? 0 : 1)
}
const watchdog = setTimeout(() => {
  problem(`the whole run took longer than ${TOTAL_TIMEOUT_MS / 1000}s`)
  finish()
}, TOTAL_TIMEOUT_MS)

try {
  console.log(`auction test: ${CHROMIUM} via playwright-core, ${base}/auction.html`)
  context = await launch(chromium, userDataDir, { timeout: STEP_TIMEOUT_MS })
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(STEP_TIMEOUT_MS)
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS)
  track(page)
  const res = await page.goto(`${base}/auction.html`, { waitUntil: 'load' })
  if (!res || res.status() !== 200) problem(`document status ${res?.status()}`)
  else if (!res.headers()['x-ts-version']) problem('the page did not come through the service (no x-ts-version)')
  if (await waitDone(page, 'auction')) {
    await waitDone(page, 'render')
    await checkWinners(page)
    await checkCreatives(page)
  }
  await checkEndpoint()
  checkRequests()
} catch (e) {
  problem(`aborted: ${e.stack ?? e}`)
}
await finish()
