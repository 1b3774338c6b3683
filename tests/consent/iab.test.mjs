// Differential oracle for the consent decoders (crates/core/src/consent/): the IAB Tech Lab's
// own reference libraries, @iabtechlabtcf/core (TCF) and @iabgpp/cmpapi (GPP), encode strings
// from seeded random field values; each string is decoded by the reference library and by our
// decoder (the `consent` example binary: a line `<kind>\t<string>` in, a JSON line out), and
// every field must agree. Real strings (from the IAB's documentation and the libraries' own test
// suites) must decode the same in both, and malformed, truncated and oversized strings must never
// crash ours: oversized ones are no valid signal.
//
// Run: node --test tests/consent/  (scripts/test.sh installs the pinned npm packages first with
// `npm ci --prefix tests/consent`). TS_CONSENT=<path> uses an already-built binary; otherwise the
// test builds it with cargo (release).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import path from 'node:path'

import { TCModel, TCString, SegmentEncoder, Segment, PurposeRestriction } from '@iabtechlabtcf/core'
import { GppModel } from '@iabgpp/cmpapi'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const TCF_MAX_LEN = 4096
const GPP_MAX_LEN = 4096

function binary() {
  if (process.env.TS_CONSENT) return process.env.TS_CONSENT
  const build = spawnSync(
    'cargo',
    ['build', '--locked', '--release', '-p', 'trusted-server-core', '--example', 'consent'],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
  )
  assert.equal(build.status, 0, 'cargo build of the consent example failed')
  return path.join(ROOT, 'target', 'release', 'examples', 'consent')
}
const BIN = binary()

/** Our decoder on many strings at once: `[kind, text]` pairs in, parsed JSON (or null) out. */
function ours(inputs) {
  for (const [, text] of inputs) assert.ok(!/[\n\r]/.test(text), 'a line break would split the input')
  const run = spawnSync(BIN, [], {
    input: inputs.map(([k, t]) => `${k}\t${t}\n`).join(''),
    maxBuffer: 1 << 30,
  })
  assert.equal(run.status, 0, `the decoder exited with ${run.status} (signal ${run.signal}): ${run.stderr}`)
  const lines = run.stdout.toString().split('\n').filter((l) => l !== '')
  assert.equal(lines.length, inputs.length, 'one output line per input')
  return lines.map((l) => JSON.parse(l))
}

// A small seeded generator (mulberry32), so every run tests the same strings.
function rng(seed) {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1))
  const bool = (p = 0.5) => next() < p
  const pick = (xs) => xs[int(0, xs.length - 1)]
  const subset = (lo, hi, p = 0.5) => {
    const out = []
    for (let i = lo; i <= hi; i++) if (bool(p)) out.push(i)
    return out
  }
  /** Vendor ids up to `max`: either scattered (bitfield is shorter) or in runs (ranges are). */
  const vendors = (max) => {
    if (max === 0) return []
    if (bool()) return subset(1, max, next())
    const out = new Set()
    for (let r = int(0, 12); r > 0; r--) {
      const a = int(1, max)
      const b = Math.min(max, a + int(0, 200))
      for (let i = a; i <= b; i++) out.add(i)
    }
    return [...out].sort((x, y) => x - y)
  }
  return { next, int, bool, pick, subset, vendors }
}

const ids = (vector) => {
  const out = []
  vector.forEach((value, id) => {
    if (value) out.push(id)
  })
  return out.sort((a, b) => a - b)
}

/** Publisher restrictions as `purpose-type` -> sorted vendor ids (both sides agree on this form). */
function restrictionMap(list) {
  const m = {}
  for (const { purposeId, restrictionType, vendors } of list) {
    const key = `${purposeId}-${restrictionType}`
    m[key] = [...new Set([...(m[key] ?? []), ...vendors])].sort((a, b) => a - b)
  }
  return m
}

