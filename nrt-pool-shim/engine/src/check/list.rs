//! Which checks a launch makes: each check by name, and the check lists `--check=LIST`,
//! `check=` and `GPSIMD_OPEN_CHECK` take.

use std::fmt;

/// One check, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Check {
    Init,
    Race,
    Memory,
    Rules,
    Cores,
    /// The launch again on the other backend's cores, compared (D93).
    Parity,
    /// The launch again right after itself, its cores' heaps filled otherwise, compared:
    /// output that depends on what an earlier launch left (D98).
    Leftovers,
}

impl Check {
    pub const ALL: [Check; 7] = [
        Check::Init,
        Check::Race,
        Check::Memory,
        Check::Rules,
        Check::Cores,
        Check::Parity,
        Check::Leftovers,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Check::Init => "init",
            Check::Race => "race",
            Check::Memory => "memory",
            Check::Rules => "rules",
            Check::Cores => "cores",
            Check::Parity => "parity",
            Check::Leftovers => "leftovers",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The checks a launch makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checks(u8);

impl Checks {
    pub const NONE: Checks = Checks(0);
    /// What `--check` without a list makes: init, race, memory and rules (`cores`, which
    /// runs the launch again on another core count, `parity`, which runs it again on the
    /// other backend's cores, and `leftovers`, which runs it again after itself, only when
    /// named or with `all`).
    pub const DEFAULT: Checks = Checks(0b0001111);
    pub const ALL: Checks = Checks(0b1111111);

    fn bit(c: Check) -> u8 {
        1 << Check::ALL.iter().position(|&x| x == c).expect("listed")
    }

    pub fn with(self, c: Check) -> Checks {
        Checks(self.0 | Checks::bit(c))
    }

    pub fn has(self, c: Check) -> bool {
        self.0 & Checks::bit(c) != 0
    }

    /// These checks but `c`.
    pub fn without(self, c: Check) -> Checks {
        Checks(self.0 & !Checks::bit(c))
    }

    pub fn any(self) -> bool {
        self.0 != 0
    }

    /// The checks on, by name.
    pub fn names(self) -> Vec<&'static str> {
        Check::ALL
            .iter()
            .filter(|&&c| self.has(c))
            .map(|c| c.name())
            .collect()
    }

    /// A check list as `--check=LIST` and `GPSIMD_OPEN_CHECK` take it: names separated by
    /// commas (init, race, memory, rules, cores, parity, leftovers), `all`, or empty / `1` /
    /// `default` for
    /// [`Checks::DEFAULT`]; `0` or `none` for no checks.
    pub fn parse(list: &str) -> Result<Checks, String> {
        let list = list.trim();
        match list {
            "" | "1" | "default" | "on" | "true" => return Ok(Checks::DEFAULT),
            "0" | "none" | "off" | "false" => return Ok(Checks::NONE),
            "all" => return Ok(Checks::ALL),
            _ => {}
        }
        let mut checks = Checks::NONE;
        for name in list.split(',').map(str::trim) {
            match Check::ALL.iter().find(|c| c.name() == name) {
                Some(&c) => checks = checks.with(c),
                None if name == "all" => checks = Checks::ALL,
                None => {
                    return Err(format!(
                        "unknown check '{name}': the checks are init, race, memory, rules, \
                         cores, parity and leftovers (or all)"
                    ))
                }
            }
        }
        Ok(checks)
    }

    /// What the checks on cannot see on a backend that does (`sees_reads`) or does not see
    /// every read: said in every report, never passed over in silence. With each, whether
    /// it is a kind of problem these cores cannot see at all (not only a limit of reach).
    pub fn limits(self, sees_reads: bool) -> Vec<(Check, bool, &'static str)> {
        let mut said = Vec::new();
        if self.has(Check::Memory) {
            said.push((
                Check::Memory,
                false,
                "memory: a store past a heap block's end is seen in the 32 bytes after it \
                 (its red zone), when the block is freed or the kernel returns; further out, \
                 or storing the zone's own byte 0xFD, it is not",
            ));
        }
        if self.has(Check::Race) && sees_reads {
            said.push((
                Check::Race,
                false,
                "race: every load and store of the cores is seen; the source line given for \
                 a read or a write is the first instruction that read or wrote its 4 KiB page",
            ));
        } else if self.has(Check::Race) {
            said.push((
                Check::Race,
                true,
                "race: host cores run native code and do not see reads of elements another \
                 core writes (such a read shows only where its value changes the output, an \
                 init finding); Xtensa cores see every read: check the Pool image beside the \
                 library (--isa xtensa, isa=\"xtensa\")",
            ));
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_lists_parse_and_name_what_is_unknown() {
        assert_eq!(Checks::parse(""), Ok(Checks::DEFAULT));
        assert_eq!(Checks::parse("1"), Ok(Checks::DEFAULT));
        assert_eq!(Checks::parse("0"), Ok(Checks::NONE));
        assert_eq!(Checks::parse("all"), Ok(Checks::ALL));
        let c = Checks::parse("race, cores").unwrap();
        assert!(c.has(Check::Race) && c.has(Check::Cores) && !c.has(Check::Init));
        assert_eq!(c.names(), ["race", "cores"]);
        assert!(!Checks::DEFAULT.has(Check::Cores));
        let e = Checks::parse("init,raec").unwrap_err();
        assert!(e.contains("unknown check 'raec'"), "{e}");
        assert_eq!(Checks::DEFAULT.limits(false).len(), 2);
        assert!(Checks::DEFAULT.limits(false)[1].2.contains("--isa xtensa"));
        assert!(
            Checks::DEFAULT.limits(false)[1].1,
            "reads are unseen on host cores"
        );
        assert!(Checks::DEFAULT.limits(true)[1]
            .2
            .contains("every load and store"));
        assert!(Checks::parse("init").unwrap().limits(true).is_empty());
    }

    #[test]
    fn parity_is_in_all_but_not_in_the_default() {
        assert!(Checks::ALL.has(Check::Parity) && !Checks::DEFAULT.has(Check::Parity));
        assert_eq!(Checks::parse("parity").unwrap().names(), ["parity"]);
        let c = Checks::parse("init,parity").unwrap().without(Check::Parity);
        assert_eq!(c.names(), ["init"]);
        assert!(!Checks::parse("parity")
            .unwrap()
            .without(Check::Parity)
            .any());
    }
}
