// Bundles src/prebid.js (Prebid core + prebidServerBidAdapter from the pinned prebid.js
// package) into one script, fixtures/site/_gen/prebid.js, which the demo origin serves as
// /_gen/prebid.js. The output is gitignored; scripts/setup.sh (ensure_prebid_bundle) runs
// `npm ci` here and then this script when the bundle is missing or older than its inputs.
//
//   node js/prebid/build.mjs [OUTFILE]
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

const here = path.dirname(fileURLToPath(import.meta.url))
const outfile = process.argv[2] ?? path.join(here, '..', '..', 'fixtures', 'site', '_gen', 'prebid.js')

// Prebid's build options (node_modules/prebid.js/dist/src/buildOptions.mjs, what its own
// webpack and rollup plugins in prebid.js/customize replace): the same, except the base URL of
// the bundles Prebid loads on demand (the debugging module, only when a page turns debugging
// on), which is a CDN by default: here it is the first-party host, so the page never loads
// Prebid code from elsewhere. Nothing is served there; such a load fails instead.
const DIST_URL_BASE = '/_gen/chunks/'
const buildOptions = {
  name: 'prebid-build-options',
  setup(b) {
    b.onLoad({ filter: /[\\/]prebid\.js[\\/]dist[\\/]src[\\/]buildOptions\.mjs$/ }, async (args) => {
      const { default: defaults } = await import(args.path)
      return { contents: `export default ${JSON.stringify({ ...defaults, distUrlBase: DIST_URL_BASE })}`, loader: 'js' }
    })
  },
}

const result = await build({
  entryPoints: [path.join(here, 'src', 'prebid.js')],
  outfile,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  metafile: true,
  plugins: [buildOptions],
  logLevel: 'warning',
})
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0)
console.log(`prebid bundle: ${path.relative(process.cwd(), outfile)} (${bytes} bytes)`)
