//! How the `flexio` binary is linked on Linux, for its start-up time.
//!
//! A 4 KiB `flexio copy` is mostly process start-up, and `cp` is the
//! yardstick. The binary stays a PIE (the toolchain's default): it runs
//! as root and faces the network, so its own image is randomized like its
//! libraries, stack and heap. What start-up can save without that:
//!
//! - **Packed relative relocations** (`-z pack-relative-relocs`, DT_RELR):
//!   a PIE's relocated data (vtables, panic locations, string tables) is
//!   described by a bitmap instead of 24 bytes a pointer, so the loader
//!   reads a few hundred bytes instead of tens of KiB of `.rela.dyn`
//!   before `main`. It needs binutils ≥ 2.38 and a glibc ≥ 2.36 to load
//!   the result, so it is probed: a small program is linked with it and
//!   run, and only when both work is the flag used (never when
//!   cross-compiling, where the probe cannot run).
//! - **The unwinder linked in (`libgcc_eh.a`), not loaded (`libgcc_s.so`)**,
//!   as Rust's own static builds and gcc's `-static-libgcc` do: one shared
//!   library fewer for the loader to find and map. Skipped where the C
//!   compiler does not know the archive (then `libgcc_s` is loaded, which
//!   only costs time).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CC");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let gnu = std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if !(linux && gnu) {
        return;
    }
    if let Some(unwinder) = archive_known_to_the_compiler("libgcc_eh.a") {
        if let Some(directory) = unwinder.parent() {
            println!("cargo:rustc-link-search=native={}", directory.display());
        }
        println!("cargo:rustc-link-lib=static:+verbatim=libgcc_eh.a");
    }
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    if native && links_and_runs_with(&out_dir, "-Wl,-z,pack-relative-relocs") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
        // For the test that checks the flag took effect.
        println!("cargo:rustc-env=FLEXIO_PACKED_RELOCATIONS=1");
    }
}

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// The full path of `name` as the C compiler (the linker's driver) finds
/// it, or `None` when it does not: `cc -print-file-name` echoes a bare
/// name it cannot find.
fn archive_known_to_the_compiler(name: &str) -> Option<PathBuf> {
    let output = Command::new(compiler())
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    (output.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}

/// Whether a PIE linked by the C compiler with `flag` links and runs here:
/// a linker that does not know the flag fails the link, and a C library
/// whose loader cannot apply what it asks for fails the run.
fn links_and_runs_with(out_dir: &Path, flag: &str) -> bool {
    let source = out_dir.join("probe.c");
    let program = out_dir.join("probe");
    // A relocated pointer, so that the flag has something to pack.
    let text = "static const char *p = \"x\"; int main(void) { return p[0] != 'x'; }\n";
    if std::fs::write(&source, text).is_err() {
        return false;
    }
    let linked = Command::new(compiler())
        .args(["-pie", "-fPIE", flag, "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .is_ok_and(|output| output.status.success());
    linked
        && Command::new(&program)
            .status()
            .is_ok_and(|status| status.success())
}