/** What @iabtechlabtcf/core decodes from a TC string, in the example binary's shape. */
function referenceTcf(text) {
  const m = TCString.decode(text)
  const restrictions = []
  for (const [hash, set] of m.publisherRestrictions.map) {
    const [purposeId, restrictionType] = hash.split('-').map(Number)
    restrictions.push({ purposeId, restrictionType, vendors: [...set] })
  }
  return {
    version: m.version,
    created: m.created.getTime(),
    lastUpdated: m.lastUpdated.getTime(),
    cmpId: m.cmpId,
    cmpVersion: m.cmpVersion,
    consentScreen: m.consentScreen,
    consentLanguage: m.consentLanguage,
    vendorListVersion: m.vendorListVersion,
    policyVersion: m.policyVersion,
    isServiceSpecific: m.isServiceSpecific,
    useNonStandardTexts: m.useNonStandardTexts,
    specialFeatureOptins: ids(m.specialFeatureOptins),
    purposeConsents: ids(m.purposeConsents),
    purposeLegitimateInterests: ids(m.purposeLegitimateInterests),
    purposeOneTreatment: m.purposeOneTreatment,
    publisherCountryCode: m.publisherCountryCode,
    vendorConsents: ids(m.vendorConsents),
    vendorLegitimateInterests: ids(m.vendorLegitimateInterests),
    publisherRestrictions: restrictionMap(restrictions),
    vendorsDisclosed: ids(m.vendorsDisclosed),
    vendorsAllowed: ids(m.vendorsAllowed),
    publisherTC: {
      publisherConsents: ids(m.publisherConsents),
      publisherLegitimateInterests: ids(m.publisherLegitimateInterests),
      numCustomPurposes: m.numCustomPurposes,
      publisherCustomConsents: ids(m.publisherCustomConsents),
      publisherCustomLegitimateInterests: ids(m.publisherCustomLegitimateInterests),
    },
  }
}

/** Our TCF output in the reference shape: absent segments read as the library's empty ones. */
function normalTcf(o) {
  return {
    ...o,
    publisherRestrictions: restrictionMap(o.publisherRestrictions),
    vendorsDisclosed: o.vendorsDisclosed ?? [],
    vendorsAllowed: o.vendorsAllowed ?? [],
    publisherTC: o.publisherTC ?? {
      publisherConsents: [],
      publisherLegitimateInterests: [],
      numCustomPurposes: 0,
      publisherCustomConsents: [],
      publisherCustomLegitimateInterests: [],
    },
  }
}

const LANGS = ['EN', 'FR', 'DE', 'ES', 'IT', 'NL', 'PL', 'PT', 'SV', 'FI', 'DA', 'EL', 'HU', 'RO']

/** A random TC string, encoded segment by segment by the reference library. */
function randomTcf(r, { serviceSpecific } = {}) {
  const m = new TCModel()
  m.cmpId = r.int(2, 4095)
  m.cmpVersion = r.int(1, 4095)
  m.consentScreen = r.int(0, 63)
  m.consentLanguage = r.pick(LANGS)
  m.publisherCountryCode = r.pick(LANGS)
  m.vendorListVersion = r.int(1, 4095)
  m.policyVersion = r.pick([4, 5])
  m.isServiceSpecific = serviceSpecific ?? r.bool()
  m.useNonStandardTexts = r.bool()
  m.purposeOneTreatment = r.bool(0.2)
  const when = 1_500_000_000_000 + r.int(0, 300_000_000) * 1000
  m.created = new Date(when)
  m.lastUpdated = new Date(when + r.int(0, 1_000_000) * 100)
  m.specialFeatureOptins.set(r.subset(1, 12))
  m.purposeConsents.set(r.subset(1, 24))
  m.purposeLegitimateInterests.set(r.subset(1, 24))
  const max = r.pick([0, r.int(1, 100), r.int(100, 1200)])
  const consents = r.vendors(max)
  m.vendorConsents.set(consents)
  m.vendorLegitimateInterests.set(r.vendors(max))
  for (let n = r.pick([0, 0, r.int(1, 6)]); n > 0; n--) {
    const restriction = new PurposeRestriction(r.int(1, 24), r.int(0, 2))
    for (const v of r.vendors(r.int(1, 900)).slice(0, 400)) m.publisherRestrictions.add(v, restriction)
  }
  // The library's restriction encoder asks a Global Vendor List which ids exist (a range may
  // run over ids missing from it); a stand-in list with a few gaps, no download.
  const listed = new Set(Array.from({ length: 1200 }, (_, i) => i + 1).filter(() => r.bool(0.9)))
  m.publisherRestrictions.gvl_ = { vendorIds: listed }
  const segments = []
  if (r.bool(0.7)) {
    m.vendorsDisclosed.set(r.vendors(r.int(1, 1200)))
    segments.push(Segment.VENDORS_DISCLOSED)
  }
  if (r.bool(0.15)) {
    m.vendorsAllowed.set(r.vendors(r.int(1, 1200)))
    segments.push(Segment.VENDORS_ALLOWED)
  }
  if (r.bool(0.5)) {
    m.publisherConsents.set(r.subset(1, 24))
    m.publisherLegitimateInterests.set(r.subset(1, 24))
    const custom = r.pick([0, r.int(1, 10), r.int(10, 63)])
    m.numCustomPurposes = custom
    m.publisherCustomConsents.set(r.subset(1, custom))
    m.publisherCustomLegitimateInterests.set(r.subset(1, custom))
    segments.push(Segment.PUBLISHER_TC)
  }
  // The optional segments in any order: a decoder must not depend on it.
  segments.sort(() => r.next() - 0.5)
  const text = [Segment.CORE, ...segments].map((s) => SegmentEncoder.encode(m, s)).join('.')
  return { text, consents }
}

