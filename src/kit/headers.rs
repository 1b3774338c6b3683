//! A request's or response's header block replaced by a new one with as few host calls as it
//! takes.
//!
//! Why: a `Request` or `Response` that came from the platform (the client's request, the
//! origin's response) is attached to a host-side handle, and the fastly crate writes every
//! change through at once: one host call per removed name and one per appended value. The
//! phases compute a header block as a whole (the core's forwarding and response policies) and
//! used to install it by removing every name and appending every value, two host calls per
//! header, on each of the three or four passes a page's response takes. Most names come out
//! of a policy as they went in, so only the names whose values changed are written here: a
//! name that keeps its values in order costs no host call.
//!
//! What differs from removing everything and appending in order: a name that changed goes to
//! the end of the block. Values keep their order within a name, which is the only order HTTP
//! gives meaning to (RFC 9110, section 5.3).

use fastly::http::{HeaderName, HeaderValue};
use fastly::{Request, Response};

/// A message whose header block [`replace`] can rewrite: the fastly crate's `Request` and
/// `Response`, which share no trait for this.
pub trait HeaderBlock {
    /// Every header line, in the block's order.
    fn lines(&self) -> Vec<(HeaderName, HeaderValue)>;
    /// Removes every line of `name`.
    fn remove(&mut self, name: &HeaderName);
    /// Appends one line.
    fn append(&mut self, name: &HeaderName, value: &HeaderValue);
}

/// The same three host calls on both message types of the SDK.
macro_rules! header_block {
    ($($message:ty),*) => {$(
        impl HeaderBlock for $message {
            fn lines(&self) -> Vec<(HeaderName, HeaderValue)> {
                self.get_headers()
                    .map(|(n, v)| (n.clone(), v.clone()))
                    .collect()
            }
            fn remove(&mut self, name: &HeaderName) {
                self.remove_header(name);
            }
            fn append(&mut self, name: &HeaderName, value: &HeaderValue) {
                self.append_header(name, value);
            }
        }
    )*};
}

header_block!(Response, Request);

/// Makes `message`'s header block `wanted`: afterwards each name has exactly `wanted`'s values
/// for it, in `wanted`'s order. Names whose values are unchanged are not touched.
pub fn replace(message: &mut impl HeaderBlock, wanted: &[(HeaderName, HeaderValue)]) {
    let current = message.lines();
    let edit = edit(&current, wanted);
    for name in edit.remove {
        message.remove(name);
    }
    for (name, value) in edit.append {
        message.append(name, value);
    }
}

/// What turns one header block into another: names to remove, then lines to append.
#[derive(Debug, PartialEq, Eq)]
struct Edit<'a> {
    remove: Vec<&'a HeaderName>,
    append: Vec<(&'a HeaderName, &'a HeaderValue)>,
}

/// The values of `name` in `block`, in order.
fn values_of<'a>(
    block: &'a [(HeaderName, HeaderValue)],
    name: &'a HeaderName,
) -> impl Iterator<Item = &'a HeaderValue> + 'a {
    block.iter().filter(move |(n, _)| n == name).map(|(_, v)| v)
}

