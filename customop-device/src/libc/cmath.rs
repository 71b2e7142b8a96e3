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

/// Charges libm's reductions of a float `x` by pi/2 where `x` takes them, as libm's
/// sinf, cosf, tanf and sincosf decide (D129, D132): `rem_pio2f` past 9*pi/4 (smaller
/// arguments are reduced inline), and below it the large reduction (`rem_pio2_large`,
/// about 860 bytes of a Pool core's stack) from 2^28 * pi/2; neither for infinities and
/// NaN. libm is not ours to change, so its conditions are checked here, before the call.
fn charge_reductions_f32(x: f32) {
    let ix = x.to_bits() & 0x7fff_ffff;
    if (0x40e2_31d6..0x7f80_0000).contains(&ix) {
        crate::runtime::stack::charged_path(customop_abi::stack::MEDIUM_REDUCTION);
    }
    if (0x4dc9_0fdb..0x7f80_0000).contains(&ix) {
        crate::runtime::stack::charged_path(customop_abi::stack::LARGE_REDUCTION);
    }
}

/// As [`charge_reductions_f32`] for a double, as sin, cos, tan and sincos decide:
/// `rem_pio2` past pi/4, the large reduction from 2^20 * pi/2.
fn charge_reductions_f64(x: f64) {
    let high = (x.to_bits() >> 32) as u32 & 0x7fff_ffff;
    if (0x3fe9_21fc..0x7ff0_0000).contains(&high) {
        crate::runtime::stack::charged_path(customop_abi::stack::MEDIUM_REDUCTION);
    }
    if (0x4139_21fb..0x7ff0_0000).contains(&high) {
        crate::runtime::stack::charged_path(customop_abi::stack::LARGE_REDUCTION);
    }
}

/// The trigonometric functions: as `unary!`, with libm's reductions charged when taken.
macro_rules! reducing {
    ($($name:ident: $t:ty, $charge:ident),* $(,)?) => {$(
        #[no_mangle]
        pub extern "C" fn $name(x: $t) -> $t {
            $charge(x);
            libm::$name(x)
        }
    )*};
}

reducing!(
    sinf: f32, charge_reductions_f32,
    cosf: f32, charge_reductions_f32,
    tanf: f32, charge_reductions_f32,
    sin: f64, charge_reductions_f64,
    cos: f64, charge_reductions_f64,
    tan: f64, charge_reductions_f64,
);

unary!(
    asinf: f32, acosf: f32, atanf: f32,
    sinhf: f32, coshf: f32, tanhf: f32, expf: f32, exp2f: f32, expm1f: f32,
    logf: f32, log2f: f32, log10f: f32, log1pf: f32, sqrtf: f32, cbrtf: f32,
    fabsf: f32, ceilf: f32, floorf: f32, roundf: f32, truncf: f32, erff: f32,
    asin: f64, acos: f64, atan: f64,
    sinh: f64, cosh: f64, tanh: f64, exp: f64, exp2: f64, expm1: f64,
    log: f64, log2: f64, log10: f64, log1p: f64, sqrt: f64, cbrt: f64,
    fabs: f64, ceil: f64, floor: f64, round: f64, trunc: f64, erf: f64,
);

binary!(
    powf: f32, atan2f: f32, fmodf: f32, fmaxf: f32, fminf: f32, hypotf: f32, copysignf: f32,
    pow: f64, atan2: f64, fmod: f64, fmax: f64, fmin: f64, hypot: f64, copysign: f64,
);

// C99's remaining functions, for <cmath> (D72).
unary!(
    acoshf: f32, asinhf: f32, atanhf: f32, erfcf: f32, lgammaf: f32, tgammaf: f32, rintf: f32,
    acosh: f64, asinh: f64, atanh: f64, erfc: f64, lgamma: f64, tgamma: f64, rint: f64,
);

binary!(
    remainderf: f32, nextafterf: f32, fdimf: f32,
    remainder: f64, nextafter: f64, fdim: f64,
);

/// C names whose libm functions take other arguments than one or two floats.
macro_rules! forward {
    ($($name:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name($($a: $t),*) -> $r {
            libm::$name($($a),*)
        }
    )*};
}

forward! {
    fmaf(x: f32, y: f32, z: f32) -> f32;
    fma(x: f64, y: f64, z: f64) -> f64;
    ilogbf(x: f32) -> i32;
    ilogb(x: f64) -> i32;
    scalbnf(x: f32, n: i32) -> f32;
    scalbn(x: f64, n: i32) -> f64;
    ldexpf(x: f32, n: i32) -> f32;
    ldexp(x: f64, n: i32) -> f64;
}

/// `nearbyint`: `rint` without the inexact flag, which nothing on a core reads.
#[no_mangle]
pub extern "C" fn nearbyintf(x: f32) -> f32 {
    libm::rintf(x)
}

#[no_mangle]
pub extern "C" fn nearbyint(x: f64) -> f64 {
    libm::rint(x)
}

