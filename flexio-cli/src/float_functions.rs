//! The C float functions the program calls (`exp`, `log`, `pow`... from
//! the bench's statistics and the charts), defined here from the `libm`
//! crate — rust-lang's port of musl's — so that the binary needs no
//! `libm.so`.
//!
//! Why: a small `flexio copy` is mostly process start-up, and each shared
//! library the loader maps costs an open, several maps and their page
//! faults. With this and the unwinder linked in (see `build.rs`), the
//! loader maps libc alone, and a 4 KiB copy went from 1.05× `cp`'s wall
//! time to 0.90× (issue 12). The linker takes a symbol from the program's
//! own objects before any library, so every caller in the binary — std,
//! plotters, the bench — uses these; `--as-needed` then drops `libm.so`.
//! A function added to the program later that is not here brings
//! `libm.so` back, which the test `start_up::the_binary_loads_libc_alone`
//! catches.

/// `e` raised to `x`.
#[no_mangle]
pub extern "C" fn exp(x: f64) -> f64 {
    libm::exp(x)
}

/// The natural logarithm of `x`.
#[no_mangle]
pub extern "C" fn log(x: f64) -> f64 {
    libm::log(x)
}

/// The base-10 logarithm of `x`.
#[no_mangle]
pub extern "C" fn log10(x: f64) -> f64 {
    libm::log10(x)
}

/// The base-2 logarithm of `x`.
#[no_mangle]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

/// `x` raised to `y`.
#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// `sqrt(x² + y²)` without undue overflow.
#[no_mangle]
pub extern "C" fn hypotf(x: f32, y: f32) -> f32 {
    libm::hypotf(x, y)
}

#[cfg(test)]
mod tests {
    use std::f64::consts::{E, SQRT_2};
    use std::hint::black_box;

    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= 2.0 * f64::EPSILON * want.abs()
    }

    /// Through the symbols, as std's `f64` methods reach them (the inputs
    /// hidden from the compiler, which would otherwise fold the calls).
    #[test]
    fn the_float_functions_give_the_values_of_the_c_library() {
        assert!(close(black_box(1f64).exp(), E));
        assert!(close(black_box(E).ln(), 1.0));
        assert!(close(black_box(1000f64).log10(), 3.0));
        assert_eq!(black_box(8f64).log2(), 3.0);
        assert_eq!(black_box(2f64).powf(10.0), 1024.0);
        assert!(close(black_box(2f64).powf(0.5), SQRT_2));
        assert_eq!(black_box(3f32).hypot(4.0), 5.0);
        assert!(black_box(-1f64).ln().is_nan());
        assert_eq!(black_box(0f64).ln(), f64::NEG_INFINITY);
    }
}
