//! Running a kernel loop built for AVX2 where the CPU has it: [`avx2_or!`] calls the AVX2 build
//! of a function (the same plain-Rust body under `#[target_feature(enable = "avx2")]`, never
//! FMA, so the same IEEE-754 operations and the same bits) after `is_x86_feature_detected!`, and
//! the baseline build otherwise. This is the brain's one `unsafe` call site kind; it knows
//! nothing of what the functions compute.

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

pub(crate) use avx2_or;
