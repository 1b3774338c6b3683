// Shows what the demo page's Prebid.js sends to the auction endpoint, without the service: opens
// /auction.html from a server that serves fixtures/site (the demo origin, started by hand),
// intercepts the POST to /_ts/openrtb2/auction, answers it with a canned response in Prebid
// Server's shape (a `fast` and a `slow` bid per imp, targeting in bid.ext.prebid.targeting) and
// checks that the page renders a winner in each slot. Writes the request Prebid made (URL,
// headers with cookies, parsed body) to example-request.json and the canned answer to
// example-response.json beside this file.
//
//   node js/prebid/capture.mjs http://127.0.0.1:PORT
//
// Not a test of the service: tests/browser/auction.mjs loads the page through the service and
// its real endpoint. Needs the bundle (scripts/setup.sh, ensure_prebid_bundle) and Chromium with
// playwright-core (ensure_browser).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { launch, playwrightChromium } from '../../tests/browser/chromium.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const base = process.argv[2]?.replace(/\/+$/, '')
if (!base) {
  console.error('usage: node js/prebid/capture.mjs http://HOST:PORT')
  process.exit(2)
}

/** The canned answer: per imp a `fast` bid at 1.37 and a `slow` one at 0.42, Prebid Server's shape. */
function answer(request) {
  const seat = (name, price) => ({
    seat: name,
    bid: request.imp.map((imp, i) => {
      const { w, h } = imp.banner.format[0]
      return {
        id: `${name}-${i}`,
        impid: imp.id,
        price,
        adm: `<img src="/static/hero.png?w=${w}&h=${h}&bidder=${name}" width="${w}" height="${h}" alt="${name} ad">`,
        adomain: ['advertiser.example'],
        crid: `${name}-creative-${i}`,
        w,
        h,
        ext: {
          prebid: {
            type: 'banner',
            targeting: { hb_bidder: name, hb_pb: price.toFixed(2).replace(/\d$/, '0'), hb_size: `${w}x${h}` },
          },
        },
      }
    }),
  })
  return {
    id: request.id,
    seatbid: [seat('fast', 1.37), seat('slow', 0.42)],
    cur: 'USD',
    ext: { responsetimemillis: { fast: 2, slow: 104 }, tmaxrequest: request.tmax },
  }
}

const chromium = playwrightChromium()
const userDataDir = mkdtempSync(path.join(tmpdir(), 'ts-prebid-capture-'))
const context = await launch(chromium, userDataDir, { timeout: 20_000 })
const problems = []
try {
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(20_000)
  const consoleErrors = []
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()) })
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`))
  const requests = []
  page.on('request', (r) => requests.push(`${r.method()} ${r.url()}`))
  // A cookie on the page's host, to see whether Prebid's POST carries it.
  await context.addCookies([{ name: 'reader', value: 'r1', url: base }])
  let captured = null
  await page.route('**/_ts/openrtb2/auction*', async (route) => {
    const r = route.request()
    const body = JSON.parse(r.postData())
    captured = { method: r.method(), url: r.url(), headers: await r.allHeaders(), body }
    const response = answer(body)
    writeFileSync(path.join(here, 'example-response.json'), JSON.stringify(response, null, 2) + '\n')
    await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(response) })
  })
  await page.goto(`${base}/auction.html`, { waitUntil: 'load' })
  await page.waitForFunction(() => document.body.dataset.auction === 'done' && document.body.dataset.render === 'done')
  const report = JSON.parse(await page.locator('#bids').textContent())
  console.log(JSON.stringify(report, null, 2))
  const imgs = []
  for (const frame of page.frames()) {
    if (frame === page.mainFrame()) continue
    imgs.push(...(await frame.evaluate(() => [...document.images].map((i) => `${i.src} ${i.naturalWidth}x${i.naturalHeight}`))))
  }
  console.log('creative images:', imgs)
  console.log('requests:', requests)
  console.log('console errors:', consoleErrors)
  if (!captured) problems.push('no POST to the endpoint')
  else writeFileSync(path.join(here, 'example-request.json'), JSON.stringify(captured, null, 2) + '\n')
  for (const code of ['div-banner-1', 'div-banner-2']) {
    const slot = report.slots[code]
    if (!slot?.winner?.hb_pb || slot.render !== 'succeeded') problems.push(`${code}: ${JSON.stringify(slot)}`)
  }
  if (imgs.length !== 2) problems.push(`${imgs.length} creative images`)
  if (consoleErrors.length) problems.push(`console errors: ${consoleErrors.join('; ')}`)
} finally {
  await context.close()
  rmSync(userDataDir, { recursive: true, force: true })
}
console.log(problems.length ? `capture: ${problems.length} problem(s): ${problems.join(' | ')}` : 'capture: the page rendered both winners')
process.exit(problems.length ? 1 : 0)
