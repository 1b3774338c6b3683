/*! Trusted Server Edge first-party script (docs/script.md). */
// Plain JavaScript, served byte for byte as written: no build step, so the bytes hashed into
// its URL are the bytes in this file. Per-reader values come only from same-origin requests
// answered `no-store`, and, on a page with a navigation auction, from the bids block
// (`<script type="application/json" id="ts-bids">`) that the edge writes per reader into the
// page it serves, never cached. The script writes nothing of its own into the document but
// the ad frames it renders from those bids.
(function (root) {
  'use strict';

  // Loaded twice (the tag injected and the origin's own copy, or a tag manager adding it
  // again): the first instance stays, so callers never see two.
  if (root.tsjs && root.tsjs.__tsjs === true) {
    return;
  }

  /** The service version; build.rs fails the build when it differs from the package's. */
  var VERSION = '0.1.0';

  /** @type {Object<string, Promise<any>>} */
  var asked = {};

  /**
   * `GET path` once per page (same origin, `no-store`), its JSON answer passed through `read`;
   * `null` for a non-2xx or malformed answer. A failed request is forgotten, so the next call
   * asks again.
   * @param {string} path
   * @param {(body: any) => any} read
   */
  function askOnce(path, read) {
    if (!asked[path]) {
      asked[path] = root
        .fetch(path, {
          credentials: 'same-origin',
          cache: 'no-store',
          headers: { Accept: 'application/json' },
        })
        .then(function (response) {
          return response.ok
            ? response.json().then(read, function () {
                return null;
              })
            : null;
        });
      asked[path].catch(function () {
        delete asked[path];
      });
    }
    return asked[path];
  }

  /**
   * The first-party edge ID of this browser, or `null` when there is none (the feature is
   * off, no consent, or the answer carries no ID), from `GET /_ts/ec`: the cookie is HttpOnly,
   * so this is the only way script sees it. Rejects only when the request itself fails.
   * @returns {Promise<string|null>}
   */
  function getEdgeId() {
    return askOnce('/_ts/ec', function (body) {
      var ec = body && body.ec;
      return typeof ec === 'string' && ec !== '' ? ec : null;
    });
  }

  /**
   * The service's consent decision for this reader, from `GET /_ts/consent`: a frozen
   * `{rule, edge_id, origin, reasons}` (docs/consent.md), or `null` when the answer is not one.
   * Rejects only when the request itself fails.
   * @returns {Promise<{rule: string, edge_id: boolean, origin: boolean, reasons: string[]}|null>}
   */
  function getConsent() {
    return askOnce('/_ts/consent', function (b) {
      var ok =
        b &&
        typeof b.rule === 'string' &&
        typeof b.edge_id === 'boolean' &&
        typeof b.origin === 'boolean' &&
        Array.isArray(b.reasons);
      return ok
        ? Object.freeze({
            rule: b.rule,
            edge_id: b.edge_id,
            origin: b.origin,
            reasons: Object.freeze(b.reasons.filter(function (r) { return typeof r === 'string'; })),
          })
        : null;
    });
  }

  /**
   * A signed first-party URL for `url` (absolute, or relative to the page), from
   * `GET /first-party/sign?url=…`. The promise rejects with an error whose `code` is
   * `'SIGNING_REFUSED'` when the service will not sign that target (400: not an allowed partner),
   * `'SIGNING_UNAVAILABLE'` when it cannot sign at all (404: no endpoint; 503: no key), else
   * `'SIGNING_FAILED'`.
   * @param {string|URL} url
   * @returns {Promise<string>}
   */
  function sign(url) {
    var target;
    try {
      target = new root.URL(String(url), root.location.href).href;
    } catch (e) {
      return Promise.reject(new TypeError('tsjs.sign: not a URL: ' + String(url)));
    }
    return root
      .fetch('/first-party/sign?url=' + encodeURIComponent(target), {
        credentials: 'same-origin',
        headers: { Accept: 'application/json' },
      })
      .then(function (response) {
        if (response.status === 404 || response.status === 503) {
          throw failure('SIGNING_UNAVAILABLE', 'tsjs.sign: signing is unavailable on this site');
        }
        if (response.status === 400) {
          throw failure('SIGNING_REFUSED', 'tsjs.sign: this URL cannot be signed');
        }
        if (!response.ok) {
          throw failure('SIGNING_FAILED', 'tsjs.sign: signing failed (' + response.status + ')');
        }
        return response.json().then(function (body) {
          if (body && typeof body.url === 'string') {
            return body.url;
          }
          throw failure('SIGNING_FAILED', 'tsjs.sign: the answer carries no url');
        });
      });
  }

  /**
   * @param {string} code
   * @param {string} message
   * @returns {Error & {code: string}}
   */
  function failure(code, message) {
    var error = /** @type {Error & {code: string}} */ (new Error(message));
    error.code = code;
    return error;
  }

  // ---- The navigation auction's bids (docs/script.md, "Bids") ----

  /** The id of the element holding the page's bids (crates/core/src/auction/page_bids.rs). */
  var BIDS_ELEMENT_ID = 'ts-bids';
  /** The one version of the bids' shape this script reads. */
  var BIDS_VERSION = 1;
  /** The slot element's attribute (and value) by which page code renders the slot itself. */
  var MANUAL_ATTRIBUTE = 'data-ts-render';
  /**
   * The creative frame's sandbox: no `allow-same-origin`. A `srcdoc` frame's document would
   * otherwise have the page's origin, so the bidder's markup would run as the publisher: read
   * and change the page, its storage and its non-HttpOnly cookies, and call same-origin
   * endpoints (`/_ts/ec`, `/first-party/sign`) with the reader's cookies. Sandboxed, it gets a
   * unique opaque origin; it may still run script, open pop-ups that are not sandboxed (an
   * advertiser's landing page), submit forms, and navigate the top page only on a click.
   */
  var SANDBOX =
    'allow-scripts allow-popups allow-popups-to-escape-sandbox ' +
    'allow-top-navigation-by-user-activation allow-forms';

  /** @type {Object<string, {bid: Object|null, targeting: Object}>|null} */
  var bids = null;
  /** @type {Array<function(Object): void>} */
  var listeners = [];
  /** Counts `pageBids` calls: only the latest one's answer is used. */
  var generation = 0;
  var warned = false;

  /** @param {string} message */
  function warnOnce(message) {
    if (!warned && root.console && typeof root.console.warn === 'function') {
      warned = true;
      root.console.warn('tsjs: ' + message);
    }
  }

  /**
   * @template T
   * @param {T} value
   * @returns {T} the value, frozen with everything in it (JSON data: no cycles)
   */
  function deepFreeze(value) {
    if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
      Object.keys(value).forEach(function (key) {
        deepFreeze(value[key]);
      });
      Object.freeze(value);
    }
    return value;
  }

  /** @param {any} value */
  function isObject(value) {
    return value !== null && typeof value === 'object' && !Array.isArray(value);
  }

  /**
   * The slots of bids data `{v: 1, slots: {…}}`, each as a frozen `{bid, targeting}` (`bid` an
   * object or `null`, `targeting` an object); `null` when the data is not of that shape.
   * @param {any} data
   */
  function slotsOf(data) {
    if (!isObject(data) || data.v !== BIDS_VERSION || !isObject(data.slots)) {
      return null;
    }
    var slots = {};
    Object.keys(data.slots).forEach(function (id) {
      var slot = data.slots[id];
      slots[id] = {
        bid: isObject(slot) && isObject(slot.bid) ? slot.bid : null,
        targeting: isObject(slot) && isObject(slot.targeting) ? slot.targeting : {},
      };
    });
    return deepFreeze(slots);
  }

  /**
   * The URL a bid's `burl` names, when it is http(s) (relative to the page), else `null`.
   * @param {any} url
   */
  function httpUrl(url) {
    if (typeof url !== 'string' || url === '') {
      return null;
    }
    try {
      var parsed = new root.URL(url, root.location.href);
      return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.href : null;
    } catch (e) {
      return null;
    }
  }

  /**
   * Tells the bidder its bid was shown: one `GET` of the billing URL, without cookies, that
   * outlives the page (`keepalive`). A `GET`, not `sendBeacon`'s `POST`: billing URLs are
   * pixels, written for `GET`. `sendBeacon` only where there is no `fetch`.
   * @param {string} url an http(s) URL
   */
  function notify(url) {
    if (typeof root.fetch === 'function') {
      root
        .fetch(url, { method: 'GET', mode: 'no-cors', keepalive: true, credentials: 'omit' })
        .catch(function () {});
    } else if (root.navigator && typeof root.navigator.sendBeacon === 'function') {
      root.navigator.sendBeacon(url);
    }
  }

  /**
   * Renders each slot's winning markup into the element whose id is the slot's id: the
   * element's children are replaced by one sandboxed `srcdoc` frame of the bid's size, and the
   * bid's `burl` is fetched once. A slot is left as it is when its element is missing or has
   * `data-ts-render="manual"`, or when it has no bid, no markup, or a bid that is not a banner
   * (a native bid's `adm` is JSON for page code to lay out).
   * @param {Document} doc
   * @param {Object<string, {bid: Object|null, targeting: Object}>} slots
   */
  function render(doc, slots) {
    Object.keys(slots).forEach(function (id) {
      var bid = slots[id].bid;
      if (!bid || typeof bid.adm !== 'string' || bid.adm === '') {
        return;
      }
      if (bid.type !== undefined && bid.type !== null && bid.type !== 'banner') {
        return;
      }
      var element = doc.getElementById(id);
      if (!element || element.getAttribute(MANUAL_ATTRIBUTE) === 'manual') {
        return;
      }
      var frame = doc.createElement('iframe');
      // The sandbox is set before the markup and before the frame is in the document, so
      // the markup never runs unsandboxed.
      frame.setAttribute('sandbox', SANDBOX);
      frame.setAttribute('title', 'Advertisement');
      frame.setAttribute('scrolling', 'no');
      frame.setAttribute('frameborder', '0');
      frame.setAttribute('style', 'border:0;display:block');
      ['w', 'h'].forEach(function (key, i) {
        var size = bid[key];
        if (typeof size === 'number' && size > 0 && size === Math.floor(size)) {
          frame.setAttribute(i === 0 ? 'width' : 'height', String(size));
        }
      });
      if (typeof bid.id === 'string' || typeof bid.id === 'number') {
        frame.setAttribute('data-ts-bid', String(bid.id));
      }
      frame.setAttribute('srcdoc', bid.adm);
      while (element.firstChild) {
        element.removeChild(element.firstChild);
      }
      element.appendChild(frame);
      var burl = httpUrl(bid.burl);
      if (burl) {
        notify(burl);
      }
    });
  }

  /**
   * Makes `slots` the page's bids: renders them, then calls every `onBids` callback with
   * them. A callback that throws does not stop the others; its error is reported apart.
   * @param {Object<string, {bid: Object|null, targeting: Object}>} slots
   */
  function show(slots) {
    bids = slots;
    var doc = root.document;
    if (doc) {
      render(doc, slots);
    }
    listeners.slice().forEach(function (callback) {
      call(callback, slots);
    });
  }

  /**
   * @param {function(Object): void} callback
   * @param {Object} slots
   */
  function call(callback, slots) {
    try {
      callback(slots);
    } catch (e) {
      if (typeof root.setTimeout === 'function') {
        root.setTimeout(function () {
          throw e;
        }, 0);
      }
    }
  }

  /**
   * Reads the page's bids block, once the document is parsed (the edge writes it just before
   * `</body>`). No block: nothing happens. A block that is not JSON of version 1: a warning,
   * nothing else.
   */
  function readBlock() {
    var doc = root.document;
    if (!doc || generation !== 0) {
      return;
    }
    var element = doc.getElementById(BIDS_ELEMENT_ID);
    if (!element) {
      return;
    }
    var slots = null;
    try {
      slots = slotsOf(JSON.parse(element.textContent));
    } catch (e) {
      slots = null;
    }
    if (slots === null) {
      warnOnce('#' + BIDS_ELEMENT_ID + ' is not bids data of version ' + BIDS_VERSION + '; ignored');
      return;
    }
    show(slots);
  }

  /**
   * Calls `callback` with the page's slots (`{<slot id>: {bid, targeting}}`) now if they are
   * already read, and again each time new ones arrive (`pageBids`). Never called on a page
   * without bids.
   * @param {function(Object): void} callback
   */
  function onBids(callback) {
    if (typeof callback !== 'function') {
      throw new TypeError('tsjs.onBids: not a function');
    }
    listeners.push(callback);
    if (bids !== null) {
      call(callback, bids);
    }
  }

  /**
   * For single-page apps, after a navigation has put the new view's slot elements in the
   * document: asks `GET /_ts/page-bids?path=<path>` (same origin, `no-store`) for the bids of
   * `path` (default: the page's own; a URL on another origin is refused), and shows them as
   * the page's bids. Resolves the slots, or `null` when there are none (a non-2xx or
   * malformed answer: `tsjs.bids` becomes `null`) or when a later call superseded this one.
   * Rejects only when the request itself fails.
   * @param {string} [path]
   * @returns {Promise<Object|null>}
   */
  function pageBids(path) {
    var target;
    try {
      var here = new root.URL(root.location.href);
      var url = new root.URL(path === undefined ? here.href : String(path), here.href);
      if (url.origin !== here.origin) {
        throw new TypeError('another origin');
      }
      target = url.pathname;
    } catch (e) {
      return Promise.reject(new TypeError('tsjs.pageBids: not a path of this site: ' + String(path)));
    }
    var mine = ++generation;
    return root
      .fetch('/_ts/page-bids?path=' + encodeURIComponent(target), {
        credentials: 'same-origin',
        cache: 'no-store',
        headers: { Accept: 'application/json' },
      })
      .then(function (response) {
        return response.ok
          ? response.json().then(slotsOf, function () {
              return null;
            })
          : null;
      })
      .then(function (slots) {
        if (mine !== generation) {
          return null;
        }
        if (slots === null) {
          bids = null;
          return null;
        }
        show(slots);
        return slots;
      });
  }

  var api = Object.freeze({
    __tsjs: true,
    version: VERSION,
    getEdgeId: getEdgeId,
    getConsent: getConsent,
    sign: sign,
    /** The page's slots as last read (`{<slot id>: {bid, targeting}}`, frozen), or `null`. */
    get bids() {
      return bids;
    },
    onBids: onBids,
    pageBids: pageBids,
  });
  try {
    Object.defineProperty(root, 'tsjs', { value: api, enumerable: true });
  } catch (e) {
    // A page that froze `window.tsjs` itself keeps its own; nothing else to do.
  }

  // The bids block comes last in the body: read it once the document is parsed.
  var doc = root.document;
  if (doc) {
    if (doc.readyState === 'loading') {
      doc.addEventListener('DOMContentLoaded', readBlock);
    } else {
      readBlock();
    }
  }
})(typeof window !== 'undefined' ? window : globalThis);
