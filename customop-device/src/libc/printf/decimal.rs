//! The exact decimal value of a double, for printf's `%f`, `%e` and `%g` (a small bignum:
//! the digits glibc prints, without core::fmt's tables).

/// The exact decimal value of a finite, non-negative `f64`: `0.d0 d1 d2 ... x 10^point`, the
/// digits without leading or trailing zeros (none for zero). A double has at most 767
/// significant decimal digits.
pub(super) struct Decimal {
    pub(super) d: [u8; 770],
    pub(super) n: usize,
    pub(super) point: i32,
}

/// Little-endian 32-bit limbs: 2^1024 and the 1126-bit fractions of subnormals fit.
const LIMBS: usize = 37;

impl Decimal {
    pub(super) fn of(v: f64) -> Decimal {
        let mut dec = Decimal {
            d: [0; 770],
            n: 0,
            point: 1,
        };
        let bits = v.to_bits();
        let (e, f) = (((bits >> 52) & 0x7ff) as i32, bits & ((1 << 52) - 1));
        let (mut m, mut q) = if e == 0 {
            (f, -1074)
        } else {
            (f | 1 << 52, e - 1075)
        };
        if m == 0 {
            return dec;
        }
        while m & 1 == 0 {
            m >>= 1;
            q += 1;
        }
        if q >= 0 {
            // m * 2^q: digits by repeated division by 10^9.
            let mut big = [0u32; LIMBS];
            big[0] = m as u32;
            big[1] = (m >> 32) as u32;
            shift_left(&mut big, q as usize);
            let mut chunks = [0u32; 40];
            let mut c = 0;
            while big.iter().any(|&l| l != 0) {
                chunks[c] = div_small(&mut big, 1_000_000_000);
                c += 1;
            }
            for k in (0..c).rev() {
                dec.push_chunk(chunks[k], k + 1 == c);
            }
            dec.point = dec.n as i32;
        } else {
            let k = (-q) as usize;
            let int = if k >= 64 { 0 } else { m >> k };
            let mut frac = [0u32; LIMBS];
            frac[0] = m as u32;
            frac[1] = (m >> 32) as u32;
            keep_low(&mut frac, k);
            if int != 0 {
                let (mut chunks, mut c, mut i) = ([0u32; 3], 0, int);
                while i != 0 {
                    chunks[c] = (i % 1_000_000_000) as u32;
                    i /= 1_000_000_000;
                    c += 1;
                }
                for j in (0..c).rev() {
                    dec.push_chunk(chunks[j], j + 1 == c);
                }
                dec.point = dec.n as i32;
            } else {
                dec.point = 0;
            }
            // The fraction's digits, 9 at a time: frac * 10^9, the bits above k.
            while frac.iter().any(|&l| l != 0) {
                let chunk = mul_small(&mut frac, 1_000_000_000, k);
                for j in (0..9).rev() {
                    let digit = (chunk / 10u32.pow(j)) % 10;
                    if dec.n == 0 && digit == 0 {
                        dec.point -= 1;
                    } else if dec.n < dec.d.len() {
                        dec.d[dec.n] = digit as u8;
                        dec.n += 1;
                    }
                }
            }
        }
        while dec.n > 0 && dec.d[dec.n - 1] == 0 {
            dec.n -= 1;
        }
        dec
    }

    /// Appends a base-10^9 chunk (the first without its leading zeros).
    pub(super) fn push_chunk(&mut self, chunk: u32, first: bool) {
        for j in (0..9).rev() {
            let digit = (chunk / 10u32.pow(j)) % 10;
            if !(first && self.n == 0 && digit == 0) {
                self.d[self.n] = digit as u8;
                self.n += 1;
            }
        }
    }

    pub(super) fn digit(&self, i: i64) -> u8 {
        if i >= 0 && (i as usize) < self.n {
            self.d[i as usize]
        } else {
            0
        }
    }

    /// Rounds to the first `keep` digits (ties to even, as glibc rounds the exact value);
    /// `keep` may be 0 or negative (then the value rounds to zero or to one unit at
    /// digit `keep - 1`).
    pub(super) fn round(&mut self, keep: i64) {
        if keep >= self.n as i64 {
            return;
        }
        let up = if keep < 0 {
            false
        } else {
            let k = keep as usize;
            let rest_nonzero = self.d[k + 1..self.n].iter().any(|&d| d != 0);
            match self.d[k] {
                6.. => true,
                5 if rest_nonzero => true,
                5 => k > 0 && self.d[k - 1] % 2 == 1,
                _ => false,
            }
        };
        let k = keep.max(0) as usize;
        self.n = k;
        if up {
            let mut i = k;
            loop {
                if i == 0 {
                    // 9...9 rounded up: 1 followed by zeros, one place higher.
                    self.d[0] = 1;
                    self.n = 1;
                    self.point += 1;
                    break;
                }
                i -= 1;
                if self.d[i] == 9 {
                    self.d[i] = 0;
                } else {
                    self.d[i] += 1;
                    break;
                }
            }
        }
        while self.n > 0 && self.d[self.n - 1] == 0 {
            self.n -= 1;
        }
        if self.n == 0 {
            self.point = 1;
        }
    }
}

fn shift_left(big: &mut [u32; LIMBS], by: usize) {
    let (limbs, bits) = (by / 32, by % 32);
    for i in (0..LIMBS).rev() {
        let lo = i.checked_sub(limbs).map_or(0, |j| big[j]);
        let lower = i.checked_sub(limbs + 1).map_or(0, |j| big[j]);
        big[i] = if bits == 0 {
            lo
        } else {
            lo << bits | lower >> (32 - bits)
        };
    }
}

/// Clears the bits at and above `k`.
fn keep_low(big: &mut [u32; LIMBS], k: usize) {
    for (i, l) in big.iter_mut().enumerate() {
        let base = i * 32;
        if base >= k {
            *l = 0;
        } else if k - base < 32 {
            *l &= (1u32 << (k - base)) - 1;
        }
    }
}

fn div_small(big: &mut [u32; LIMBS], by: u32) -> u32 {
    let mut rem = 0u64;
    for l in big.iter_mut().rev() {
        let cur = rem << 32 | u64::from(*l);
        *l = (cur / u64::from(by)) as u32;
        rem = cur % u64::from(by);
    }
    rem as u32
}

/// `big *= by` (big < 2^k), returning the part at and above bit `k` and keeping the rest.
fn mul_small(big: &mut [u32; LIMBS], by: u32, k: usize) -> u32 {
    let mut carry = 0u64;
    for l in big.iter_mut() {
        let cur = u64::from(*l) * u64::from(by) + carry;
        *l = cur as u32;
        carry = cur >> 32;
    }
    let (i, off) = (k / 32, k % 32);
    let at = |j: usize| big.get(j).copied().unwrap_or(0);
    let high = if off == 0 {
        at(i)
    } else {
        at(i) >> off | at(i + 1) << (32 - off)
    };
    keep_low(big, k);
    high
}
