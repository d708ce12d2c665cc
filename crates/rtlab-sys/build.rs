//! Compiles the eBPF split backend (bpf/split.bpf.c) with clang into OUT_DIR/split.bpf.o.
//! Without clang or libbpf's headers (Debian: clang, libbpf-dev; `./rtlab` and `./run-tests`
//! install them as root) rtlab builds anyway: the object is empty and `RTLAB_EBPF_BUILD`
//! says what was missing, which `rtlab sysinfo` and `--split` then report for the ebpf
//! backend. Installing them later needs a rebuild of this crate (`cargo clean -p rtlab-sys`).

use std::path::PathBuf;

/// What to do about a missing compiler or header.
const REBUILD: &str =
    "install them (Debian: apt-get install clang libbpf-dev), then rebuild with `cargo clean -p rtlab-sys` and ./rtlab";
use std::process::Command;

fn main() {
    let source = PathBuf::from("bpf/split.bpf.c");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-env-changed=RTLAB_CLANG");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("split.bpf.o");
    let clang = std::env::var("RTLAB_CLANG").unwrap_or_else(|_| "clang".into());
    let missing = |why: String| {
        std::fs::write(&out, []).expect("OUT_DIR is writable");
        println!("cargo:rustc-env=RTLAB_EBPF_BUILD={why}");
    };
    if !std::path::Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return missing(format!(
            "rtlab was built without libbpf's headers (/usr/include/bpf/bpf_helpers.h): {REBUILD}"
        ));
    }
    // <linux/bpf.h> includes <asm/types.h>, which Debian keeps under the multiarch directory.
    let multiarch = Command::new("cc")
        .arg("-print-multiarch")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|m| !m.is_empty());
    let mut cmd = Command::new(&clang);
    cmd.args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror"]);
    if let Some(m) = multiarch {
        cmd.arg(format!("-I/usr/include/{m}"));
    }
    cmd.arg("-c").arg(&source).arg("-o").arg(&out);
    match cmd.output() {
        Ok(o) if o.status.success() => println!("cargo:rustc-env=RTLAB_EBPF_BUILD="),
        Ok(o) => {
            // The source is ours: a failure to compile it is a bug to see, not to hide.
            panic!("compiling {} with {clang} failed:\n{}", source.display(), String::from_utf8_lossy(&o.stderr));
        }
        Err(e) => missing(format!("rtlab was built without clang ({clang}: {e}): {REBUILD}")),
    }
}
