//! Running a kernel loop built for a wider instruction set where the CPU has it:
//! [`feature_or!`] calls the build of a function for x86-64 features after
//! `is_x86_feature_detected!` says the CPU has them, and the next choice otherwise. The builds are
//! the same plain-Rust body under `#[target_feature(enable = "avx2")]` (Rust never fuses a
//! multiply and an add, so the same IEEE-754 operations and the same bits), or code written
//! with AVX-512F intrinsics doing per element the operations of the scalar rule (tested bit for
//! bit against it).
//!
//! This is the brain's dispatch site; it knows nothing of what the functions compute.

/// `feature_or!("feature", call, otherwise)`: `call` where the CPU supports the x86-64
/// `feature`, else `otherwise` (always `otherwise` on other architectures). `call` must call a
/// function whose only precondition is that feature. `feature_or!(["a", "b"], call, otherwise)`
/// asks for every feature listed.
macro_rules! feature_or {
    ([$($feature:tt),+], $call:expr, $otherwise:expr $(,)?) => {{
        #[cfg(target_arch = "x86_64")]
        let result = if $(std::arch::is_x86_feature_detected!($feature))&&+ {
            #[expect(
                unsafe_code,
                reason = "calling a kernel loop's build for CPU features on a CPU that has them"
            )]
            // SAFETY: the call is to a build under `#[target_feature(enable = ...)]` of the
            // features listed, whose only precondition is that the CPU supports them, detected
            // just above.
            let done = unsafe { $call };
            done
        } else {
            $otherwise
        };
        #[cfg(not(target_arch = "x86_64"))]
        let result = $otherwise;
        result
    }};
    ($feature:tt, $call:expr, $otherwise:expr $(,)?) => {
        $crate::simd::feature_or!([$feature], $call, $otherwise)
    };
}

pub(crate) use feature_or;
