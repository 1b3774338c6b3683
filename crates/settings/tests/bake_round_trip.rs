//! The baked settings expression, compiled, is the value it was baked from.
//!
//! `build.rs` of the service embeds `Settings::to_rust_expr()` as a `static`; the service's own
//! test checks that for the shipped file. Here the default and a value with every key set
//! (lists, a resolve table, an origin port, escapes in a header value) are baked into a scratch
//! crate, compiled as `static` initialisers (so the expression is const-evaluable) and
//! printed: what the compiled statics print is what the values print.
//!
//! The scratch crate depends on the settings crate without features, so it needs nothing
//! from a registry; it is built under `CARGO_TARGET_TMPDIR`, kept between runs.

use std::path::Path;
use std::process::Command;

use trusted_server_settings::{load, Settings};

/// Every key set away from its default.
const FULL: &str = r#"
[publisher]
domain = "www.publisher.example"
origin_url = "https://origin.publisher.example:8443/"
origin_host = "Pages.Publisher.Example:9443"
cookie_domain = ".publisher.example"
streaming = false
connect_timeout_ms = 1001
first_byte_timeout_ms = 2002
between_bytes_timeout_ms = 3003

[response_headers]
x-quote = "say \"hi\" \\ ü"
x-second = "two"

[integrations.nextjs]
enabled = false
max_held_bytes = 4096

[identity]
enabled = false
secret_store = "id.store"
secret_key = "id-key"

[signing]
enabled = false
secret_store = "sign.store"
current_kid = "k-3"
previous_kids = ["k-2", "k_1"]

[first_party]
allowed_domains = ["partner.example", "cdn.other.example"]
allowed_ports = [8443, 9000]
resolve = { "ads.partner.example" = "127.0.0.1:9001", "cdn.other.example" = "[::1]:9002" }
secret_store = "fp.store"
token_key = "fp-key"
sign_ttl_secs = 61
page_ttl_secs = 7201

[script]
inject = false

[admin]
enabled = false
secret_store = "ops.store"
user_key = "u-1"
password_key = "p-1"

[logging]
level = "trace"

[delivery]
server_timing = false
compression = "edge"
early_hints = false

[auction]
enabled = false
timeout_ms = 900
margin_ms = 70
price_granularity = "high"
currency = "EUR"
navigation = false
navigation_timeout_ms = 400
bots = ["MyCrawler"]

[[auction.slots]]
id = "ad-top"
paths = ["/ads.html", "/news/*"]
sizes = [[728, 90], [970, 250]]
bidders = { fast = { placement = 1, name = "a\"b" }, Slow_2 = {} }
floor = 0.5

[[auction.bidders]]
code = "fast"
endpoint = "http://127.0.0.1:8080/bidders/fast"
vendor_id = 1001

[[auction.bidders]]
code = "Slow_2"
endpoint = "https://bids.partner.example:8443/rtb?a=1&b=%22"
timeout_ms = 250
signed = true
rendering = "as-sent"
"#;

#[test]
fn the_default_and_a_full_value_compile_back_to_themselves() {
    let full = load(FULL, std::iter::empty::<(String, String)>()).expect("FULL is valid");
    assert_ne!(full.publisher.origin_port, None, "FULL sets a port");
    let values = [Settings::DEFAULT, full];
    // Every field differs from the default, so a field the baking dropped cannot hide.
    assert_ne!(format!("{:?}", values[0]), format!("{:?}", values[1]));

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("bake_round_trip");
    std::fs::create_dir_all(dir.join("src")).expect("scratch crate folder");
    let settings_crate = env!("CARGO_MANIFEST_DIR").replace('\\', "/");
    let manifest = format!(
        "[package]\nname = \"bake-round-trip\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\ntrusted-server-settings = {{ path = \"{settings_crate}\" }}\n\n\
         # Not a member of the repository's workspace.\n[workspace]\n"
    );
    let mut main = String::new();
    for (i, value) in values.iter().enumerate() {
        main.push_str(&format!(
            "static V{i}: trusted_server_settings::Settings = {};\n",
            value.to_rust_expr()
        ));
    }
    main.push_str("fn main() {\n");
    for i in 0..values.len() {
        main.push_str(&format!("    println!(\"{{:?}}\", V{i});\n"));
    }
    main.push_str("}\n");
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("scratch manifest");
    std::fs::write(dir.join("src/main.rs"), main).expect("scratch source");

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["run", "--quiet", "--offline", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(dir.join("target"))
        // The host's build, whatever target the tests were asked for.
        .env_remove("CARGO_BUILD_TARGET")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "the baked settings do not compile:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).expect("UTF-8 output");
    let expected: String = values.iter().map(|v| format!("{v:?}\n")).collect();
    assert_eq!(printed, expected);
}
