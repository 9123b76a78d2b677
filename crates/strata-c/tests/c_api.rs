//! Compiles `tests/c/strata_test.c`, `tests/c/txn_test.c`, `tests/c/bulk_test.c` and
//! `tests/c/range_test.c` (sharing `tests/c/check.h`) with the system C compiler against
//! `include/strata.h`, links them once with the static library (`libstrata.a`) and once with the
//! shared one (`libstrata.so`, found through an rpath), runs both, and asserts they exit 0. Also
//! checks that the header and the exported functions name the same set of functions.
//!
//! The libraries are not built for integration tests by every cargo invocation (e.g.
//! `cargo test --test c_api` on a clean checkout), so the test first runs
//! `cargo build -p strata-c --lib` into the same target directory and profile as itself; when
//! they are already fresh that is a no-op.
//!
//! `CC` overrides the compiler (default `cc`, falling back to `gcc`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn repo_root() -> PathBuf {
    crate_dir().join("../..").canonicalize().expect("repository root")
}

/// `<target>/<profile>`: this test executable lives in `<target>/<profile>/deps/`.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    exe.parent().and_then(Path::parent).expect("test executable is in <target>/<profile>/deps").to_path_buf()
}

fn check(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds libstrata.a and libstrata.so into the profile directory of this test and returns it.
fn build_library() -> PathBuf {
    let profile_dir = profile_dir();
    let target_dir = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(d) => PathBuf::from(d),
        None => profile_dir.parent().expect("target dir").to_path_buf(),
    };
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_string(),
        Some(other) => other.to_string(),
        None => panic!("cannot tell the profile from {}", profile_dir.display()),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
    let out = Command::new(cargo)
        .args(["build", "-p", "strata-c", "--lib", "--profile", &profile, "--target-dir"])
        .arg(&target_dir)
        .current_dir(crate_dir())
        .output()
        .expect("run cargo build");
    check("cargo build -p strata-c --lib", &out);
    for lib in ["libstrata.a", "libstrata.so"] {
        assert!(profile_dir.join(lib).is_file(), "{} was not built", profile_dir.join(lib).display());
    }
    // The shared library's SONAME (build.rs) is libstrata.so.<major>, the name a program linked
    // with -lstrata looks for at run time: the link an install makes, made here next to it.
    let soname = profile_dir.join(concat!("libstrata.so.", env!("CARGO_PKG_VERSION_MAJOR")));
    let _ = std::fs::remove_file(&soname);
    std::os::unix::fs::symlink("libstrata.so", &soname).expect("link libstrata.so.<major>");
    profile_dir
}

fn compiler() -> String {
    if let Ok(cc) = std::env::var("CC") {
        return cc;
    }
    let works = |cc: &str| Command::new(cc).arg("--version").output().is_ok_and(|o| o.status.success());
    ["cc", "gcc"].into_iter().find(|cc| works(cc)).expect("a C compiler (cc or gcc) is needed").to_string()
}

/// Compiles the C test with `link_args` and runs it on a fresh scratch directory.
fn compile_and_run(name: &str, link_args: &[String]) {
    let scratch = tempfile::tempdir().expect("tempdir");
    let exe = scratch.path().join(name);
    let root = repo_root();
    let out = Command::new(compiler())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-I"])
        .arg(root.join("include"))
        .arg(crate_dir().join("tests/c/strata_test.c"))
        .arg(crate_dir().join("tests/c/txn_test.c"))
        .arg(crate_dir().join("tests/c/bulk_test.c"))
        .arg(crate_dir().join("tests/c/range_test.c"))
        .arg("-o")
        .arg(&exe)
        .args(link_args)
        .output()
        .expect("run the C compiler");
    check(&format!("compiling strata_test.c ({name})"), &out);
    let out = Command::new(&exe).arg(scratch.path()).output().expect("run strata_test");
    check(&format!("strata_test ({name})"), &out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("checks passed"), "unexpected output: {stdout}");
    println!("{name}: {}", stdout.trim());
}

#[test]
fn c_program_passes_against_static_and_shared_library() {
    let lib_dir = build_library();
    let static_lib = lib_dir.join("libstrata.a").display().to_string();
    let system_libs = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-lc"];
    let mut static_args = vec![static_lib];
    static_args.extend(system_libs.iter().map(|s| s.to_string()));
    compile_and_run("strata_test_static", &static_args);

    let dir = lib_dir.display().to_string();
    let shared_args = vec![format!("-L{dir}"), "-lstrata".to_string(), format!("-Wl,-rpath,{dir}")];
    compile_and_run("strata_test_shared", &shared_args);
}

/// Function names declared in the header, or defined with `extern "C"` in the crate.
fn names(text: &str, marker: &str) -> BTreeSet<String> {
    text.match_indices(marker)
        .map(|(i, _)| {
            let rest = &text[i + marker.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
            format!("strata_{}", &rest[..end])
        })
        .collect()
}

#[test]
fn header_declares_exactly_the_exported_functions() {
    let header = std::fs::read_to_string(repo_root().join("include/strata.h")).expect("read header");
    // The exported functions live in one module per area (src/*.rs).
    let mut source = String::new();
    for entry in std::fs::read_dir(crate_dir().join("src")).expect("list src") {
        let path = entry.expect("src entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            source += &std::fs::read_to_string(&path).expect("read a source file");
        }
    }
    // Declarations: "strata_name(" preceded by a space or '*' (return type), not inside comments'
    // prose mentions such as "strata_free()" — those are also real functions, so they match too.
    let declared: BTreeSet<String> =
        names(&header, " strata_").union(&names(&header, "*strata_")).cloned().collect();
    let declared: BTreeSet<String> =
        declared.into_iter().filter(|n| header.contains(&format!("{n}("))).collect();
    let exported = names(&source, "extern \"C\" fn strata_");
    assert!(!exported.is_empty());
    let missing: Vec<_> = exported.difference(&declared).collect();
    let extra: Vec<_> = declared.difference(&exported).collect();
    assert!(missing.is_empty(), "exported but not declared in strata.h: {missing:?}");
    assert!(extra.is_empty(), "declared in strata.h but not exported: {extra:?}");
}

#[test]
fn header_compiles_as_cxx() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let Ok(out) = Command::new(&cxx)
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++"])
        .arg(repo_root().join("include/strata.h"))
        .output()
    else {
        eprintln!("skipped: no C++ compiler ({cxx})");
        return;
    };
    check("compiling strata.h as C++", &out);
}
