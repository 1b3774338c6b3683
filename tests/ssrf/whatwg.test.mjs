// The SSRF table (fixtures/ssrf-targets.txt) read by a second WHATWG URL parser: Node's own
// `URL` (not the `url` crate the service uses). For each row, the reason the table gives must
// fit what this parser reads: an IP literal for the address reasons (and, for IPv4, the range
// a small classifier written here puts it in), a domain off the allowlist for `not-allowed`,
// and so on. So the hand-written reasons agree with a browser-grade reading, not only with
// the code under test. Run: node --test tests/ssrf/
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const TABLE = fileURLToPath(new URL('../../fixtures/ssrf-targets.txt', import.meta.url))
const ALLOWED = 'demo-partner.example'

/** The table's escapes: `\\`, `\t`, `\n`, `\r`, `\xHH`. */
function unescape(text) {
  return text.replace(/\\(\\|t|n|r|x[0-9a-fA-F]{2})/g, (_, e) => {
    if (e === '\\') return '\\'
    if (e === 't') return '\t'
    if (e === 'n') return '\n'
    if (e === 'r') return '\r'
    return String.fromCharCode(parseInt(e.slice(1), 16))
  })
}

const rows = readFileSync(TABLE, 'utf8')
  .split('\n')
  .filter((l) => l && !l.startsWith('#'))
  .map((l) => {
    const at = l.indexOf(' ')
    return { tag: l.slice(0, at), text: unescape(l.slice(at + 1)) }
  })

/** The IPv4 range of a dotted address, by the RFCs (independent of the Rust classifier). */
function v4Range(dotted) {
  const [a, b, c, d] = dotted.split('.').map(Number)
  if (dotted === '169.254.169.254') return 'metadata'
  if (dotted === '255.255.255.255') return 'broadcast'
  if (a === 0) return 'unspecified'
  if (a === 127) return 'loopback'
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private'
  if (a === 192 && b === 0 && c === 0) return 'private'
  if (a === 169 && b === 254) return 'link-local'
  if (a === 100 && b >= 64 && b <= 127) return 'cgnat'
  if ((a === 192 && b === 0 && c === 2) || (a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113))
    return 'documentation'
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'
  if (a >= 224 && a <= 239) return 'multicast'
  if (a >= 240) return 'reserved'
  void d
  return 'ip-literal'
}

const IP_TAGS = new Set([
  'loopback', 'private', 'link-local', 'metadata', 'cgnat', 'unique-local', 'unspecified',
  'broadcast', 'documentation', 'multicast', 'reserved', 'ip-literal',
])

const onAllowed = (host) => host === ALLOWED || host.endsWith('.' + ALLOWED)
const bare = (host) => (host.endsWith('.') ? host.slice(0, -1) : host)
const isV4 = (host) => /^\d+\.\d+\.\d+\.\d+$/.test(host)

function parse(text) {
  try {
    return new URL(text)
  } catch {
    return null
  }
}

test('the table has at least 60 hostile rows', () => {
  assert.ok(rows.filter((r) => r.tag !== 'allowed').length >= 60)
})

for (const { tag, text } of rows) {
  test(`${tag}: ${JSON.stringify(text)}`, () => {
    const u = parse(text)
    if (tag === 'unparseable') {
      assert.equal(u, null, `Node reads ${u?.href}`)
      return
    }
    assert.ok(u, 'Node cannot parse it')
    const web = u.protocol === 'http:' || u.protocol === 'https:'
    if (tag === 'scheme') {
      assert.ok(!web, u.protocol)
      return
    }
    assert.ok(web, u.protocol)
    if (tag === 'userinfo') {
      assert.ok(u.username || u.password, u.href)
      return
    }
    assert.ok(!u.username && !u.password, `userinfo in ${u.href}`)
    const host = u.hostname
    if (IP_TAGS.has(tag)) {
      if (isV4(host)) {
        assert.equal(v4Range(host), tag, host)
      } else {
        assert.ok(host.startsWith('['), `not an IP literal: ${host}`)
      }
      return
    }
    assert.ok(!isV4(host) && !host.startsWith('['), `an IP literal: ${host}`)
    const name = bare(host)
    const port = u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port)
    switch (tag) {
      case 'malformed-host':
        assert.ok(name.split('.').some((l) => l === ''), host)
        break
      case 'not-allowed':
        assert.ok(!onAllowed(name), host)
        break
      case 'port':
        assert.ok(onAllowed(name), host)
        assert.ok(port !== 80 && port !== 443, String(port))
        break
      case 'ambiguous':
        // Node reads an allowed name on a good port: the text itself is what is refused.
        assert.ok(onAllowed(name), host)
        break
      case 'allowed':
        assert.ok(onAllowed(name), host)
        assert.ok(port === 80 || port === 443, String(port))
        break
      default:
        assert.fail(`unknown reason ${tag}`)
    }
  })
}
