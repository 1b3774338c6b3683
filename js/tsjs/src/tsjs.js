/*! Trusted Server Edge first-party script (docs/script.md). */
// Plain JavaScript, served byte for byte as written: no build step, so the bytes hashed into
// its URL are the bytes in this file. The page body stays the same for every reader: nothing
// here is written into the document, and per-reader values come only from same-origin
// requests answered `no-store`.
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

  var api = Object.freeze({
    __tsjs: true,
    version: VERSION,
    getEdgeId: getEdgeId,
    getConsent: getConsent,
    sign: sign,
  });
  try {
    Object.defineProperty(root, 'tsjs', { value: api, enumerable: true });
  } catch (e) {
    // A page that froze `window.tsjs` itself keeps its own; nothing else to do.
  }
})(typeof window !== 'undefined' ? window : globalThis);
