// The path-spelling table (fixtures/path-spellings.txt) read by an independent implementation:
// Node's own WHATWG `URL` resolves the dot segments (it reads `%2e` as a dot, as the table's
// standard reading does), and the two steps before it are written here from RFC 3986 and
// nginx's `merge_slashes`, not taken from the Rust code: escapes of unreserved characters
// decoded (until none is left), then runs of slashes merged. Each row's reading must be what
// the table says. Run: node --test tests/paths/
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const TABLE = fileURLToPath(new URL('../../fixtures/path-spellings.txt', import.meta.url))

const rows = readFileSync(TABLE, 'utf8')
  .split('\n')
  .filter((l) => l && !l.startsWith('#'))
  .map((l) => {
    const [sent, reading, extra] = l.split(' ')
    assert.equal(extra, undefined, `one space per row: ${l}`)
    return { sent, reading }
  })

/** RFC 3986 §2.3. */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/

function decodeUnreserved(path) {
  for (;;) {
    const next = path.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex) => {
      const c = String.fromCharCode(parseInt(hex, 16))
      return UNRESERVED.test(c) ? c : escape
    })
    if (next === path) return path
    path = next
  }
}

function standardReading(path) {
  const merged = decodeUnreserved(path).replace(/\/+/g, '/')
  // The origin is irrelevant: only the path is read back.
  return new URL('http://reading.invalid' + merged).pathname
}

test('the table has rows', () => {
  assert.ok(rows.length >= 20, `${rows.length} rows`)
})

for (const { sent, reading } of rows) {
  test(`${sent} reads as ${reading}`, () => {
    // WHATWG reads a backslash as a slash; the table's standard reading does not (no row has
    // one, so this cannot skip a row silently).
    assert.ok(!sent.includes('\\'), 'no backslash rows')
    assert.equal(standardReading(sent), reading)
  })
}
