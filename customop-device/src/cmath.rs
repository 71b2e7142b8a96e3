//! math.h: the C names forward to the `libm` crate (a port of musl's libm), in every build
//! of the archive. A host op library links the archive before the system libm, so its math
//! calls run the same code as the device build's and give the same bytes
//! (docs/decisions.md D59; glibc's results differ from these in the last place for about
//! one input in ten for expf/logf/powf).

macro_rules! unary {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[no_mangle]
        pub extern "C" fn $name(x: $t) -> $t {
            libm::$name(x)
        }
    )*};
}

macro_rules! binary {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        #[no_mangle]
        pub extern "C" fn $name(x: $t, y: $t) -> $t {
            libm::$name(x, y)
        }
    )*};
}

unary!(
    sinf: f32, cosf: f32, tanf: f32, asinf: f32, acosf: f32, atanf: f32,
    sinhf: f32, coshf: f32, tanhf: f32, expf: f32, exp2f: f32, expm1f: f32,
    logf: f32, log2f: f32, log10f: f32, log1pf: f32, sqrtf: f32, cbrtf: f32,
    fabsf: f32, ceilf: f32, floorf: f32, roundf: f32, truncf: f32, erff: f32,
    sin: f64, cos: f64, tan: f64, asin: f64, acos: f64, atan: f64,
    sinh: f64, cosh: f64, tanh: f64, exp: f64, exp2: f64, expm1: f64,
    log: f64, log2: f64, log10: f64, log1p: f64, sqrt: f64, cbrt: f64,
    fabs: f64, ceil: f64, floor: f64, round: f64, trunc: f64, erf: f64,
);

binary!(
    powf: f32, atan2f: f32, fmodf: f32, fmaxf: f32, fminf: f32, hypotf: f32, copysignf: f32,
    pow: f64, atan2: f64, fmod: f64, fmax: f64, fmin: f64, hypot: f64, copysign: f64,
);

/// `sincosf`: GCC turns `sinf(x)` and `cosf(x)` of one argument into this GNU call, so it
/// must come from the same code as the two (or a host build would reach glibc's).
///
/// # Safety
/// `s` and `c` are valid for writes (the C contract).
#[no_mangle]
pub unsafe extern "C" fn sincosf(x: f32, s: *mut f32, c: *mut f32) {
    let (sv, cv) = libm::sincosf(x);
    // SAFETY: the caller's valid out pointers.
    unsafe {
        s.write(sv);
        c.write(cv);
    }
}

/// `sincos`, as [`sincosf`] for double.
///
/// # Safety
/// `s` and `c` are valid for writes (the C contract).
#[no_mangle]
pub unsafe extern "C" fn sincos(x: f64, s: *mut f64, c: *mut f64) {
    let (sv, cv) = libm::sincos(x);
    // SAFETY: the caller's valid out pointers.
    unsafe {
        s.write(sv);
        c.write(cv);
    }
}
