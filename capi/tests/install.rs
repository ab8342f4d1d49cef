//! `capi/install.sh PREFIX`, as a host's build uses what it installs: the script installs into
//! a temporary prefix (building with this test's cargo and target directory), then
//! capi/tests/c/installed.c is built against that prefix only and run:
//!
//! - with the flags of `hos.pc`, read here (its variables resolved, as pkg-config does),
//!   statically: `Cflags`, libhos.a, `Libs.private`;
//! - with `pkg-config --cflags --libs hos` itself, against libhos.so, if pkg-config is there;
//! - with CMake's `find_package(hos 0.1)` and the target `hos::hos`, if cmake is there.
//!
//! A tool that is missing is said on stderr and its part skipped; the script and the `.pc`
//! read here are always tested.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).to_path_buf()
}

/// The target directory this test was built in (`target/<profile>/deps/install-<hash>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    exe.ancestors()
        .nth(3)
        .expect("target directory")
        .to_path_buf()
}

/// A fresh, empty directory for this test's prefix and builds.
fn scratch() -> PathBuf {
    let dir = target_dir().join("install-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn ok(what: &str, out: Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed with {}:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `tool` runs (`tool --version`).
fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The fields of a `.pc` file (`Name: value`), its variables (`name=value`) expanded.
fn read_pc(path: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(path).expect("hos.pc");
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut fields = HashMap::new();
    let expand = |s: &str, vars: &HashMap<String, String>| {
        let mut out = s.to_string();
        // Variables refer to earlier ones only: a pass per variable expands every chain.
        for _ in 0..vars.len() {
            for (k, v) in vars {
                out = out.replace(&format!("${{{k}}}"), v);
            }
        }
        assert!(
            !out.contains("${"),
            "{path:?}: {out} has an unknown variable"
        );
        out
    };
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let field = line.split_once(':');
        let var = line.split_once('=');
        match (field, var) {
            (Some((k, v)), Some((vk, _))) if k.len() < vk.len() => {
                fields.insert(k.trim().to_string(), expand(v.trim(), &vars));
            }
            (_, Some((k, v))) => {
                let v = expand(v.trim(), &vars);
                vars.insert(k.trim().to_string(), v);
            }
            (Some((k, v)), None) => {
                fields.insert(k.trim().to_string(), expand(v.trim(), &vars));
            }
            (None, None) => panic!("{path:?}: a line that is neither: {line}"),
        }
    }
    fields
}

/// Compiles installed.c with `flags` into `exe` and runs it (with `prefix/lib` on the
/// loader's path, for libhos.so).
fn build_and_run(exe: &Path, prefix: &Path, flags: &[String]) {
    let source = root().join("capi/tests/c/installed.c");
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg(&source)
        .args(flags)
        .arg("-o")
        .arg(exe)
        .output()
        .expect("cc runs (.ci/run installs it)");
    ok(&format!("cc installed.c {flags:?}"), out);
    run(exe, prefix);
}

fn run(exe: &Path, prefix: &Path) {
    let out = Command::new(exe)
        .env("LD_LIBRARY_PATH", prefix.join("lib"))
        .output()
        .expect("the program starts");
    let stdout = ok(&exe.display().to_string(), out);
    assert!(stdout.contains("the installed hos works"), "{stdout}");
}

#[test]
fn an_installed_hos_builds_a_host_by_pkg_config_and_cmake() {
    let dir = scratch();
    let prefix = dir.join("prefix");
    let out = Command::new("sh")
        .arg(root().join("capi/install.sh"))
        .arg(&prefix)
        .env("CARGO", env!("CARGO"))
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .expect("sh runs");
    let said = ok("capi/install.sh", out);
    assert!(said.contains("installed into"), "{said}");
    for f in [
        "lib/libhos.a",
        "lib/libhos.so",
        "include/hos.h",
        "include/hos.hpp",
        "lib/pkgconfig/hos.pc",
        "lib/cmake/hos/hosConfig.cmake",
        "lib/cmake/hos/hosConfigVersion.cmake",
    ] {
        assert!(prefix.join(f).is_file(), "{f} was not installed");
    }

    // hos.pc read here: the static library and the system libraries it needs.
    let pc = read_pc(&prefix.join("lib/pkgconfig/hos.pc"));
    assert_eq!(pc["Name"], "hos");
    assert_eq!(pc["Version"], env!("CARGO_PKG_VERSION"));
    let mut flags: Vec<String> = pc["Cflags"].split_whitespace().map(String::from).collect();
    assert!(
        flags.contains(&format!("-I{}", prefix.join("include").display())),
        "{flags:?}"
    );
    flags.push(prefix.join("lib/libhos.a").display().to_string());
    flags.extend(pc["Libs.private"].split_whitespace().map(String::from));
    build_and_run(&dir.join("static-by-pc"), &prefix, &flags);

    if have("pkg-config") {
        let out = Command::new("pkg-config")
            .args(["--cflags", "--libs", "hos"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
            .output()
            .expect("pkg-config runs");
        let said = ok("pkg-config --cflags --libs hos", out);
        let flags: Vec<String> = said.split_whitespace().map(String::from).collect();
        assert!(flags.contains(&"-lhos".to_string()), "{flags:?}");
        build_and_run(&dir.join("shared-by-pkg-config"), &prefix, &flags);
    } else {
        eprintln!("note: no pkg-config here: its part is skipped (hos.pc was read by the test)");
    }

    if have("cmake") {
        let project = dir.join("cmake-project");
        std::fs::create_dir_all(&project).expect("project directory");
        let source = root().join("capi/tests/c");
        std::fs::write(
            project.join("CMakeLists.txt"),
            format!(
                "cmake_minimum_required(VERSION 3.10)\n\
                 project(installed C)\n\
                 find_package(hos 0.1 REQUIRED)\n\
                 add_executable(installed \"{}/installed.c\")\n\
                 target_link_libraries(installed PRIVATE hos::hos)\n",
                source.display()
            ),
        )
        .expect("CMakeLists.txt");
        let build = project.join("build");
        let out = Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
            .output()
            .expect("cmake runs");
        ok("cmake configure", out);
        let out = Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .output()
            .expect("cmake runs");
        ok("cmake --build", out);
        run(&build.join("installed"), &prefix);
    } else {
        eprintln!("note: no cmake here: the CMake package's part is skipped");
    }
}
