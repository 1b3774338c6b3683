// A partner creative served through the first-party proxy, in headless Chromium: it must still
// render and run its own script, but never as the publisher. The reader first visits a
// publisher page (which sets the `ts-ec` cookie) and holds a cookie page code can read; the
// creative's script then tries to read `document.cookie` and to fetch `/_ts/ec` with
// credentials, and writes what it saw into the page. The proxy's sandbox (a CSP `sandbox`
// without `allow-same-origin`) gives the creative an opaque origin, so both must fail.
//
//   node tests/browser/creative.mjs http://127.0.0.1:PORT http://ads.demo-partner.example/probe.html
//
// BASE is the service under Viceroy; PROBE is the creative's URL at the test partner
// (crates/e2e/tests/browser.rs serves it and points the service's `first_party.resolve` at
// it). Exit 0 when everything held, 1 on any problem, 2 on bad usage, 3 when Chromium or
// playwright-core is missing.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { CHROMIUM, chromiumOrExit, launch } from './chromium.mjs'

/** Longest wait for any one thing (a page load, the creative's report). */
const STEP_TIMEOUT_MS = 20_000
/** The cookie the publisher's page code can read (not HttpOnly). */
const READER_COOKIE = 'reader_visible=publisher-secret'

const base = process.argv[2]?.replace(/\/+$/, '')
const probe = process.argv[3]
if (!base || !/^https?:\/\/[^/]+$/.test(base) || !probe) {
  console.error('usage: node tests/browser/creative.mjs http://HOST:PORT PROBE_URL')
  process.exit(2)
}
const chromium = chromiumOrExit('creative test')

const problems = []
const problem = (text) => {
  problems.push(text)
  console.log(`    PROBLEM ${text}`)
}

const userDataDir = mkdtempSync(path.join(tmpdir(), 'ts-creative-'))
let context = null
let code = 1
try {
  context = await launch(chromium, userDataDir, { timeout: STEP_TIMEOUT_MS })
  const page = context.pages()[0] ?? (await context.newPage())
  page.setDefaultTimeout(STEP_TIMEOUT_MS)
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS)

  // The reader on the publisher's page: an edge ID, a readable cookie, a signed creative URL.
  await page.goto(`${base}/next`, { waitUntil: 'load' })
  const reader = await page.evaluate(
    async ([cookie, probe]) => {
      document.cookie = `${cookie}; path=/`
      const ec = (await (await fetch('/_ts/ec')).json()).ec
      const sign = await fetch(`/first-party/sign?url=${encodeURIComponent(probe)}`)
      const signed = sign.ok ? (await sign.json()).url : `status ${sign.status}`
      return { ec, signed, cookies: document.cookie }
    },
    [READER_COOKIE, probe],
  )
  console.log(`    reader: edge ID ${reader.ec}, cookies "${reader.cookies}", creative at ${reader.signed}`)
  // The precondition, so a pass below means the sandbox, not a reader without secrets.
  if (!reader.ec) problem('the reader has no edge ID on the publisher page')
  if (!reader.cookies.includes(READER_COOKIE)) problem('the publisher page cannot read its own cookie')
  if (!String(reader.signed).startsWith('/first-party/proxy?')) problem(`sign: ${reader.signed}`)

  // The creative, loaded as a page on the publisher's host.
  const response = await page.goto(`${base}${reader.signed}`, { waitUntil: 'load' })
  console.log(`    creative: ${response?.status()}, content-security-policy "${response?.headers()['content-security-policy']}"`)
  const heading = await page.locator('#ad').textContent()
  if (heading !== 'An ad from the partner') problem(`the creative did not render: #ad is ${JSON.stringify(heading)}`)
  // Its script writes its report once both attempts settled.
  await page.waitForFunction(() => document.getElementById('report')?.textContent)
  const seen = JSON.parse(await page.locator('#report').textContent())
  console.log(`    the creative's script saw: ${JSON.stringify(seen)}`)
  if (seen.ran !== true) problem('the creative\'s script did not run')
  if (String(seen.cookie).includes('publisher-secret')) problem(`the creative read the publisher's cookie: ${seen.cookie}`)
  if (reader.ec && String(seen.ec).includes(reader.ec)) problem(`the creative got the reader's edge ID: ${seen.ec}`)
  if (String(seen.ec).startsWith('status 200')) problem(`the creative read /_ts/ec: ${seen.ec}`)
  code = problems.length === 0 ? 0 : 1
} catch (e) {
  problem(`aborted: ${e.stack ?? e}`)
} finally {
  const closing = context ? context.close().catch(() => {}) : Promise.resolve()
  await Promise.race([closing, new Promise((r) => setTimeout(r, 10_000))])
  rmSync(userDataDir, { recursive: true, force: true })
}
console.log(code === 0
  ? 'creative test: PASSED: the creative rendered and ran, without the publisher\'s cookies or edge ID'
  : `creative test: FAILED with ${problems.length} problem(s)`)
process.exit(code)
