//! Dollar amounts the user writes (caps) and the atomic amounts a payment signs.
//!
//! Caps are written in dollars ("0.05") and kept in micro-dollars. A payment signs an
//! amount in its asset's atomic units; every allowed asset is a dollar stablecoin, so with
//! the asset's decimals the two compare exactly: the signed amount is turned into
//! micro-dollars rounding up, never down, so a cap is never passed by rounding.

use std::fmt;
use std::str::FromStr;

/// An amount of dollars, in millionths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dollars(u64);

impl Dollars {
    /// From micro-dollars.
    pub const fn from_micros(micros: u64) -> Dollars {
        Dollars(micros)
    }

    /// Its micro-dollars.
    pub const fn micros(self) -> u64 {
        self.0
    }

    /// What `atomic` units of a token with `decimals` are worth, rounded up to the
    /// micro-dollar; `None` past u64 micro-dollars.
    pub fn of_atomic(atomic: u128, decimals: u8) -> Option<Dollars> {
        let micros = if decimals >= 6 {
            let unit = 10u128.checked_pow(u32::from(decimals - 6))?;
            atomic.div_ceil(unit)
        } else {
            atomic.checked_mul(10u128.checked_pow(u32::from(6 - decimals))?)?
        };
        u64::try_from(micros).ok().map(Dollars)
    }

    /// The most atomic units of a token with `decimals` this is worth (rounded down, so an
    /// amount made from a cap never passes it).
    pub fn to_atomic(self, decimals: u8) -> u128 {
        let micros = u128::from(self.0);
        if decimals >= 6 {
            micros.saturating_mul(10u128.saturating_pow(u32::from(decimals - 6)))
        } else {
            micros / 10u128.saturating_pow(u32::from(6 - decimals))
        }
    }
}

impl FromStr for Dollars {
    type Err = String;

    /// `"1"`, `"0.05"`, `"$0.002"`: at most six decimals.
    fn from_str(text: &str) -> Result<Dollars, String> {
        let trimmed = text.trim().trim_start_matches('$');
        let (whole, fraction) = trimmed.split_once('.').unwrap_or((trimmed, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
            return Err(format!("`{text}` is not an amount of dollars (write it like \"0.05\")"));
        }
        if fraction.len() > 6 {
            return Err(format!("`{text}` has more than 6 decimals"));
        }
        let whole: u64 =
            if whole.is_empty() { 0 } else { whole.parse().map_err(|_| format!("`{text}` is too large"))? };
        let fraction: u64 = format!("{fraction:0<6}").parse().map_err(|_| format!("`{text}` is not an amount"))?;
        whole
            .checked_mul(1_000_000)
            .and_then(|m| m.checked_add(fraction))
            .map(Dollars)
            .ok_or_else(|| format!("`{text}` is too large"))
    }
}

impl fmt::Display for Dollars {
    /// `$0.002`, `$1.50`, `$0.000001`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut fraction = format!("{:06}", self.0 % 1_000_000);
        while fraction.len() > 2 && fraction.ends_with('0') {
            fraction.pop();
        }
        write!(f, "${}.{fraction}", self.0 / 1_000_000)
    }
}

/// `atomic` units of a token with `decimals`, as a decimal number ("0.002").
pub fn format_atomic(atomic: u128, decimals: u8) -> String {
    let text = atomic.to_string();
    let decimals = usize::from(decimals);
    if decimals == 0 {
        return text;
    }
    let padded = format!("{text:0>width$}", width = decimals + 1);
    let (whole, fraction) = padded.split_at(padded.len() - decimals);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() { whole.to_string() } else { format!("{whole}.{fraction}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cap_in_atomic_units_never_passes_it() {
        let cap = "1.5".parse::<Dollars>().unwrap();
        assert_eq!(cap.to_atomic(6), 1_500_000);
        assert_eq!(cap.to_atomic(18), 1_500_000_000_000_000_000);
        assert_eq!(Dollars::from_micros(1_999).to_atomic(3), 1, "rounded down");
        for decimals in [2, 6, 18] {
            assert!(Dollars::of_atomic(cap.to_atomic(decimals), decimals).unwrap() <= cap);
        }
    }

    #[test]
    fn dollars_parse_exactly() {
        assert_eq!("0.05".parse::<Dollars>().unwrap().micros(), 50_000);
        assert_eq!("$1".parse::<Dollars>().unwrap().micros(), 1_000_000);
        assert_eq!(".5".parse::<Dollars>().unwrap().micros(), 500_000);
        assert_eq!("0.000001".parse::<Dollars>().unwrap().micros(), 1);
        for bad in ["", "-1", "1e3", "0.0000001", "1.2.3", "abc", "."] {
            assert!(bad.parse::<Dollars>().is_err(), "{bad}");
        }
        assert_eq!(Dollars::from_micros(2_000).to_string(), "$0.002");
        assert_eq!(Dollars::from_micros(1_500_000).to_string(), "$1.50");
    }

    #[test]
    fn atomic_amounts_round_up_to_the_micro_dollar() {
        assert_eq!(Dollars::of_atomic(2_000, 6), Some(Dollars::from_micros(2_000)));
        // 18 decimals: one wei more than a micro-dollar counts as two.
        assert_eq!(Dollars::of_atomic(1_000_000_000_001, 18), Some(Dollars::from_micros(2)));
        assert_eq!(Dollars::of_atomic(5, 2), Some(Dollars::from_micros(50_000)));
        assert_eq!(Dollars::of_atomic(u128::MAX, 6), None);
        assert_eq!(format_atomic(2_000, 6), "0.002");
        assert_eq!(format_atomic(1_000_000, 6), "1");
        assert_eq!(format_atomic(5, 0), "5");
    }
}
