//! The Xtensa immediate encoder of the relocator (`relocate_op`): writes a 16-bit
//! immediate into the CONST16 at a relocation site, either a 24-bit narrow instruction or
//! slot 0 of a FLIX bundle. Formats, signatures and bit scatters are those of
//! `flix-const16-scatter.md` §2-§3; words are little-endian u32s of the bundle.

/// Why an immediate could not be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The first word matches no instruction length rule ("Unknown instruction format").
    UnknownFormat(u32),
    /// A bundle whose format has no known CONST16 field scatter.
    NoImmediateField,
}

/// Bytes the instruction at a site occupies, judged from its first word.
pub fn instruction_len(w0: u32) -> Result<usize, EncodeError> {
    if w0 & 0x8 == 0 {
        Ok(3)
    } else if w0 & 0x100_000F == 0xF || w0 & 0xF == 0xE {
        Ok(16)
    } else if w0 & 0x300_000F == 0x100_000F {
        Ok(8)
    } else {
        Err(EncodeError::UnknownFormat(w0))
    }
}

/// Bytes the encoder reads and writes at a site (a narrow instruction is handled as the
/// whole little-endian word that starts it; its fourth byte is kept).
pub fn site_len(w0: u32) -> Result<usize, EncodeError> {
    instruction_len(w0).map(|n| n.max(4))
}

/// One ORed-in term: `(imm << s) & mask` for s >= 0, `(imm >> -s) & mask` otherwise.
type Term = (i8, u32);

/// The edit of one bundle word: keep mask, then terms.
struct WordEdit {
    word: usize,
    keep: u32,
    terms: &'static [Term],
}

/// A FLIX format with a CONST16 in slot 0.
struct Format {
    name: &'static str,
    edits: &'static [WordEdit],
}

const fn e(word: usize, keep: u32, terms: &'static [Term]) -> WordEdit {
    WordEdit { word, keep, terms }
}

const INSN0_26: WordEdit = e(0, 0xFBFF_00FF, &[(8, 0xFF00), (18, 0x0400_0000)]);
const INSN0_8: WordEdit = e(0, 0xFFFF_00FF, &[(8, 0xFF00)]);

const F0: Format = Format {
    name: "F0",
    edits: &[
        INSN0_26,
        e(1, 0xDFFF_FFFF, &[(19, 0x2000_0000)]),
        e(
            2,
            0xFFA0_FFFF,
            &[
                (3, 0x10000),
                (6, 0x60000),
                (5, 0x80000),
                (11, 0x100000),
                (7, 0x400000),
            ],
        ),
    ],
};
const F3: Format = Format {
    name: "F3",
    edits: &[
        INSN0_26,
        e(1, 0xDFFF_FFFF, &[(19, 0x2000_0000)]),
        e(
            2,
            0x3FF9_BFFF,
            &[(5, 0x4000), (6, 0x60000), (17, 0xC000_0000)],
        ),
        e(3, 0xFFFF_FFFE, &[(-15, 0x1)]),
    ],
};
const F1: Format = Format {
    name: "F1",
    edits: &[
        INSN0_26,
        e(1, 0xDFFF_FFF7, &[(-6, 0x8), (19, 0x2000_0000)]),
        e(2, 0xFFF0_7FFF, &[(4, 0xF8000)]),
    ],
};
const F2: Format = Format {
    name: "F2",
    edits: &[
        INSN0_8,
        e(1, 0x9FFF_FFFF, &[(16, 0x6000_0000)]),
        e(
            2,
            0xFFE0_7FFF,
            &[(6, 0x78000), (4, 0x80000), (12, 0x100000)],
        ),
    ],
};
const F6: Format = Format {
    name: "F6",
    edits: &[
        INSN0_8,
        e(1, 0x9FFF_FFFF, &[(16, 0x6000_0000)]),
        e(2, 0xFFE8_7F7F, &[(-8, 0x80), (6, 0x78000), (12, 0x100000)]),
    ],
};
const F7: Format = Format {
    name: "F7",
    edits: &[
        INSN0_26,
        e(1, 0xDFFF_FFF7, &[(-6, 0x8), (19, 0x2000_0000)]),
        e(2, 0xFFF0_7FFF, &[(2, 0x18000), (6, 0x60000), (4, 0x80000)]),
    ],
};
const N2: Format = Format {
    name: "N2",
    edits: &[
        INSN0_26,
        e(
            1,
            0xFFFF_FE81,
            &[(-10, 0x6), (-6, 0x18), (-8, 0x60), (-7, 0x100)],
        ),
    ],
};
const N1: Format = Format {
    name: "N1",
    edits: &[
        e(0, 0xFFFE_00FF, &[(8, 0x1FF00)]),
        e(1, 0xFFFF_F199, &[(-8, 0x6), (-6, 0x60), (-4, 0xE00)]),
    ],
};

/// The format of a FLIX bundle by its signature word; None for formats whose CONST16
/// field is not known (F11, F4, N0).
fn flix_format(words: &[u32]) -> Option<&'static Format> {
    if words.len() == 4 {
        let s = words[3];
        if words[0] & 0xF == 0xE {
            Some(&F3)
        } else if s & 0x410C_0000 == 0x4100_0000 {
            Some(&F0)
        } else if s & 0x410E_0000 == 0x4104_0000 {
            Some(&F1)
        } else if s & 0x410E_8000 == 0x4108_0000 {
            Some(&F2)
        } else if s & 0x410E_8000 == 0x4108_8000 {
            Some(&F6)
        } else if s & 0x410E_0000 == 0x4106_0000 {
            Some(&F7)
        } else {
            None
        }
    } else {
        match words[1] & 0x4200_0000 {
            0x4200_0000 => Some(&N2),
            0x4000_0000 => Some(&N1),
            _ => None,
        }
    }
}

