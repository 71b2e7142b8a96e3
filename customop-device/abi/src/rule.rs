//! Vendor rules and fatal errors: a broken invariant ends the kernel, naming the rule, as
//! the vendor's `_Assert("file:line expr")` does. `fatal` panics; the device runtime's panic
//! handler passes the message to the platform's fault hook (the emulator reports it as a
//! device fault) and then the kernel's core stops. Host programs (the engine) use the
//! `try_` forms of the descriptor checks and never reach `fatal`.

use core::fmt;

/// Where a rule comes from (the vendor header and line the message cites).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub site: &'static str,
    pub expr: &'static str,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.site, self.expr)
    }
}

/// Ends the kernel: "customop: fatal: <site> <expr>".
#[cold]
#[track_caller]
pub fn fatal(rule: Rule) -> ! {
    panic!("customop: fatal: {rule}")
}

/// Ends the kernel with a message that carries values: "customop: fatal: <site>: <what>".
#[cold]
#[track_caller]
pub fn fatal_with(site: &'static str, what: fmt::Arguments<'_>) -> ! {
    panic!("customop: fatal: {site}: {what}")
}

/// `assert!` for a vendor rule.
#[track_caller]
pub fn require(cond: bool, rule: Rule) {
    if !cond {
        fatal(rule)
    }
}

/// A [`Rule`] from its vendor site and condition text.
#[macro_export]
macro_rules! rule {
    ($site:literal, $expr:literal) => {
        $crate::rule::Rule {
            site: $site,
            expr: $expr,
        }
    };
}