const TCF_COUNT = 400
const GPP_COUNT = 400

test(`TCF: ${TCF_COUNT} strings encoded by @iabtechlabtcf/core decode the same in both`, () => {
  const r = rng(2025)
  const cases = Array.from({ length: TCF_COUNT }, () => randomTcf(r))
  const got = ours(cases.map((c) => ['tcf', c.text]))
  let ranges = 0
  let bitfields = 0
  cases.forEach(({ text, consents }, i) => {
    assert.notEqual(got[i], null, `ours found no valid signal in ${text}`)
    const expected = referenceTcf(text)
    // The library wrote what it was given (so the comparison is not vacuous).
    assert.deepEqual(expected.vendorConsents, consents, `library round trip: ${text}`)
    assert.deepEqual(normalTcf(got[i]), expected, `field mismatch for ${text}`)
  })
  // Both vendor encodings were exercised (the library picks the shorter one).
  for (const c of cases) {
    const m = TCString.decode(c.text)
    if (m.vendorConsents.bitLength && m.vendorConsents.maxId > 0) {
      // bit 16 of the vendor section is the encoding type; the library keeps no flag, so we
      // compare sizes: a range section is shorter than maxId bits when the ids run together.
      if (m.vendorConsents.bitLength < 17 + m.vendorConsents.maxId) ranges++
      else bitfields++
    }
  }
  assert.ok(ranges > 20 && bitfields > 20, `ranges ${ranges}, bitfields ${bitfields}`)
  console.log(`TCF: ${TCF_COUNT} generated strings, 0 disagreements (range-encoded vendor consents: ${ranges}, bitfield: ${bitfields})`)
})

// Every GPP section the reference library knows, with its fields and their value ranges.
const US_SECTIONS = [
  'usnat', 'usca', 'usva', 'usco', 'usut', 'usct', 'usfl', 'usmt', 'usor', 'ustx', 'usde',
  'usia', 'usne', 'usnh', 'usnj', 'ustn', 'usmn', 'usmd', 'usin', 'usky', 'usri',
]
const NOT_SET = new Set(['Version', 'MspaVersion', 'GpcSegmentType', 'GpcSegmentIncluded', 'Gpc', 'SensitiveDataConsentSegmentIncluded'])

function randomUsSection(r, model, name) {
  const fresh = new GppModel()
  fresh.setFieldValue(name, 'SaleOptOut', 0)
  const fields = fresh.getSection(name)
  for (const [field, value] of Object.entries(fields)) {
    if (NOT_SET.has(field)) continue
    const lo = field === 'MspaCoveredTransaction' ? 1 : 0
    const v = Array.isArray(value) ? value.map(() => r.int(0, 2)) : r.int(lo, 2)
    model.setFieldValue(name, field, v)
  }
  if (name === 'usnat' && r.bool(0.3)) model.setFieldValue(name, 'Version', 1)
  if ('GpcSegmentIncluded' in fields) {
    const included = r.bool(0.6)
    model.setFieldValue(name, 'GpcSegmentIncluded', included)
    if (included) model.setFieldValue(name, 'Gpc', r.bool())
  }
  if ('SensitiveDataConsentSegmentIncluded' in fields) {
    model.setFieldValue(name, 'SensitiveDataConsentSegmentIncluded', r.bool(0.6))
  }
}