fn term(imm: u32, (shift, mask): Term) -> u32 {
    let v = if shift >= 0 {
        imm << shift
    } else {
        imm >> -shift
    };
    v & mask
}

/// Places `imm` into the CONST16 at the start of `site` (at least `site_len` bytes).
/// Returns the name of the format that was edited.
pub fn relocate_op(site: &mut [u8], imm: u16) -> Result<&'static str, EncodeError> {
    let imm = u32::from(imm);
    let w0 = u32::from_le_bytes(site[..4].try_into().expect("4-byte site"));
    let len = instruction_len(w0)?;
    if len == 3 {
        let w = (w0 & 0xFF00_00F7) | (imm << 8);
        site[..4].copy_from_slice(&w.to_le_bytes());
        return Ok("x24");
    }
    let mut words: Vec<u32> = site[..len]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("word")))
        .collect();
    let format = flix_format(&words).ok_or(EncodeError::NoImmediateField)?;
    for edit in format.edits {
        let w = &mut words[edit.word];
        *w = edit
            .terms
            .iter()
            .fold(*w & edit.keep, |acc, &t| acc | term(imm, t));
    }
    for (chunk, w) in site[..len].chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_le_bytes());
    }
    Ok(format.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    fn words(b: &[u8]) -> Vec<u32> {
        b.chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// (format, start bundle, after imm=0x1234, after imm=0xFFFF)
    type Vector = (&'static str, &'static [u32], &'static [u32], &'static [u32]);

    /// §3.4 of flix-const16-scatter.md.
    const VECTORS: &[Vector] = &[
        (
            "F0",
            &[0xF, 0, 0, 0x41000000],
            &[0x340F, 0, 0x140000, 0x41000000],
            &[0x0400FF0F, 0x20000000, 0x005F0000, 0x41000000],
        ),
        (
            "F3",
            &[0xE, 0, 0, 0],
            &[0x340E, 0, 0x44000, 0],
            &[0x0400FF0E, 0x20000000, 0xC0064000, 1],
        ),
        (
            "F1",
            &[0xF, 0, 0, 0x41040000],
            &[0x340F, 8, 0x10000, 0x41040000],
            &[0x0400FF0F, 0x20000008, 0x000F8000, 0x41040000],
        ),
        (
            "F2",
            &[0xF, 0, 0, 0x41080000],
            &[0x340F, 0, 0x48000, 0x41080000],
            &[0xFF0F, 0x60000000, 0x001F8000, 0x41080000],
        ),
        (
            "F6",
            &[0xF, 0, 0, 0x41088000],
            &[0x340F, 0, 0x48000, 0x41088000],
            &[0xFF0F, 0x60000000, 0x00178080, 0x41088000],
        ),
        (
            "F7",
            &[0xF, 0, 0, 0x41060000],
            &[0x340F, 8, 0x40000, 0x41060000],
            &[0x0400FF0F, 0x20000008, 0x000F8000, 0x41060000],
        ),
        (
            "N2",
            &[0x0100000F, 0x42000000],
            &[0x0100340F, 0x4200000C],
            &[0x0500FF0F, 0x4200017E],
        ),
        (
            "N1",
            &[0x0100000F, 0x40000000],
            &[0x0100340F, 0x40000042],
            &[0x0101FF0F, 0x40000E66],
        ),
    ];

    #[test]
    fn published_test_vectors() {
        for (name, start, v1234, vffff) in VECTORS {
            for (imm, want) in [(0x1234u16, v1234), (0xFFFF, vffff)] {
                let mut b = bundle(start);
                assert_eq!(relocate_op(&mut b, imm), Ok(*name));
                assert_eq!(&words(&b), want, "{name} imm {imm:#x}");
            }
        }
    }

    #[test]
    fn each_format_writes_exactly_sixteen_bits_and_is_idempotent() {
        for (name, start, _, _) in VECTORS {
            let mut b = bundle(start);
            relocate_op(&mut b, 0xFFFF).unwrap();
            let set: u32 = words(&b)
                .iter()
                .zip(start.iter())
                .map(|(a, s)| (a ^ s).count_ones())
                .sum();
            assert_eq!(set, 16, "{name}");
            let mut again = b.clone();
            relocate_op(&mut again, 0).unwrap();
            assert_eq!(
                words(&again),
                start.to_vec(),
                "{name}: imm 0 clears the field"
            );
        }
    }

    #[test]
    fn narrow_const16() {
        let mut b = 0xAA00_0004u32.to_le_bytes().to_vec();
        assert_eq!(relocate_op(&mut b, 0xBEEF), Ok("x24"));
        assert_eq!(u32::from_le_bytes(b[..4].try_into().unwrap()), 0xAABE_EF04);
    }

    #[test]
    fn unknown_formats_and_fields() {
        // op0 = 8..D (x16) and op0 = F with bits 24 and 25 both set.
        for w in [0x8u32, 0xD, 0x0300_000F] {
            assert_eq!(instruction_len(w), Err(EncodeError::UnknownFormat(w)));
        }
        // F11 (insn3 bit 30 clear), F4 and N0: no known scatter.
        for start in [
            &[0xFu32, 0, 0, 0][..],
            &[0xF, 0, 0, 0x40000000],
            &[0x0100000F, 0],
        ] {
            let mut b = bundle(start);
            assert_eq!(relocate_op(&mut b, 1), Err(EncodeError::NoImmediateField));
            assert_eq!(words(&b), start.to_vec(), "untouched on failure");
        }
    }
}
