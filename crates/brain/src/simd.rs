//! Running a kernel loop built for a wider instruction set where the CPU has it, after
//! `is_x86_feature_detected!`:
//! - [`avx2_or!`] calls the AVX2 build of a function (the same plain-Rust body under
//!   `#[target_feature(enable = "avx2")]`, never FMA, so the same IEEE-754 operations and the
//!   same bits), and the baseline build otherwise;
//! - [`avx512f_or!`] calls an AVX-512F build (written with its intrinsics, the same IEEE-754
//!   operations per element as the scalar rule), and the next choice otherwise.
//!
//! These are the brain's dispatch sites; this module knows nothing of what the functions
//! compute.

/// `avx2_or!(avx2_call, baseline_call)`: the first call where the CPU supports AVX2, else the
/// second. The first must call a function whose only precondition is AVX2 support.
macro_rules! avx2_or {
    ($avx2:expr, $baseline:expr $(,)?) => {{
        #[cfg(target_arch = "x86_64")]
        let result = if std::arch::is_x86_feature_detected!("avx2") {
            #[expect(
                unsafe_code,
                reason = "calling a kernel loop's AVX2 build on a CPU that has AVX2"
            )]
            // SAFETY: the call is to an AVX2 build (`#[target_feature(enable = "avx2")]`) whose
            // only precondition is that the CPU supports AVX2, detected just above.
            let done = unsafe { $avx2 };
            done
        } else {
            $baseline
        };
        #[cfg(not(target_arch = "x86_64"))]
        let result = $baseline;
        result
    }};
}

/// `avx512f_or!(avx512f_call, otherwise)`: the first call where the CPU supports AVX-512F (on
/// x86-64), else the second. The first must call a function whose only precondition is
/// AVX-512F support; it is not compiled for other architectures.
macro_rules! avx512f_or {
    ($avx512f:expr, $otherwise:expr $(,)?) => {{
        #[cfg(target_arch = "x86_64")]
        let result = if std::arch::is_x86_feature_detected!("avx512f") {
            #[expect(
                unsafe_code,
                reason = "calling a kernel loop's AVX-512F build on a CPU that has AVX-512F"
            )]
            // SAFETY: the call is to an AVX-512F build (`#[target_feature(enable = "avx512f")]`)
            // whose only precondition is that the CPU supports AVX-512F, detected just above.
            let done = unsafe { $avx512f };
            done
        } else {
            $otherwise
        };
        #[cfg(not(target_arch = "x86_64"))]
        let result = $otherwise;
        result
    }};
}

pub(crate) use {avx2_or, avx512f_or};
