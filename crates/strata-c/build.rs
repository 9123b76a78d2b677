//! Build script: gives the shared library its SONAME.
//!
//! Owns: the `-soname` of `libstrata.so` on ELF platforms, `libstrata.so.<major>` (the crate's
//! major version, so `libstrata.so.0` for 0.x). A program linked with `-lstrata` then records
//! `libstrata.so.0` as what it needs, and finds it through the links scripts/install-c.sh
//! installs (`libstrata.so.0 -> libstrata.so.0.1.0`, `libstrata.so -> libstrata.so.0`), so
//! several versions can be installed side by side and an upgrade within a major version needs
//! no relinking. Linking against the library in target/ directly needs the same link,
//! `libstrata.so.0 -> libstrata.so`, next to it (crates/strata-c/tests/c_api.rs makes it).
//! Must not: affect the static library, or other platforms' linkers (macOS's ld64 has no
//! -soname; its install name is left as cargo sets it).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let elf = matches!(
        os.as_str(),
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" | "dragonfly" | "illumos" | "solaris"
    );
    if elf {
        let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets CARGO_PKG_VERSION_MAJOR");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libstrata.so.{major}");
    }
}
