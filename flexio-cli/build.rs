//! How the `flexio` binary is linked on Linux, for its start-up time.
//!
//! A 4 KiB `flexio copy` is mostly process start-up, and `cp` is the
//! yardstick (issue 12: flexio's wall time ≤ `cp`'s). On the VM it was
//! measured on, whose freed memory goes back to the host, every page the
//! loader writes and every library it maps costs a fault, so two things
//! are linked differently from cargo's defaults:
//!
//! - **A fixed address, not a PIE.** A PIE's loader writes every pointer
//!   in its relocated data at start (`.data.rel.ro`: panic locations,
//!   vtables, string tables — about 30 pages here), each a copy-on-write
//!   fault: a 4 KiB copy took 1.11–1.16× `cp`'s wall time as a PIE and
//!   1.03–1.06× at a fixed address (400 interleaved rounds). The price is
//!   that the executable's own code and data are not randomized (its
//!   libraries, stack, heap and mappings still are). `FLEXIO_PIE=1` when
//!   building keeps a PIE.
//! - **The unwinder linked in (`libgcc_eh.a`), not loaded (`libgcc_s.so`)**,
//!   as Rust's own static builds and gcc's `-static-libgcc` do. Together
//!   with the float functions of `src/float_functions.rs` (no `libm.so`),
//!   the loader maps libc alone: 0.90× `cp` at 4 KiB and 0.93× at 1 MiB
//!   instead of 1.05× and 1.06× (300 interleaved rounds, tmpfs). Skipped
//!   where the C compiler does not know the archive (then `libgcc_s` is
//!   loaded as before, which only costs time).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FLEXIO_PIE");
    println!("cargo:rerun-if-env-changed=CC");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    let gnu = std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu");
    if linux && std::env::var_os("FLEXIO_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    if linux && gnu {
        if let Some(unwinder) = archive_known_to_the_compiler("libgcc_eh.a") {
            if let Some(directory) = unwinder.parent() {
                println!("cargo:rustc-link-search=native={}", directory.display());
            }
            println!("cargo:rustc-link-lib=static:+verbatim=libgcc_eh.a");
        }
    }
}

/// The full path of `name` as the C compiler (the linker's driver) finds
/// it, or `None` when it does not: `cc -print-file-name` echoes a bare
/// name it cannot find.
fn archive_known_to_the_compiler(name: &str) -> Option<PathBuf> {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let output = Command::new(compiler)
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(output.stdout).ok()?.trim());
    (output.status.success() && path.is_absolute() && path.is_file()).then_some(path)
}
