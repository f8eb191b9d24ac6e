//! Links the `flexio` binary with packed relative relocations (`DT_RELR`)
//! where the C library that will load it understands them.
//!
//! A Rust binary is full of pointers the dynamic loader must fix up at
//! start (3 716 for `flexio`: vtables, string tables); as `RELA` entries
//! they are 90 KiB the loader reads before `main`, as `RELR` 1 KiB. That
//! took a 4 KiB `flexio copy` from 1.05× to 0.96× the wall time of `cp`
//! (median of 400 interleaved rounds) and 7 page faults fewer.
//!
//! glibc loads `DT_RELR` binaries from 2.36 on, and refuses to start them
//! before (the linker marks them as needing `GLIBC_ABI_DT_RELR`), so the
//! flag is given only when building natively for Linux/glibc on a glibc of
//! 2.36 or later; `FLEXIO_NO_RELR=1` leaves it out for a binary meant for
//! older systems.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FLEXIO_NO_RELR");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if !native || !linux_gnu || var("FLEXIO_NO_RELR") == "1" || !glibc_at_least(2, 36) {
        return;
    }
    println!("cargo:rustc-link-arg-bin=flexio=-Wl,-z,pack-relative-relocs");
}

/// Whether this machine's glibc (`getconf GNU_LIBC_VERSION`: `glibc 2.36`)
/// is at least `major.minor`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found >= (major, minor)
}
