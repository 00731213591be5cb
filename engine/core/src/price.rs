//! Prices in USD, carried as atomic units of a 6-decimal dollar stablecoin.

use std::fmt;

/// A price in atomic units of a 6-decimal dollar stablecoin ("2000" is $0.002).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Price(u64);

impl Price {
    /// Zero dollars.
    pub const ZERO: Price = Price(0);

    /// A price from atomic units (millionths of a dollar).
    pub const fn atomic(units: u64) -> Price {
        Price(units)
    }

    /// A price from micro-dollars written as a literal, e.g. `Price::micros(2_000)` is $0.002.
    pub const fn micros(units: u64) -> Price {
        Price(units)
    }

    /// The atomic units.
    pub const fn units(self) -> u64 {
        self.0
    }

    /// The atomic units as the decimal string x402 puts in `amount`.
    pub fn atomic_string(self) -> String {
        self.0.to_string()
    }

    /// Adds two prices, saturating at the largest representable price.
    pub const fn plus(self, other: Price) -> Price {
        Price(self.0.saturating_add(other.0))
    }

    /// `base`, plus `each` for every unit of `count` beyond `included`.
    pub const fn tiered(base: Price, included: u64, each: Price, count: u64) -> Price {
        let beyond = count.saturating_sub(included);
        Price(base.0.saturating_add(each.0.saturating_mul(beyond)))
    }
}

impl fmt::Display for Price {
    /// Dollars with as many decimals as needed, at least three: `$0.002`, `$0.00202`, `$1.500`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dollars = self.0 / 1_000_000;
        let mut micros = format!("{:06}", self.0 % 1_000_000);
        while micros.len() > 3 && micros.ends_with('0') {
            micros.pop();
        }
        write!(f, "${dollars}.{micros}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_dollars() {
        assert_eq!(Price::micros(2_000).to_string(), "$0.002");
        assert_eq!(Price::micros(2_020).to_string(), "$0.00202");
        assert_eq!(Price::micros(1_500_000).to_string(), "$1.500");
        assert_eq!(Price::micros(20).to_string(), "$0.00002");
    }

    #[test]
    fn tiered_adds_only_beyond_the_included_count() {
        let p = |n| Price::tiered(Price::micros(2_000), 50, Price::micros(20), n);
        assert_eq!(p(1).units(), 2_000);
        assert_eq!(p(50).units(), 2_000);
        assert_eq!(p(51).units(), 2_020);
        assert_eq!(p(1_000).units(), 2_000 + 950 * 20);
    }
}
