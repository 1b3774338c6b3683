//! Route classification in one place: the service's own endpoints first, then the publisher
//! proxy as the fallback. A new endpoint is one line in [`ROUTES`].

/// What a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `GET /_ts/health`: liveness and version, answered without touching the origin.
    Health,
    /// `GET /_ts/ec`: the client's edge ID as JSON, for the first-party script.
    EdgeId,
    /// Everything else: proxied to the publisher origin.
    PublisherProxy,
}

/// `(method, exact path, route)`; `None` matches any method.
const ROUTES: &[(Option<&str>, &str, Route)] = &[
    (Some("GET"), "/_ts/health", Route::Health),
    (Some("GET"), "/_ts/ec", Route::EdgeId),
];

impl Route {
    /// Classifies a request by method and path (without the query string).
    pub fn classify(method: &str, path: &str) -> Route {
        ROUTES
            .iter()
            .find(|(m, p, _)| *p == path && m.is_none_or(|m| m == method))
            .map_or(Route::PublisherProxy, |(_, _, route)| *route)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_endpoints_first_then_the_proxy() {
        assert_eq!(Route::classify("GET", "/_ts/health"), Route::Health);
        assert_eq!(
            Route::classify("POST", "/_ts/health"),
            Route::PublisherProxy
        );
        assert_eq!(
            Route::classify("GET", "/_ts/health/x"),
            Route::PublisherProxy
        );
        assert_eq!(Route::classify("GET", "/"), Route::PublisherProxy);
        assert_eq!(Route::classify("GET", "/_ts/ec"), Route::EdgeId);
        assert_eq!(Route::classify("POST", "/_ts/ec"), Route::PublisherProxy);
    }
}