/// `logb`: the exponent as a float, with C's special cases (-inf for zero, inf for an
/// infinity, NaN for NaN).
fn logb_of(x: f64, ilogb: i32) -> f64 {
    if x.is_nan() {
        x
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x.is_infinite() {
        f64::INFINITY
    } else {
        f64::from(ilogb)
    }
}

#[no_mangle]
pub extern "C" fn logbf(x: f32) -> f32 {
    logb_of(x.into(), libm::ilogbf(x)) as f32
}

#[no_mangle]
pub extern "C" fn logb(x: f64) -> f64 {
    logb_of(x, libm::ilogb(x))
}

/// `scalbln`: a long exponent beyond int's range over- or underflows as the clamped one.
#[no_mangle]
pub extern "C" fn scalblnf(x: f32, n: core::ffi::c_long) -> f32 {
    libm::scalbnf(x, clamp_exponent(n))
}

#[no_mangle]
pub extern "C" fn scalbln(x: f64, n: core::ffi::c_long) -> f64 {
    libm::scalbn(x, clamp_exponent(n))
}

// (`long` is 32-bit on the device, where the conversion is the identity; 64-bit on hosts.)
#[allow(clippy::useless_conversion)]
fn clamp_exponent(n: core::ffi::c_long) -> i32 {
    i32::try_from(n).unwrap_or(if n < 0 { i32::MIN } else { i32::MAX })
}

/// The integer C's `lrint`/`lround` family gives for `r` (already rounded): NaN and values
/// the type cannot hold give the type's minimum, as x86's conversion does (C leaves them
/// unspecified).
fn to_integer<T: TryFrom<i64> + Copy>(r: f64, min: T) -> T {
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if !(-TWO_POW_63..TWO_POW_63).contains(&r) {
        return min;
    }
    T::try_from(r as i64).unwrap_or(min)
}

macro_rules! rounding_to_integer {
    ($($name:ident($t:ty) -> $int:ty = $round:path;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name(x: $t) -> $int {
            to_integer(f64::from($round(x)), <$int>::MIN)
        }
    )*};
}

rounding_to_integer! {
    lrintf(f32) -> core::ffi::c_long = libm::rintf;
    lrint(f64) -> core::ffi::c_long = libm::rint;
    llrintf(f32) -> i64 = libm::rintf;
    llrint(f64) -> i64 = libm::rint;
    lroundf(f32) -> core::ffi::c_long = libm::roundf;
    lround(f64) -> core::ffi::c_long = libm::round;
    llroundf(f32) -> i64 = libm::roundf;
    llround(f64) -> i64 = libm::round;
}

/// `nan(tag)`: the default quiet NaN (the tag's payload is not read).
#[no_mangle]
pub extern "C" fn nanf(_tag: *const core::ffi::c_char) -> f32 {
    f32::NAN
}

#[no_mangle]
pub extern "C" fn nan(_tag: *const core::ffi::c_char) -> f64 {
    f64::NAN
}

/// `frexp`, `modf` and `remquo` write a second result through a pointer.
macro_rules! with_out_pointer {
    ($($name:ident($($a:ident: $t:ty),*; $out:ident: *mut $o:ty) -> $r:ty;)*) => {$(
        /// # Safety
        /// The out pointer is valid for a write (the C contract).
        #[no_mangle]
        pub unsafe extern "C" fn $name($($a: $t,)* $out: *mut $o) -> $r {
            let (value, second) = libm::$name($($a),*);
            // SAFETY: the caller's valid out pointer.
            unsafe { $out.write(second) };
            value
        }
    )*};
}

with_out_pointer! {
    frexpf(x: f32; e: *mut i32) -> f32;
    frexp(x: f64; e: *mut i32) -> f64;
    modff(x: f32; ip: *mut f32) -> f32;
    modf(x: f64; ip: *mut f64) -> f64;
    remquof(x: f32, y: f32; q: *mut i32) -> f32;
    remquo(x: f64, y: f64; q: *mut i32) -> f64;
}

/// `sincosf`: GCC turns `sinf(x)` and `cosf(x)` of one argument into this GNU call, so it
/// must come from the same code as the two (or a host build would reach glibc's).
///
/// # Safety
/// `s` and `c` are valid for writes (the C contract).
#[no_mangle]
pub unsafe extern "C" fn sincosf(x: f32, s: *mut f32, c: *mut f32) {
    charge_reductions_f32(x);
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
    charge_reductions_f64(x);
    let (sv, cv) = libm::sincos(x);
    // SAFETY: the caller's valid out pointers.
    unsafe {
        s.write(sv);
        c.write(cv);
    }
}

/// The `long double` functions of device builds: the Xtensa ABI's long double is IEEE
/// double (8 bytes), so each is its double function. (Host builds keep the C library's:
/// x86's long double is wider.)
#[cfg(device_libc)]
mod long_double {
    macro_rules! same_as_double {
        ($($l:ident = $d:ident($($a:ident: $t:ty),*) -> $r:ty;)*) => {$(
            #[no_mangle]
            pub extern "C" fn $l($($a: $t),*) -> $r {
                super::$d($($a),*)
            }
        )*};
    }

    same_as_double! {
        acosl = acos(x: f64) -> f64; asinl = asin(x: f64) -> f64; atanl = atan(x: f64) -> f64;
        cosl = cos(x: f64) -> f64; sinl = sin(x: f64) -> f64; tanl = tan(x: f64) -> f64;
        acoshl = acosh(x: f64) -> f64; asinhl = asinh(x: f64) -> f64;
        atanhl = atanh(x: f64) -> f64; coshl = cosh(x: f64) -> f64;
        sinhl = sinh(x: f64) -> f64; tanhl = tanh(x: f64) -> f64; expl = exp(x: f64) -> f64;
        exp2l = exp2(x: f64) -> f64; expm1l = expm1(x: f64) -> f64; logl = log(x: f64) -> f64;
        log10l = log10(x: f64) -> f64; log1pl = log1p(x: f64) -> f64;
        log2l = log2(x: f64) -> f64; logbl = logb(x: f64) -> f64; cbrtl = cbrt(x: f64) -> f64;
        sqrtl = sqrt(x: f64) -> f64; erfl = erf(x: f64) -> f64; erfcl = erfc(x: f64) -> f64;
        lgammal = lgamma(x: f64) -> f64; tgammal = tgamma(x: f64) -> f64;
        ceill = ceil(x: f64) -> f64; floorl = floor(x: f64) -> f64;
        nearbyintl = nearbyint(x: f64) -> f64; rintl = rint(x: f64) -> f64;
        roundl = round(x: f64) -> f64; truncl = trunc(x: f64) -> f64;
        fabsl = fabs(x: f64) -> f64;
        atan2l = atan2(x: f64, y: f64) -> f64; fmodl = fmod(x: f64, y: f64) -> f64;
        powl = pow(x: f64, y: f64) -> f64; hypotl = hypot(x: f64, y: f64) -> f64;
        remainderl = remainder(x: f64, y: f64) -> f64;
        copysignl = copysign(x: f64, y: f64) -> f64;
        nextafterl = nextafter(x: f64, y: f64) -> f64; fdiml = fdim(x: f64, y: f64) -> f64;
        fmaxl = fmax(x: f64, y: f64) -> f64; fminl = fmin(x: f64, y: f64) -> f64;
        fmal = fma(x: f64, y: f64, z: f64) -> f64;
        ldexpl = ldexp(x: f64, n: i32) -> f64; scalbnl = scalbn(x: f64, n: i32) -> f64;
        scalblnl = scalbln(x: f64, n: core::ffi::c_long) -> f64;
        ilogbl = ilogb(x: f64) -> i32; lrintl = lrint(x: f64) -> core::ffi::c_long;
        lroundl = lround(x: f64) -> core::ffi::c_long; llrintl = llrint(x: f64) -> i64;
        llroundl = llround(x: f64) -> i64; nanl = nan(tag: *const core::ffi::c_char) -> f64;
        nexttowardl = nextafter(x: f64, y: f64) -> f64;
    }

    /// # Safety
    /// `e` is valid for a write.
    #[no_mangle]
    pub unsafe extern "C" fn frexpl(x: f64, e: *mut i32) -> f64 {
        // SAFETY: the caller's contract, passed on.
        unsafe { super::frexp(x, e) }
    }

    /// # Safety
    /// `ip` is valid for a write.
    #[no_mangle]
    pub unsafe extern "C" fn modfl(x: f64, ip: *mut f64) -> f64 {
        // SAFETY: the caller's contract, passed on.
        unsafe { super::modf(x, ip) }
    }

    /// # Safety
    /// `q` is valid for a write.
    #[no_mangle]
    pub unsafe extern "C" fn remquol(x: f64, y: f64, q: *mut i32) -> f64 {
        // SAFETY: the caller's contract, passed on.
        unsafe { super::remquo(x, y, q) }
    }

    /// `nexttoward(double, long double)`: long double is double here.
    #[no_mangle]
    pub extern "C" fn nexttoward(x: f64, y: f64) -> f64 {
        super::nextafter(x, y)
    }

    /// `nexttowardf(float, long double)`: one float step toward the wider `y` (`y` itself
    /// when equal, NaN when either is).
    #[no_mangle]
    pub extern "C" fn nexttowardf(x: f32, y: f64) -> f32 {
        let wide = f64::from(x);
        if x.is_nan() || y.is_nan() {
            f32::NAN
        } else if wide == y {
            y as f32
        } else if y > wide {
            libm::nextafterf(x, f32::INFINITY)
        } else {
            libm::nextafterf(x, f32::NEG_INFINITY)
        }
    }
}
