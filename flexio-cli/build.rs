//! Links the `flexio` binary at a fixed address (not as a position-
//! independent executable) on Linux.
//!
//! Why: a PIE's loader writes every pointer in its relocated data at start
//! (`.data.rel.ro`: panic locations, vtables, string tables — about 30
//! pages here), and on this VM, whose freed memory goes back to the host,
//! each of those copy-on-write faults is costly: `flexio copy` of a 4 KiB
//! file took 1.14× `cp`'s wall time as a PIE and 0.96–0.98× linked at a
//! fixed address (400 interleaved rounds each, tmpfs and ext4; issue 12's
//! start-up target is ≤ 1.0×). The price is that the executable's own code
//! and data are not randomized (its libraries, stack, heap and mappings
//! still are); set `FLEXIO_PIE=1` when building to keep a PIE.

fn main() {
    println!("cargo:rerun-if-env-changed=FLEXIO_PIE");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    if linux && std::env::var_os("FLEXIO_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