function randomGpp(r, index) {
  const model = new GppModel()
  // Every section appears in at least one string of every 22: string i always has section i % 22.
  const names = new Set([US_SECTIONS[index % US_SECTIONS.length]])
  for (const n of US_SECTIONS) if (r.bool(0.12)) names.add(n)
  for (const n of names) randomUsSection(r, model, n)
  if (r.bool(0.3) || index % 23 === 0) {
    for (const f of ['Notice', 'OptOutSale', 'LspaCovered']) model.setFieldValue('uspv1', f, r.pick(['Y', 'N', '-']))
  }
  // @iabgpp/cmpapi re-encodes the section itself and encodes only service-specific TC strings;
  // the comparison reads the text the string ends up with.
  if (r.bool(0.3) || index % 23 === 1) {
    model.decodeSection('tcfeuv2', randomTcf(r, { serviceSpecific: true }).text)
  }
  // Canada's TCF (5) is listed sometimes: ours keeps it as unsupported and reads the rest.
  if (r.bool(0.05)) model.setFieldValue('tcfcav1', 'CmpId', r.int(2, 100))
  return model.encode()
}

/** Compares our reading of one GPP string with the reference library's; returns nothing or throws. */
function compareGpp(text, got) {
  const ref = new GppModel(text)
  const refIds = ref.getHeader().SectionIds
  assert.deepEqual(got.sectionIds, refIds, `section ids of ${text}`)
  const parts = text.split('~').slice(1)
  refIds.forEach((id, i) => {
    const section = Object.entries(got.sections).find(([k, v]) => {
      if (id === 2) return k === 'tcfeuv2'
      if (id === 6) return k === 'uspv1'
      if (id === 5) return k === '5'
      return typeof v === 'object' && k.startsWith('us') && k !== 'uspv1' && refName(id) === k
    })
    assert.ok(section, `section ${id} missing from ours in ${text}`)
    const [name, mine] = section
    if (id === 5) {
      assert.equal(mine, 'unsupported')
      return
    }
    if (id === 2) {
      assert.deepEqual(normalTcf(mine), referenceTcf(parts[i]), `tcfeuv2 in ${text}`)
      return
    }
    const theirs = ref.getSection(name)
    // Whether the optional trailing segment is there is a field of the library's section, not
    // of its object form.
    const gpcIncluded = 'Gpc' in theirs ? ref.getFieldValue(name, 'GpcSegmentIncluded') : undefined
    const sdIncluded = ['usin', 'usky', 'usri'].includes(name)
      ? ref.getFieldValue(name, 'SensitiveDataConsentSegmentIncluded')
      : undefined
    if (gpcIncluded !== undefined) assert.equal(mine.GpcSegmentIncluded, gpcIncluded, `${name} GPC segment in ${text}`)
    if (sdIncluded !== undefined) {
      assert.equal(mine.SensitiveDataConsentSegmentIncluded, sdIncluded, `${name} sensitive-data segment in ${text}`)
    }
    for (const [field, value] of Object.entries(theirs)) {
      if ((field === 'GpcSegmentType' || field === 'Gpc') && !gpcIncluded) continue
      if (field === 'SensitiveDataProcessing' && sdIncluded === false) continue
      assert.ok(field in mine, `${name}.${field} missing from ours in ${text}`)
      assert.deepEqual(mine[field], value, `${name}.${field} in ${text}`)
    }
    if (name.startsWith('us') && name !== 'uspv1') {
      // The typed accessors read the same fields.
      const d = mine._derived
      const optOut = (v) => (v === undefined ? null : ['NotApplicable', 'OptedOut', 'DidNotOptOut', 'Invalid'][v])
      assert.equal(d.saleOptOut, optOut(theirs.SaleOptOut))
      assert.equal(d.sharingOptOut, optOut(theirs.SharingOptOut))
      assert.equal(d.targetedAdvertisingOptOut, optOut(theirs.TargetedAdvertisingOptOut))
      const child = theirs.KnownChildSensitiveDataConsents
      assert.deepEqual(d.knownChild, child === undefined ? [] : Array.isArray(child) ? child : [child])
      assert.equal(d.gpc, gpcIncluded ? theirs.Gpc : null)
    }
  })
}

