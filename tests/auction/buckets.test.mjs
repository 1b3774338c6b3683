// Differential oracle for the price buckets (crates/core/src/auction/price.rs): Prebid.js's own
// `getPriceBucketString` (the npm package prebid.js, pinned, `dist/src/src/cpmBucketManager.js`)
// buckets thousands of prices in every granularity, and our `Granularity::bucket` (the
// `price_buckets` example binary: a line `<granularity JSON>\t<cpm>` in, a JSON string out)
// must print exactly the same string for each: seeded random prices, every range edge and its
// neighbours, multiples of every increment and their neighbours, negatives, NaN, infinities,
// tiny and huge values and float artefacts like 0.1 + 0.2.
//
// Run: node --test tests/auction/  (scripts/test.sh installs the pinned npm packages first with
// `npm ci --prefix tests/auction`). TS_PRICE_BUCKETS=<path> uses an already-built binary;
// otherwise the test builds it with cargo (release).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

import { JSDOM } from 'jsdom'

// Prebid.js's modules expect a browser: give them one before the first import.
const dom = new JSDOM('<!doctype html><html><body></body></html>', { url: 'https://publisher.example/' })
globalThis.window = dom.window
globalThis.document = dom.window.document
Object.defineProperty(globalThis, 'navigator', { value: dom.window.navigator, configurable: true })
// The package's `exports` do not list this file, so it is imported by its path.
const { getPriceBucketString } = await import(
  new URL('./node_modules/prebid.js/dist/src/src/cpmBucketManager.js', import.meta.url)
)

const ROOT = fileURLToPath(new URL('../../', import.meta.url))

function binary() {
  if (process.env.TS_PRICE_BUCKETS) return process.env.TS_PRICE_BUCKETS
  const build = spawnSync(
    'cargo',
    ['build', '--locked', '--release', '-p', 'trusted-server-core', '--example', 'price_buckets'],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
  )
  assert.equal(build.status, 0, 'cargo build of the price_buckets example failed')
  return path.join(ROOT, 'target', 'release', 'examples', 'price_buckets')
}
const BIN = binary()

/** A price as the binary reads it: JavaScript's own text, but −0 keeps its sign. */
const text = (cpm) => (Object.is(cpm, -0) ? '-0' : String(cpm))

/** Our buckets for many `[granularity JSON value, cpm]` pairs at once. */
function ours(cases) {
  const run = spawnSync(BIN, [], {
    input: cases.map(([g, cpm]) => `${JSON.stringify(g)}\t${text(cpm)}\n`).join(''),
    maxBuffer: 1 << 30,
  })
  assert.equal(run.status, 0, `price_buckets exited with ${run.status} (signal ${run.signal}): ${run.stderr}`)
  const lines = run.stdout.toString().split('\n').filter((l) => l !== '')
  assert.equal(lines.length, cases.length, 'one output line per input')
  return lines.map((l) => JSON.parse(l))
}

// A small seeded generator (mulberry32), so every run tests the same prices.
function rng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// The neighbouring doubles of a finite x.
const f64 = new Float64Array(1)
const bits = new BigInt64Array(f64.buffer)
function step(x, up) {
  if (x === 0) return up ? Number.MIN_VALUE : -Number.MIN_VALUE
  f64[0] = x
  bits[0] += (x > 0) === up ? 1n : -1n
  return f64[0]
}
const neighbours = (x) => [step(x, false), x, step(x, true)]

// Every granularity: the OpenRTB value we read, and what Prebid.js is given for it.
const NAMED = [
  ['low', 'low'],
  ['medium', 'med'],
  ['med', 'med'],
  ['MEDIUM', 'med'],
  ['high', 'high'],
  ['auto', 'auto'],
  ['Dense', 'dense'],
]
const CUSTOM = [
  // The shape of Prebid's documented custom example, precision left to its default.
  { ranges: [{ max: 3, increment: 0.01 }, { max: 8, increment: 0.05 }, { max: 20, increment: 0.5 }, { max: 99, increment: 1 }] },
  // Exact ties (0.125 · k) for toFixed, and steps that are not whole cents.
  { precision: 3, ranges: [{ max: 1, increment: 0.125 }, { max: 2.5, increment: 0.003 }, { max: 100, increment: 7 }] },
  { precision: 2, ranges: [{ max: 1, increment: 0.125 }, { max: 2.675, increment: 0.33 }] },
  // No decimals: 2.5 prints as 3.
  { precision: 0, ranges: [{ max: 10, increment: 2.5 }, { max: 1000, increment: 5 }] },
  // The finest precision, a binary step (2⁻¹¹: ties at the 10-decimal snap) and the largest max.
  { precision: 6, ranges: [{ max: 0.01, increment: 0.000001 }, { max: 1, increment: 0.00048828125 }, { max: 1e9, increment: 1e6 }] },
  // Steps finer than the precision prints, whose multiples land a float artefact away from a
  // half (3 · 0.005 + 0.16 ...): where the 10-decimal snap decides the last digit.
  { precision: 2, ranges: [{ max: 1, increment: 0.005 }, { max: 10, increment: 0.045 }] },
  { precision: 1, ranges: [{ max: 2, increment: 0.05 }, { max: 6, increment: 0.015 }, { max: 20, increment: 0.035 }] },
]
const RANGES = {
  low: [{ max: 5, increment: 0.5 }],
  med: [{ max: 20, increment: 0.1 }],
  high: [{ max: 20, increment: 0.01 }],
  auto: [{ max: 5, increment: 0.05 }, { max: 10, increment: 0.1 }, { max: 20, increment: 0.5 }],
  dense: [{ max: 3, increment: 0.01 }, { max: 8, increment: 0.05 }, { max: 20, increment: 0.5 }],
}

