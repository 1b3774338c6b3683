//! Prints the `hb_pb` price bucket of prices read from stdin, one line each.
//!
//! Each input line is `<granularity JSON>\t<cpm>`: the granularity as Prebid Server reads
//! `ext.prebid.targeting.pricegranularity` (`"auto"`, or `{"precision": 2, "ranges": [...]}`),
//! the price as JavaScript's `String(number)` prints it (`1.37`, `1e-7`, `-0`, `Infinity`,
//! `NaN`). The output line is the bucket as a JSON string (`""` where Prebid.js gives none), or
//! `{"error": "..."}` when the granularity is refused, so the differential test in
//! `tests/auction/` compares it with Prebid.js's `getPriceBucketString`.

use std::io::{BufRead, BufWriter, Write};

use serde_json::{json, Value};
use trusted_server_core::auction::Granularity;

fn main() {
    let stdin = std::io::stdin();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Some((granularity, cpm)) = line.split_once('\t') else {
            eprintln!("price_buckets: expected <granularity JSON>\\t<cpm>, got {line:?}");
            std::process::exit(2);
        };
        // Rust reads `inf`/`infinity`/`nan` in any case; JavaScript prints `Infinity`, `NaN`.
        let Ok(cpm) = cpm.parse::<f64>() else {
            eprintln!("price_buckets: not a number: {cpm:?}");
            std::process::exit(2);
        };
        let answer = match serde_json::from_str::<Value>(granularity)
            .map_err(|e| e.to_string())
            .and_then(|v| Granularity::from_openrtb(&v))
        {
            Ok(g) => json!(g.bucket(cpm)),
            Err(e) => json!({ "error": e }),
        };
        let _ = writeln!(out, "{answer}");
    }
}