const ID_NAMES = new Map(
  [[6, 'uspv1'], [7, 'usnat'], [8, 'usca'], [9, 'usva'], [10, 'usco'], [11, 'usut'], [12, 'usct'],
    [13, 'usfl'], [14, 'usmt'], [15, 'usor'], [16, 'ustx'], [17, 'usde'], [18, 'usia'], [19, 'usne'],
    [20, 'usnh'], [21, 'usnj'], [22, 'ustn'], [23, 'usmn'], [24, 'usmd'], [25, 'usin'], [26, 'usky'],
    [27, 'usri']],
)
const refName = (id) => ID_NAMES.get(id)

test(`GPP: ${GPP_COUNT} strings encoded by @iabgpp/cmpapi, every section, decode the same in both`, () => {
  const r = rng(7)
  const strings = Array.from({ length: GPP_COUNT }, (_, i) => randomGpp(r, i))
  const got = ours(strings.map((s) => ['gpp', s]))
  const seen = new Set()
  strings.forEach((text, i) => {
    assert.notEqual(got[i], null, `ours found no valid signal in ${text}`)
    compareGpp(text, got[i])
    got[i].sectionIds.forEach((id) => seen.add(id))
  })
  for (let id = 6; id <= 27; id++) assert.ok(seen.has(id), `section ${id} never generated`)
  assert.ok(seen.has(2), 'tcfeuv2 never generated')
  console.log(`GPP: ${GPP_COUNT} generated strings, sections ${[...seen].sort((a, b) => a - b).join(',')}, 0 disagreements`)
})

test('US Privacy: every valid string reads the same as @iabgpp/cmpapi', () => {
  const flags = ['Y', 'N', '-']
  const strings = []
  for (const a of flags) for (const b of flags) for (const c of flags) strings.push(`1${a}${b}${c}`)
  const got = ours(strings.map((s) => ['usp', s]))
  strings.forEach((s, i) => {
    const ref = new GppModel()
    ref.decodeSection('uspv1', s)
    const theirs = ref.getSection('uspv1')
    assert.deepEqual(got[i], theirs, s)
  })
  console.log(`US Privacy: ${strings.length} strings, 0 disagreements`)
})

// Real strings written by CMPs, each with where it was found. Each must read the same in both.
const REAL_TCF = [
  // SirDataFR/iabtcfv2 (Go), decode_test.go, TestDecode: a CMP's string with core,
  // DisclosedVendors and publisher TC segments.
  'COxR03kOxR1CqBcABCENAgCMAP_AAH_AAAqIF3EXySoGY2thI2YVFxBEIYwfJxyigMgChgQIsSwNQIeFLBoGLiAAHBGYJAQAGBAEEACBAQIkHGBMCQAAgAgBiRCMQEGMCzNIBIBAggEbY0FACCVmHkHSmZCY7064O__QLuIJEFQMAkSBAIACLECIQwAQDiAAAYAlAAABAhIaAAgIWBQEeAAAACAwAAgAAABBAAACAAQAAICIAAABAAAgAiAQAAAAGgIQAACBABACRIAAAEANCAAgiCEAQg4EAo4AAA.IF3EXySoGY2tho2YVFzBEIYwfJxyigMgShgQIsS0NQIeFLBoGPiAAHBGYJAQAGBAkkACBAQIsHGBMCQABgAgRiRCMQEGMDzNIBIBAggkbY0FACCVmnkHS3ZCY70-6u__QA.elAAAAAAAWA',
  // The same test file, TestDecodeCoreString: its core segment alone.
  'COxR03kOxR1CqBcABCENAgCMAP_AAH_AAAqIF3EXySoGY2thI2YVFxBEIYwfJxyigMgChgQIsSwNQIeFLBoGLiAAHBGYJAQAGBAEEACBAQIkHGBMCQAAgAgBiRCMQEGMCzNIBIBAggEbY0FACCVmHkHSmZCY7064O__QLuIJEFQMAkSBAIACLECIQwAQDiAAAYAlAAABAhIaAAgIWBQEeAAAACAwAAgAAABBAAACAAQAAICIAAABAAAgAiAQAAAAGgIQAACBABACRIAAAEANCAAgiCEAQg4EAo4AAA',
  // ethyca/fides, clients/fides-js tests (fidesString): a TC string with an empty
  // DisclosedVendors segment, and the same without it.
  'CPzvOIAPzvOIAGXABBENAUEAAACAAAAAAAAAAAAAAAAA.IAAA',
  'CPzvOIAPzvOIAGXABBENAUEAAACAAAAAAAAAAAAAAAAA',
  // lib_tcstring (advancedSTORE, Rust), README example.
  'COvFyGBOvFyGBAbAAAENAPCAAOAAAAAAAAAAAEEUACCKAAA',
]
const REAL_GPP = [
  // ethyca/fides, clients/fides-js tests (lib/gpp decoder): US national with a GPC segment,
  // California with a GPC segment, EU TCF.
  'DBABLA~BVAoAAAAAABk.QA',
  'DBABBg~BUoAAABg.Q',
  'DBABMA~CQNb38AQNb38AGXABBENBeFgALAAAENAAAAAFyQAQFyAXJABAXIAAAAA',
  // @iabgpp/cmpapi's own tests (GppModel.test): a model with no sections.
  'DBAA',
]