const GRANULARITIES = [
  ...NAMED.map(([json, key]) => ({ json, ranges: RANGES[key], reference: (cpm) => getPriceBucketString(cpm, undefined)[key] })),
  ...CUSTOM.map((json) => {
    const buckets = json.ranges.map((r) => (json.precision === undefined ? { ...r } : { ...r, precision: json.precision }))
    return { json, ranges: json.ranges, reference: (cpm) => getPriceBucketString(cpm, { buckets: buckets.map((b) => ({ ...b })) }).custom }
  }),
]

/** Prices every granularity is tested with. */
function sharedPrices() {
  const next = rng(0x9b1d)
  const out = [
    0, -0, -1, -0.01, -1e-9, -Number.MIN_VALUE, NaN, Infinity, -Infinity, -Number.MAX_VALUE, Number.MAX_VALUE,
    Number.MIN_VALUE, 2.2250738585072014e-308, 1e-300, 1e-12, 1e-9, 1e-7, 1e-6, 0.000999, 0.001, 0.004, 0.005,
    0.1 + 0.2, 0.07 * 3, 0.1 * 3, 1.1 * 1.1, 0.3 - 1e-17, 1.37, 4.01, 4.35, 8.2, 1.005, 2.675, 1.015, 0.615, 9.995,
    19.99, 19.999, 19.9999999, 20, 20.000000001, 20.01, 99.99, 100, 1000, 123456.789, 1e9, 1e9 + 1, 2e9, 1e15, 1e21, 1e300,
  ]
  for (let i = 0; i < 1200; i++) out.push(next() * 25)
  for (let i = 0; i < 500; i++) out.push(next() * 1100)
  // Whole cents and tenths of a cent, as bidders price: where the decimal artefacts are.
  for (let i = 0; i < 1000; i++) out.push(Math.floor(next() * 2500) / 100)
  for (let i = 0; i < 500; i++) out.push(Math.floor(next() * 25000) / 1000)
  for (let i = 0; i < 300; i++) out.push(Math.pow(10, next() * 14 - 7))
  for (let i = 0; i < 200; i++) out.push(-next() * 30)
  // Any double at all: random bit patterns (NaNs, subnormals, huge values).
  for (let i = 0; i < 300; i++) {
    bits[0] = (BigInt(Math.floor(next() * 2 ** 32)) << 32n) | BigInt(Math.floor(next() * 2 ** 32))
    out.push(f64[0])
  }
  return out
}

/** Prices at this granularity's edges: every range's ends and multiples of its step, and the
 *  doubles next to them and a billionth either side. */
function edgePrices(ranges) {
  const out = []
  const near = (x) => out.push(...neighbours(x), x - 1e-9, x + 1e-9)
  let min = 0
  near(0)
  for (const { max, increment } of ranges) {
    near(max)
    const steps = Math.round((max - min) / increment)
    const every = Math.max(1, Math.floor(steps / 150))
    for (let k = 1; k < steps; k += every) {
      near(k * increment + min)
      near(min + increment * k * (1 + 1e-15))
    }
    min = max
  }
  return out
}

test('the oracle loads: Prebid.js buckets its documented example', () => {
  const b = getPriceBucketString(1.37, undefined)
  assert.deepEqual([b.low, b.med, b.high, b.auto, b.dense], ['1.00', '1.30', '1.37', '1.35', '1.37'])
})

test('every price in every granularity: our bucket is Prebid.js\'s', () => {
  const shared = sharedPrices()
  const cases = []
  const expected = []
  for (const g of GRANULARITIES) {
    for (const cpm of [...shared, ...edgePrices(g.ranges)]) {
      cases.push([g.json, cpm])
      expected.push(g.reference(cpm))
    }
  }
  const got = ours(cases)
  const mismatches = []
  cases.forEach(([g, cpm], i) => {
    if (got[i] !== expected[i]) {
      mismatches.push(`granularity ${JSON.stringify(g)}, cpm ${text(cpm)}: ours ${JSON.stringify(got[i])}, Prebid.js ${JSON.stringify(expected[i])}`)
    }
  })
  console.log(`${cases.length} cases over ${GRANULARITIES.length} granularities, ${mismatches.length} mismatches`)
  assert.equal(
    mismatches.length,
    0,
    `${mismatches.length} of ${cases.length} buckets differ from Prebid.js's:\n${mismatches.slice(0, 50).join('\n')}`,
  )
})
