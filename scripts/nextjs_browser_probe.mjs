// Drives the real Next.js app in headless Chromium once and records every request the browser
// makes under /next/ (page loads, client-side navigations, prefetches, static assets).
//
//   node scripts/nextjs_browser_probe.mjs http://127.0.0.1:PORT OUT.json
//
// playwright-core is resolved from .tools/ (scripts/capture-nextjs-fixtures.sh installs it);
// the browser is Debian's /usr/bin/chromium (or $CHROMIUM).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { launch, playwrightChromium } from '../tests/browser/chromium.mjs'

const chromium = playwrightChromium()

const [base, out] = process.argv.slice(2)
if (!base || !out) {
  console.error('usage: nextjs_browser_probe.mjs BASE_URL OUT.json')
  process.exit(2)
}

const STEP_TIMEOUT_MS = 20_000
// Quiet time after a step before the next one: lets viewport prefetches fire and finish.
const SETTLE_MS = 2_500

const userDataDir = mkdtempSync(path.join(tmpdir(), 'nextjs-probe-'))
const context = await launch(chromium, userDataDir)

const requests = []
const problems = []
let step = 'start'
try {
  // The pages use the origin's public host in absolute URLs (images, links); send those
  // requests to the local server, as DNS would for the real origin.
  await context.route(/^http:\/\/origin\.demo-publisher\.example\//, (route) =>
    route.continue({ url: route.request().url().replace('http://origin.demo-publisher.example', base) }),
  )
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(STEP_TIMEOUT_MS)
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') {
      problems.push({ step, kind: `console.${msg.type()}`, text: msg.text() })
    }
  })
  page.on('pageerror', (err) => problems.push({ step, kind: 'pageerror', text: String(err) }))
  const t0 = Date.now()
  const entryOf = (req) => requests.find((r) => r.request === req)
  page.on('requestfailed', (req) => {
    const entry = entryOf(req)
    if (entry) {
      entry.failed = req.failure()?.errorText ?? 'failed'
      entry.ended_ms = Date.now() - t0
    }
  })
  page.on('requestfinished', (req) => {
    const entry = entryOf(req)
    if (entry) entry.ended_ms = Date.now() - t0
  })
  const pending = []
  page.on('request', (req) => {
    const entry = {
      request: req,
      started_ms: Date.now() - t0,
      step,
      method: req.method(),
      url: req.url(),
      resource_type: req.resourceType(),
      navigation: req.isNavigationRequest(),
    }
    requests.push(entry)
    pending.push(
      req.allHeaders().then((h) => {
        entry.headers = h
      }),
    )
  })
  page.on('response', (res) => {
    const entry = entryOf(res.request())
    if (entry) {
      entry.status = res.status()
      entry.content_type = res.headers()['content-type'] ?? null
    }
  })

  const hydrated = async () => {
    await page.waitForSelector('html[data-hydrated="true"]')
    await page.waitForLoadState('load')
    await page.waitForTimeout(SETTLE_MS)
  }

  step = 'load /next'
  await page.goto(`${base}/next`)
  await hydrated()

  step = 'navigate /next -> /next/about'
  await page.click('main a[href="/next/about"]')
  await page.waitForURL(`${base}/next/about`)
  await page.waitForSelector('text=The masthead (after 400 ms)')
  await page.waitForTimeout(SETTLE_MS)

  step = 'navigate /next/about -> /next/live'
  await page.click('nav a[href="/next/live"]')
  await page.waitForURL(`${base}/next/live`)
  await page.waitForSelector('text=800 ms: update #7')
  await page.waitForTimeout(SETTLE_MS)

  step = 'navigate /next/live -> /next/nonce'
  await page.click('nav a[href="/next/nonce"]')
  await page.waitForURL(`${base}/next/nonce`)
  await page.waitForSelector('text=After 500 ms, still nonce-protected')
  await page.waitForTimeout(SETTLE_MS)

  step = 'navigate /next/nonce -> /next'
  await page.click('nav a[href="/next"]')
  await page.waitForURL(`${base}/next`)
  await page.waitForSelector('text=Arrived after 700 ms')
  await page.waitForTimeout(SETTLE_MS)

  for (const p of ['/next/about', '/next/live', '/next/nonce']) {
    step = `load ${p}`
    await page.goto(`${base}${p}`)
    await hydrated()
  }
  await Promise.all(pending)
} finally {
  await context.close()
  rmSync(userDataDir, { recursive: true, force: true })
}

for (const r of requests) delete r.request
writeFileSync(out, JSON.stringify({ base, requests, problems }, null, 2) + '\n')
console.log(`probe: ${requests.length} requests, ${problems.length} problems -> ${out}`)
