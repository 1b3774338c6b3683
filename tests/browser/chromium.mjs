// The headless Chromium both browser scripts use: Debian's /usr/bin/chromium (or $CHROMIUM)
// driven by playwright-core from .tools/ (scripts/setup.sh, ensure_browser). One place for the
// flags, so the test and the capture probe see the app the same way.
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

/** The browser executable. */
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium'

/** The flags every browser script launches Chromium with. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** playwright-core's `chromium`, resolved from .tools/; throws when it is not installed. */
export function playwrightChromium() {
  const require = createRequire(path.join(ROOT, '.tools', 'package.json'))
  return require('playwright-core').chromium
}

/** The User-Agent of a reader's Chrome. Headless Chromium names itself `HeadlessChrome`,
 * which the edge's `auction.bots` list takes for a crawler (no navigation auction); the
 * tests play readers. */
export const READER_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'

/** A persistent headless context in `userDataDir`, offline-friendly (no background traffic),
 * with a tall viewport so viewport prefetches fire as in a real visit, and a reader's
 * User-Agent ([`READER_UA`]). */
export function launch(chromium, userDataDir, options = {}) {
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 2000 },
    userAgent: READER_UA,
    ...options,
  })
}

/** playwright-core's `chromium` for the test named `label`; when the browser or
 * playwright-core is missing, says so and exits 3 (scripts/test.sh's set-up installs both). */
export function chromiumOrExit(label) {
  if (!existsSync(CHROMIUM)) {
    console.error(`${label}: ${CHROMIUM} is missing; run scripts/test.sh (ensure_browser) or apt-get install chromium`)
    process.exit(3)
  }
  try {
    return playwrightChromium()
  } catch (e) {
    console.error(`${label}: playwright-core not found in ${path.join(ROOT, '.tools')}: ${e.message}`)
    console.error('run scripts/test.sh (ensure_browser in scripts/setup.sh installs it)')
    process.exit(3)
  }
}

/** Records every request `page` makes into `requests` (`{ req, method, url, type, status,
 * failure }`, the status or failure filled in when known), and reports each console error and
 * uncaught page error through `problem` (console warnings are printed). */
export function trackPage(page, requests, problem) {
  const entryOf = (req) => requests.find((r) => r.req === req)
  page.on('request', (req) => {
    requests.push({ req, method: req.method(), url: req.url(), type: req.resourceType(), status: null, failure: null })
  })
  page.on('response', (res) => {
    const entry = entryOf(res.request())
    if (entry) entry.status = res.status()
  })
  page.on('requestfailed', (req) => {
    const entry = entryOf(req)
    if (entry) entry.failure = req.failure()?.errorText ?? 'failed'
  })
  page.on('console', (msg) => {
    const at = msg.location()?.url ? ` (${msg.location().url})` : ''
    if (msg.type() === 'error') problem(`console error: ${msg.text()}${at}`)
    else if (msg.type() === 'warning') console.log(`    (console warning: ${msg.text()})`)
  })
  page.on('pageerror', (err) => problem(`uncaught page error: ${err.message ?? err}`))
}
