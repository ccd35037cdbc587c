//! JSON numbers compared by value: `1`, `1.0`, `1e0` and `10e-1` are equal, integers of
//! any size are compared digit by digit (never through `f64`), and numeric tolerances
//! are checked here.

use serde::{Serialize, Serializer};

use super::rules::Tolerance;

/// A JSON number as the parser delivered it.
///
/// serde_json (with `arbitrary_precision`) hands over integers that fit 64 bits as
/// integers and every other number as its exact source text.
#[derive(Debug, Clone)]
pub enum Num {
    /// A non-negative integer that fits `u64`.
    U64(u64),
    /// A negative integer that fits `i64`.
    I64(i64),
    /// Any other number, as its JSON source text.
    Text(String),
}

impl Num {
    /// Whether both numbers denote exactly the same value.
    ///
    /// A number whose exponent does not fit 64 bits is compared by its text.
    pub fn same_value(&self, other: &Num) -> bool {
        match (self, other) {
            (Num::U64(a), Num::U64(b)) => a == b,
            (Num::I64(a), Num::I64(b)) => a == b,
            _ => {
                let (mut buf_a, mut buf_b) = ([0; INT_BUF], [0; INT_BUF]);
                let (text_a, text_b) = (self.text(&mut buf_a), other.text(&mut buf_b));
                match (Decimal::parse(text_a), Decimal::parse(text_b)) {
                    (Some(a), Some(b)) => a == b,
                    _ => text_a == text_b,
                }
            }
        }
    }

    /// Whether the two numbers are within `tolerance` of each other.
    ///
    /// Integers that fit 128 bits are subtracted exactly; other numbers go through
    /// `f64` (a relative tolerance is unaffected by that rounding; an absolute one
    /// below the numbers' `f64` precision is not meaningful for them anyway).
    pub fn within(&self, other: &Num, tolerance: Tolerance) -> bool {
        if let (Some(a), Some(b)) = (self.as_i128(), other.as_i128()) {
            let magnitude = a.unsigned_abs().max(b.unsigned_abs());
            return tolerance.allows(a.abs_diff(b) as f64, magnitude as f64);
        }
        match (self.as_f64(), other.as_f64()) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() => {
                tolerance.allows((a - b).abs(), a.abs().max(b.abs()))
            }
            _ => false,
        }
    }

    fn as_i128(&self) -> Option<i128> {
        match self {
            Num::U64(n) => Some(i128::from(*n)),
            Num::I64(n) => Some(i128::from(*n)),
            Num::Text(text) => text.parse().ok(),
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            Num::U64(n) => Some(*n as f64),
            Num::I64(n) => Some(*n as f64),
            Num::Text(text) => text.parse().ok(),
        }
    }

    /// The number's decimal text; integers are formatted into `buf`.
    fn text<'s>(&'s self, buf: &'s mut [u8; INT_BUF]) -> &'s str {
        let (negative, mut n) = match self {
            Num::U64(n) => (false, *n),
            Num::I64(n) => (*n < 0, n.unsigned_abs()),
            Num::Text(text) => return text,
        };
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        if negative {
            start -= 1;
            buf[start] = b'-';
        }
        std::str::from_utf8(&buf[start..]).unwrap_or_default()
    }
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Num::U64(n) => serializer.serialize_u64(*n),
            Num::I64(n) => serializer.serialize_i64(*n),
            Num::Text(text) => match text.parse::<serde_json::Number>() {
                Ok(number) => number.serialize(serializer),
                Err(_) => serializer.serialize_str(text),
            },
        }
    }
}

/// Room for `u64::MAX` or `i64::MIN` in decimal, sign included.
const INT_BUF: usize = 21;

/// A number normalised to sign, significant digits and decimal exponent:
/// value = 0.D × 10^point, where D (the digits `start..end` of the concatenation
/// `int ++ frac`) has no leading or trailing zeros.
struct Decimal<'s> {
    negative: bool,
    int: &'s [u8],
    frac: &'s [u8],
    start: usize,
    end: usize,
    point: i64,
}