/// The edit from `current` to `wanted`: a name of `current` is removed unless `wanted` has
/// the same values for it in the same order; each name of `wanted` that is new or changed has
/// its lines appended, in `wanted`'s order. (Quadratic in the number of lines, which is a few
/// dozen: cheaper than hashing here.)
fn edit<'a>(
    current: &'a [(HeaderName, HeaderValue)],
    wanted: &'a [(HeaderName, HeaderValue)],
) -> Edit<'a> {
    let unchanged = |name: &HeaderName| values_of(current, name).eq(values_of(wanted, name));
    let first_of = |block: &'a [(HeaderName, HeaderValue)], i: usize| {
        !block[..i].iter().any(|(n, _)| *n == block[i].0)
    };
    let mut remove = Vec::new();
    for (i, (name, _)) in current.iter().enumerate() {
        if first_of(current, i) && !unchanged(name) {
            remove.push(name);
        }
    }
    let append = wanted
        .iter()
        .filter(|(name, _)| !unchanged(name))
        .map(|(name, value)| (name, value))
        .collect();
    Edit { remove, append }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(lines: &[(&'static str, &'static str)]) -> Vec<(HeaderName, HeaderValue)> {
        lines
            .iter()
            .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v)))
            .collect()
    }

    fn names(edit: &Edit<'_>) -> Vec<String> {
        edit.remove.iter().map(|n| n.to_string()).collect()
    }

    fn appended(edit: &Edit<'_>) -> Vec<(String, String)> {
        edit.append
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn unchanged_names_are_left_alone() {
        let current = block(&[("a", "1"), ("b", "2"), ("b", "3")]);
        let e = edit(&current, &current);
        assert!(e.remove.is_empty() && e.append.is_empty(), "{e:?}");
    }

    #[test]
    fn changed_removed_and_new_names_are_written() {
        let current = block(&[("content-length", "9"), ("etag", "\"v\""), ("date", "x")]);
        let wanted = block(&[("etag", "W/\"v\""), ("date", "x"), ("x-ts-version", "1")]);
        let e = edit(&current, &wanted);
        assert_eq!(names(&e), ["content-length", "etag"]);
        assert_eq!(
            appended(&e),
            [
                ("etag".into(), "W/\"v\"".into()),
                ("x-ts-version".into(), "1".into())
            ]
        );
    }

    #[test]
    fn a_name_whose_values_change_order_or_count_is_rewritten_whole() {
        let current = block(&[("set-cookie", "a"), ("x", "1"), ("set-cookie", "b")]);
        for wanted in [
            block(&[("set-cookie", "b"), ("set-cookie", "a"), ("x", "1")]),
            block(&[("set-cookie", "a"), ("x", "1")]),
            block(&[
                ("set-cookie", "a"),
                ("set-cookie", "b"),
                ("set-cookie", "c"),
                ("x", "1"),
            ]),
        ] {
            let e = edit(&current, &wanted);
            assert_eq!(names(&e), ["set-cookie"], "once, however many lines");
            let cookies: Vec<_> = values_of(&wanted, &HeaderName::from_static("set-cookie"))
                .map(|v| ("set-cookie".to_owned(), v.to_str().unwrap().to_owned()))
                .collect();
            assert_eq!(appended(&e), cookies);
        }
    }

    /// Applying the edit gives every name exactly the wanted values, whatever the blocks.
    #[test]
    fn the_result_has_the_wanted_values_per_name() {
        let pool = ["a", "b", "c"];
        let values = ["1", "2"];
        // Every block of up to three lines over a small alphabet, against every other.
        let mut blocks = vec![Vec::new()];
        for _ in 0..3 {
            let mut longer = Vec::new();
            for b in &blocks {
                for n in pool {
                    for v in values {
                        let mut next: Vec<(&'static str, &'static str)> = b.clone();
                        next.push((n, v));
                        longer.push(next);
                    }
                }
            }
            blocks.extend(longer);
        }
        blocks.dedup();
        for current in blocks.iter().step_by(7) {
            for wanted in blocks.iter().step_by(5) {
                let (current, wanted) = (block(current), block(wanted));
                let e = edit(&current, &wanted);
                let mut result: Vec<(HeaderName, HeaderValue)> = current
                    .iter()
                    .filter(|(n, _)| !e.remove.contains(&n))
                    .cloned()
                    .collect();
                result.extend(e.append.iter().map(|(n, v)| ((*n).clone(), (*v).clone())));
                for name in pool.map(HeaderName::from_static) {
                    assert!(
                        values_of(&result, &name).eq(values_of(&wanted, &name)),
                        "{current:?} -> {wanted:?}: {result:?}"
                    );
                }
            }
        }
    }
}
