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

  /** @type {Promise<string|null>|null} */
  var edgeId = null;

  /**
   * The first-party edge ID of this browser, or `null` when there is none (the feature is
   * off, `Sec-GPC: 1`, or the answer carries no ID). Asked once per page from `GET /_ts/ec`;
   * the cookie is HttpOnly, so this is the only way script sees it. Rejects only when the
   * request itself fails (network), and the next call asks again.
   * @returns {Promise<string|null>}
   */
  function getEdgeId() {
    if (edgeId === null) {
      edgeId = root
        .fetch('/_ts/ec', {
          credentials: 'same-origin',
          cache: 'no-store',
          headers: { Accept: 'application/json' },
        })
        .then(function (response) {
          if (!response.ok) {
            return null;
          }
          return response.json().then(
            function (body) {
              var ec = body && body.ec;
              return typeof ec === 'string' && ec !== '' ? ec : null;
            },
            function () {
              return null;
            }
          );
        });
      edgeId.catch(function () {
        edgeId = null;
      });
    }
    return edgeId;
  }

  /** @type {Promise<{rule: string, edge_id: boolean, origin: boolean, reasons: string[]}|null>|null} */
  var consent = null;

  /**
   * The service's consent decision for this reader, from `GET /_ts/consent` (docs/consent.md):
   * `{rule, edge_id, origin, reasons}`, where `rule` is `opt-in`, `opt-out` or `none`,
   * `edge_id` and `origin` say whether an edge ID may exist and reach the origin, and
   * `reasons` are short stable words. `null` when the service gives no usable answer. Asked
   * once per page, like `getEdgeId`; rejects only when the request itself fails, and the next
   * call asks again.
   * @returns {Promise<{rule: string, edge_id: boolean, origin: boolean, reasons: string[]}|null>}
   */
  function getConsent() {
    if (consent === null) {
      consent = root
        .fetch('/_ts/consent', {
          credentials: 'same-origin',
          cache: 'no-store',
          headers: { Accept: 'application/json' },
        })
        .then(function (response) {
          if (!response.ok) {
            return null;
          }
          return response.json().then(decision, function () {
            return null;
          });
        });
      consent.catch(function () {
        consent = null;
      });
    }
    return consent;
  }

  /**
   * The decision of a `/_ts/consent` body, frozen, or `null` when it is not one.
   * @param {unknown} body
   */
  function decision(body) {
    var b = /** @type {any} */ (body);
    if (
      !b ||
      typeof b.rule !== 'string' ||
      typeof b.edge_id !== 'boolean' ||
      typeof b.origin !== 'boolean' ||
      !Array.isArray(b.reasons)
    ) {
      return null;
    }
    var reasons = b.reasons.filter(function (r) {
      return typeof r === 'string';
    });
    return Object.freeze({
      rule: b.rule,
      edge_id: b.edge_id,
      origin: b.origin,
      reasons: Object.freeze(reasons),
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