impl<'s> Decimal<'s> {
    /// Normalises JSON number text; `None` if it is not a number or its exponent
    /// does not fit 64 bits.
    fn parse(text: &'s str) -> Option<Self> {
        let bytes = text.as_bytes();
        let (negative, bytes) = match bytes.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, bytes),
        };
        let (mantissa, exp) = match bytes.iter().position(|&b| b == b'e' || b == b'E') {
            Some(at) => {
                let exp = std::str::from_utf8(&bytes[at + 1..])
                    .ok()?
                    .parse::<i64>()
                    .ok()?;
                (&bytes[..at], exp)
            }
            None => (bytes, 0),
        };
        let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
            Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
            None => (mantissa, &[][..]),
        };
        if int.is_empty() || !int.iter().chain(frac).all(u8::is_ascii_digit) {
            return None;
        }
        let mut decimal = Decimal {
            negative,
            int,
            frac,
            start: 0,
            end: 0,
            point: 0,
        };
        let len = int.len() + frac.len();
        let start = (0..len).find(|&i| decimal.digit(i) != b'0').unwrap_or(len);
        let end = (start..len)
            .rev()
            .find(|&i| decimal.digit(i) != b'0')
            .map_or(start, |i| i + 1);
        let point = exp
            .checked_add(i64::try_from(int.len()).ok()?)?
            .checked_sub(i64::try_from(start).ok()?)?;
        decimal.start = start;
        decimal.end = end;
        decimal.point = point;
        Some(decimal)
    }

    fn digit(&self, i: usize) -> u8 {
        match self.int.get(i) {
            Some(&d) => d,
            None => self.frac.get(i - self.int.len()).copied().unwrap_or(b'0'),
        }
    }

    fn is_zero(&self) -> bool {
        self.start == self.end
    }
}

impl PartialEq for Decimal<'_> {
    fn eq(&self, other: &Self) -> bool {
        if self.is_zero() || other.is_zero() {
            return self.is_zero() && other.is_zero();
        }
        self.negative == other.negative
            && self.point == other.point
            && self.end - self.start == other.end - other.start
            && (0..self.end - self.start)
                .all(|k| self.digit(self.start + k) == other.digit(other.start + k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(text: &str) -> Num {
        match text.parse::<u64>() {
            Ok(n) => Num::U64(n),
            Err(_) => match text.parse::<i64>() {
                Ok(n) => Num::I64(n),
                Err(_) => Num::Text(text.to_string()),
            },
        }
    }

    #[test]
    fn equal_values_in_different_notations() {
        for (a, b) in [
            ("1", "1.0"),
            ("1", "1e0"),
            ("1", "10e-1"),
            ("1", "0.1E+1"),
            ("0", "-0"),
            ("0", "0.000e5"),
            ("-12", "-1.2e1"),
            ("1180591620717411303424", "1.180591620717411303424e21"),
            ("100", "1e2"),
            ("0.001", "1e-3"),
        ] {
            assert!(num(a).same_value(&num(b)), "{a} should equal {b}");
            assert!(num(b).same_value(&num(a)), "{b} should equal {a}");
        }
    }

    #[test]
    fn different_values() {
        for (a, b) in [
            ("1", "2"),
            ("1", "-1"),
            ("1", "1.0000000000000000000001"),
            ("1180591620717411303424", "1180591620717411303425"),
            ("100", "1e3"),
            ("0", "1e-400"),
            ("18446744073709551615", "18446744073709551616"),
        ] {
            assert!(!num(a).same_value(&num(b)), "{a} should differ from {b}");
        }
    }

    #[test]
    fn huge_exponents_fall_back_to_text() {
        let a = num("1e99999999999999999999");
        assert!(a.same_value(&num("1e99999999999999999999")));
        assert!(!a.same_value(&num("1e99999999999999999998")));
        assert!(!a.within(&num("1"), Tolerance::Relative(0.5)));
    }

    #[test]
    fn tolerance_absolute_and_relative() {
        assert!(num("10").within(&num("10.4"), Tolerance::Absolute(0.5)));
        assert!(!num("10").within(&num("10.6"), Tolerance::Absolute(0.5)));
        assert!(num("100").within(&num("101"), Tolerance::Relative(0.01)));
        assert!(!num("100").within(&num("102"), Tolerance::Relative(0.01)));
        // Exact below 2^127: a difference of one is seen even at 2^70.
        assert!(!num("1180591620717411303424")
            .within(&num("1180591620717411303425"), Tolerance::Absolute(0.5)));
        assert!(num("1180591620717411303424")
            .within(&num("1180591620717411303425"), Tolerance::Absolute(1.0)));
    }
}
