//! A small bounded in-memory cache of plain and encoded bodies, so that
//! benchmarks measure the proxy rather than the origin's compressor.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};

use crate::codec::{self, Encoding};

/// Total bytes kept before the cache is emptied and starts over.
const MAX_CACHED_BYTES: usize = 256 * 1024 * 1024;

/// Cache keyed by (resource key, encoding). Resource keys must change
/// whenever the plain bytes change (e.g. include size and mtime).
#[derive(Default)]
pub struct BodyCache {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<(String, Encoding), Arc<Vec<u8>>>,
    bytes: usize,
}

impl BodyCache {
    /// Returns the cached plain body for `key`, loading it with `load` on a
    /// miss.
    pub fn plain(
        &self,
        key: &str,
        load: impl FnOnce() -> io::Result<Vec<u8>>,
    ) -> io::Result<Arc<Vec<u8>>> {
        if let Some(hit) = self.get(key, Encoding::Identity) {
            return Ok(hit);
        }
        let body = Arc::new(load()?);
        self.put(key, Encoding::Identity, body.clone());
        Ok(body)
    }

    /// Returns `plain` encoded with `encoding`, compressing on a miss.
    pub fn encoded(&self, key: &str, encoding: Encoding, plain: &Arc<Vec<u8>>) -> Arc<Vec<u8>> {
        if encoding == Encoding::Identity {
            return plain.clone();
        }
        if let Some(hit) = self.get(key, encoding) {
            return hit;
        }
        let body = Arc::new(codec::compress(encoding, plain));
        self.put(key, encoding, body.clone());
        body
    }

    fn get(&self, key: &str, encoding: Encoding) -> Option<Arc<Vec<u8>>> {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.map.get(&(key.to_string(), encoding)).cloned()
    }

    fn put(&self, key: &str, encoding: Encoding, body: Arc<Vec<u8>>) {
        if body.len() > MAX_CACHED_BYTES / 4 {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if inner.bytes + body.len() > MAX_CACHED_BYTES {
            inner.map.clear();
            inner.bytes = 0;
        }
        inner.bytes += body.len();
        if let Some(old) = inner.map.insert((key.to_string(), encoding), body) {
            inner.bytes -= old.len();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_once_and_encodes_once() {
        let cache = BodyCache::default();
        let a = cache.plain("k", || Ok(b"abc".repeat(100))).unwrap();
        let b = cache.plain("k", || panic!("should be cached")).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let g1 = cache.encoded("k", Encoding::Gzip, &a);
        let g2 = cache.encoded("k", Encoding::Gzip, &a);
        assert!(Arc::ptr_eq(&g1, &g2));
        assert_ne!(*g1, *a);
        assert!(Arc::ptr_eq(&cache.encoded("k", Encoding::Identity, &a), &a));
    }

    #[test]
    fn load_errors_are_not_cached() {
        let cache = BodyCache::default();
        assert!(cache
            .plain("k", || Err(io::ErrorKind::NotFound.into()))
            .is_err());
        assert_eq!(*cache.plain("k", || Ok(b"x".to_vec())).unwrap(), b"x");
    }
}
