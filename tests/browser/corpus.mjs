// What the two corpus scripts share (creatives.mjs: directly and through the first-party proxy;
// creatives-auction.mjs: as a bidder's adm): the corpus and its hosts, how a request is
// classified, and how a creative's manifest `checks` are read in a frame.

import { readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')
export const CORPUS = path.join(ROOT, 'fixtures/creatives')
export const CREATIVE_HOST = 'creatives.demo-partner.example'
/** The names Chromium maps to the corpus partner (host resolver rules). */
export const PARTNER_NAMES = [CREATIVE_HOST, 'img.demo-partner2.example', 'px.third-party.example']
/** The partner domains (`first_party.allowed_domains`); px.third-party.example is not one. */
export const PARTNER_DOMAINS = ['demo-partner.example', 'demo-partner2.example']

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** The manifest's creatives, only those `TS_CREATIVES=a,b` names when it is set. */
export function selectedCreatives() {
  const manifest = JSON.parse(readFileSync(path.join(CORPUS, 'manifest.json'), 'utf8'))
  const only = process.env.TS_CREATIVES ? new Set(process.env.TS_CREATIVES.split(',')) : null
  return manifest.creatives.filter((c) => !only || only.has(c.name))
}

/** `host/path` of a URL, for the report. */
export const short = (url) => {
  const u = new URL(url)
  return `${u.host}${u.pathname}`
}

/** The classifiers and checks for a run against the edge at `edgeHost` (`host:port`). */
export function corpusKit(edgeHost) {
  /** `first-party`, `partner`, `other`, or null for what makes no network request. */
  function hostClass(url) {
    const u = new URL(url)
    if (!/^https?:$/.test(u.protocol)) return null
    if (u.host === edgeHost) return 'first-party'
    if (PARTNER_DOMAINS.some((d) => u.hostname === d || u.hostname.endsWith(`.${d}`))) return 'partner'
    return 'other'
  }

  /** The partner URL a request is for: the `tsurl` of a first-party proxy URL, else itself. */
  function target(url) {
    const u = new URL(url)
    if (u.host === edgeHost && u.pathname === '/first-party/proxy') return u.searchParams.get('tsurl') ?? url
    return url
  }

  /** Whether `req` is the landing page (or a hop to it) that a `/first-party/click` led to. */
  function afterFirstPartyClick(req) {
    let first = req
    while (first.redirectedFrom()) first = first.redirectedFrom()
    if (first === req) return false
    const u = new URL(first.url())
    return u.host === edgeHost && u.pathname === '/first-party/click'
  }

  /** One check (manifest `checks`), run in `frame`; true when it holds. */
  async function holds(frame, check, requests) {
    const [what, ...rest] = check.split(' ')
    if (what === 'frame') {
      const el = await frame.$(rest[0])
      const inner = await el?.contentFrame()
      return inner ? holds(inner, rest.slice(1).join(' '), requests) : false
    }
    if (what === 'req') {
      return requests.some((r) => {
        const u = new URL(target(r.url))
        return PARTNER_NAMES.includes(u.hostname) && u.pathname === rest[0] && r.status !== null && r.status < 400
      })
    }
    return frame.evaluate(
      async ([what, arg]) => {
        const loads = (url) =>
          new Promise((resolve) => {
            const img = new Image()
            img.onload = () => resolve(img.naturalWidth > 0)
            img.onerror = () => resolve(false)
            setTimeout(() => resolve(false), 3000)
            img.src = url
          })
        const el = what === 'font' || what === 'marker' ? null : document.querySelector(arg)
        switch (what) {
          case 'img':
            return Boolean(el && el.complete && el.naturalWidth > 0)
          case 'bg': {
            const m = el && /url\("?(.*?)"?\)/.exec(getComputedStyle(el).backgroundImage)
            return m ? loads(m[1]) : false
          }
          case 'poster':
            return el?.poster ? loads(el.poster) : false
          case 'font':
            await document.fonts.ready
            return [...document.fonts].some((f) => f.family.replace(/["']/g, '') === arg && f.status === 'loaded')
          case 'marker':
            return document.documentElement.getAttribute(`data-${arg}`) === 'ok'
          default:
            throw new Error(`unknown check ${what}`)
        }
      },
      [what, rest.join(' ')],
    )
  }

  /** Polls `checks` in the frame `frameOf()` gives (null while there is none) until all hold
   * or `timeoutMs` is up; the ones that do not hold. */
  async function render(frameOf, checks, requests, timeoutMs) {
    const deadline = Date.now() + timeoutMs
    let failing = checks
    while (Date.now() < deadline) {
      const frame = await frameOf().catch(() => null)
      const now = []
      for (const check of checks) {
        // A navigation (refresh, redirect) destroys the context under an evaluate: not yet.
        const ok = frame ? await holds(frame, check, requests).catch(() => false) : false
        if (!ok) now.push(check)
      }
      failing = now
      if (failing.length === 0) break
      await sleep(200)
    }
    return failing
  }

  return { hostClass, target, afterFirstPartyClick, holds, render }
}
