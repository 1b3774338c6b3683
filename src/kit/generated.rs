//! Everything `build.rs` generates, in one module: the settings, validated at build time and
//! embedded as a `static` with their fingerprint (part of every cache key), and the
//! first-party script, hashed into its path and stored as written, gzip and brotli.

include!(concat!(env!("OUT_DIR"), "/settings.rs"));
include!(concat!(env!("OUT_DIR"), "/script.rs"));

#[cfg(test)]
mod tests {
    /// The embedded settings are exactly what the settings crate loads from the file: the
    /// build-time code generation loses nothing. (scripts/test.sh builds without overrides.)
    #[test]
    fn embedded_settings_equal_the_loaded_file() {
        let loaded = trusted_server_settings::load(
            include_str!("../../trusted-server.toml"),
            std::iter::empty::<(String, String)>(),
        )
        .expect("trusted-server.toml is valid");
        assert_eq!(loaded, super::SETTINGS);
    }
}
