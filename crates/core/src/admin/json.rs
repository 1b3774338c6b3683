//! A minimal JSON object writer for the admin answers: nested objects of strings, booleans
//! and numbers, which is all they need (no dependency for it in the service).

/// Builds one JSON object; nested objects through [`JsonObject::object`].
#[derive(Debug)]
pub struct JsonObject<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> JsonObject<'a> {
    /// Opens an object at the end of `out`; [`JsonObject::close`] ends it.
    pub fn open(out: &'a mut String) -> Self {
        out.push('{');
        JsonObject { out, first: true }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        write_string(self.out, key);
        self.out.push(':');
    }

    /// `"key": "value"`.
    pub fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        write_string(self.out, value);
    }

    /// `"key": true` or `false`.
    pub fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out.push_str(if value { "true" } else { "false" });
    }

    /// `"key": 123`.
    pub fn number(&mut self, key: &str, value: u64) {
        self.key(key);
        self.out.push_str(&value.to_string());
    }

    /// `"key": { … }`, filled by `fill`.
    pub fn object(&mut self, key: &str, fill: impl FnOnce(&mut JsonObject<'_>)) {
        self.key(key);
        let mut inner = JsonObject::open(self.out);
        fill(&mut inner);
        inner.close();
    }

    /// Ends the object.
    pub fn close(self) {
        self.out.push('}');
    }
}

/// Writes `s` as a JSON string (RFC 8259 section 7): quotes, backslashes and control
/// characters escaped, everything else as UTF-8.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nested_objects_parse_as_json() {
        let mut out = String::new();
        let mut o = JsonObject::open(&mut out);
        o.string("a", "x\"y");
        o.object("b", |b| {
            b.bool("t", true);
            b.number("n", 42);
            b.object("empty", |_| {});
        });
        o.close();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a": "x\"y", "b": {"t": true, "n": 42, "empty": {}}})
        );
    }

    proptest! {
        /// serde_json, an independent reader, gets back every string exactly.
        #[test]
        fn any_string_round_trips_through_serde_json(s in "\\PC*|[\\x00-\\x1f\"\\\\]*") {
            let mut out = String::new();
            write_string(&mut out, &s);
            let back: String = serde_json::from_str(&out).unwrap();
            prop_assert_eq!(back, s);
        }
    }
}