test('real TC strings decode the same in both', () => {
  const got = ours(REAL_TCF.map((s) => ['tcf', s]))
  REAL_TCF.forEach((s, i) => {
    let expected
    try {
      expected = referenceTcf(s)
    } catch {
      assert.equal(got[i], null, `the library refuses ${s}; ours reads it`)
      return
    }
    assert.notEqual(got[i], null, `ours refuses ${s}`)
    assert.deepEqual(normalTcf(got[i]), expected, s)
  })
})

test('real GPP strings decode the same in both', () => {
  const got = ours(REAL_GPP.map((s) => ['gpp', s]))
  REAL_GPP.forEach((s, i) => {
    assert.notEqual(got[i], null, `ours refuses ${s}`)
    compareGpp(s, got[i])
  })
})

test('malformed, truncated and oversized strings: never a crash; oversized is no signal', () => {
  const r = rng(99)
  const tcfs = Array.from({ length: 60 }, () => randomTcf(r).text)
  const gpps = Array.from({ length: 60 }, (_, i) => randomGpp(r, i))
  const inputs = []
  const mutate = (s) => {
    const chars = [...s]
    const k = r.int(0, chars.length - 1)
    chars[k] = r.pick(['A', '_', '-', '.', '~', '=', '+', '/', ' ', 'é', '\u0000', '\t', '9'])
    return chars.join('')
  }
  for (const [kind, list] of [['tcf', tcfs], ['gpp', gpps]]) {
    for (const s of list) {
      for (let cut = 0; cut < s.length; cut += Math.max(1, Math.floor(s.length / 25))) inputs.push([kind, s.slice(0, cut)])
      for (let n = 0; n < 10; n++) inputs.push([kind, mutate(s)])
    }
  }
  for (let n = 0; n < 300; n++) {
    const text = Array.from({ length: r.int(0, 80) }, () => String.fromCharCode(r.int(32, 0x2fff))).join('')
    for (const kind of ['tcf', 'gpp', 'usp']) inputs.push([kind, text])
  }
  for (const s of ['1ynn', '1YN', '1YNNN', '2YNN', '', '1Y\u00e9N']) inputs.push(['usp', s])
  const oversized = [
    ['tcf', tcfs[0] + '.'.repeat(0) + 'A'.repeat(TCF_MAX_LEN)],
    ['gpp', gpps[0] + 'A'.repeat(GPP_MAX_LEN)],
    ['tcf', 'C'.repeat(TCF_MAX_LEN + 1)],
    ['gpp', 'D'.repeat(GPP_MAX_LEN + 1)],
    ['usp', '1YNN'.repeat(2)],
  ]
  const got = ours([...inputs, ...oversized])
  got.slice(inputs.length).forEach((v, i) => assert.equal(v, null, `oversized ${oversized[i][0]} read as a signal`))
  // Where both decode a damaged string, they still agree.
  let both = 0
  inputs.forEach(([kind, text], i) => {
    if (got[i] === null) return
    if (kind === 'tcf') {
      let expected
      try {
        expected = referenceTcf(text)
      } catch {
        return
      }
      assert.deepEqual(normalTcf(got[i]), expected, `damaged ${text}`)
      both++
    }
  })
  console.log(`malformed: ${inputs.length + oversized.length} damaged / oversized strings, no crash; ${both} damaged TC strings read by both, 0 disagreements`)
})
