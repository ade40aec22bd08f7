//! Arithmetic on [`Quantity`] (Kubernetes' `resource.Quantity`): its exact [`Amount`], sums of
//! amounts (a cluster's capacity is the sum over its nodes) written back as a quantity, and the
//! approximate float the hub's ResourceAllocatable prioritizers compare.
//!
//! Exact, not floating point: a sum of `100m` CPUs or of `Ki` memory must equal what Kubernetes
//! would add, so an amount is a whole number of billionths of a unit (`n`, the finest a
//! Kubernetes quantity keeps; finer parts round up, as Kubernetes rounds them).

use super::meta::Quantity;

/// Why a quantity has no amount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not a number with an optional suffix.
    #[error(
        "{0:?} is not a Kubernetes quantity (a number with an optional suffix, e.g. 4, 500m, 1.5, 8Gi, 2k, 1e3)"
    )]
    Malformed(String),
    /// Its value in billionths does not fit in 128 bits (far beyond any real cluster).
    #[error("the quantity {0:?} is too large")]
    TooLarge(String),
}

/// Billionths in one unit.
const NANOS: i128 = 1_000_000_000;

/// The exact value of a [`Quantity`]: billionths of a unit, and whether it was written with a
/// binary suffix (`Ki`..`Ei`), which a sum keeps when it is written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Amount {
    nanos: i128,
    binary: bool,
}

impl Amount {
    /// Nothing (the start of a sum).
    pub const ZERO: Amount = Amount {
        nanos: 0,
        binary: false,
    };

    /// `units` whole units (CEL's `quantity.add(int)`).
    pub fn from_units(units: i64) -> Amount {
        Amount {
            nanos: i128::from(units) * NANOS,
            binary: false,
        }
    }

    /// `self - other`, binary when either was; `None` on overflow.
    pub fn checked_sub(self, other: Amount) -> Option<Amount> {
        Some(Amount {
            nanos: self.nanos.checked_sub(other.nanos)?,
            binary: self.binary || other.binary,
        })
    }

    /// The amount as a whole number of units, when it is one and fits in 64 bits.
    pub fn whole_units(self) -> Option<i64> {
        (self.nanos % NANOS == 0)
            .then(|| i64::try_from(self.nanos / NANOS).ok())
            .flatten()
    }

    /// -1, 0 or 1.
    pub fn signum(self) -> i64 {
        self.nanos.signum() as i64
    }

    /// The two values compared (however each was written: `1Gi` > `1G`, `1000m` = `1`).
    pub fn compare(self, other: Amount) -> std::cmp::Ordering {
        self.nanos.cmp(&other.nanos)
    }

    /// `self + other`, binary when either was; `None` on overflow.
    pub fn checked_add(self, other: Amount) -> Option<Amount> {
        Some(Amount {
            nanos: self.nanos.checked_add(other.nanos)?,
            binary: self.binary || other.binary,
        })
    }

    /// The amount as a float (Go's `AsApproximateFloat64`): whole units and the fraction apart,
    /// so a whole number of units is exact up to 2^53.
    pub fn approximate_f64(self) -> f64 {
        (self.nanos / NANOS) as f64 + (self.nanos % NANOS) as f64 / NANOS as f64
    }

    /// The amount written as a quantity, exactly: a fraction with the coarsest of `m`, `u`, `n`
    /// that holds it (`1500m`); a whole number with the largest binary suffix that divides it when
    /// binary (`16Gi`), else plainly (`4`, `110`).
    pub fn to_quantity(self) -> Quantity {
        if self.nanos % NANOS != 0 {
            for (suffix, per) in [("m", 1_000_000), ("u", 1_000), ("n", 1)] {
                if self.nanos % per == 0 {
                    return Quantity(format!("{}{suffix}", self.nanos / per));
                }
            }
        }
        let units = self.nanos / NANOS;
        if self.binary && units != 0 {
            for (suffix, power) in [
                ("Ei", 6),
                ("Pi", 5),
                ("Ti", 4),
                ("Gi", 3),
                ("Mi", 2),
                ("Ki", 1),
            ] {
                let per = 1024i128.pow(power);
                if units % per == 0 {
                    return Quantity(format!("{}{suffix}", units / per));
                }
            }
        }
        Quantity(units.to_string())
    }
}

impl Quantity {
    /// The exact amount, parsed as Kubernetes parses a quantity: an optional sign, a decimal
    /// number, and an optional binary (`Ki`..`Ei`), decimal (`n`, `u`, `m`, `k`, `M`..`E`) or
    /// exponent (`e3`, `E-2`) suffix.
    ///
    /// # Errors
    /// [`QuantityError::Malformed`] for anything else (`""`, `Gi`, `4 cores`, `1Zi`);
    /// [`QuantityError::TooLarge`] past 128 bits of billionths.
    pub fn amount(&self) -> Result<Amount, QuantityError> {
        let malformed = || QuantityError::Malformed(self.0.clone());
        let too_large = || QuantityError::TooLarge(self.0.clone());
        let text = self.0.as_str();
        let (negative, unsigned) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(malformed());
        }
        let (binary_power, suffix_exponent) = match suffix {
            "" => (0, 0),
            "Ki" => (1, 0),
            "Mi" => (2, 0),
            "Gi" => (3, 0),
            "Ti" => (4, 0),
            "Pi" => (5, 0),
            "Ei" => (6, 0),
            "n" => (0, -9),
            "u" => (0, -6),
            "m" => (0, -3),
            "k" => (0, 3),
            "M" => (0, 6),
            "G" => (0, 9),
            "T" => (0, 12),
            "P" => (0, 15),
            "E" => (0, 18),
            exponent if exponent.starts_with(['e', 'E']) => {
                (0, exponent[1..].parse::<i32>().map_err(|_| malformed())?)
            }
            _ => return Err(malformed()),
        };
        // Every digit as one integer, and the power of ten that places its decimal point in
        // billionths.
        let mut mantissa: i128 = 0;
        for digit in whole.bytes().chain(fraction.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(digit - b'0')))
                .ok_or_else(too_large)?;
        }
        if mantissa == 0 {
            return Ok(Amount {
                nanos: 0,
                binary: binary_power > 0,
            });
        }
        let fraction_digits = i32::try_from(fraction.len()).map_err(|_| too_large())?;
        let exponent = suffix_exponent
            .checked_sub(fraction_digits)
            .and_then(|e| e.checked_add(9))
            .ok_or_else(too_large)?;
        let scaled = mantissa
            .checked_mul(1024i128.pow(binary_power))
            .ok_or_else(too_large)?;
        let nanos = if exponent >= 0 {
            10i128
                .checked_pow(exponent.unsigned_abs())
                .and_then(|p| scaled.checked_mul(p))
                .ok_or_else(too_large)?
        } else {
            // Finer than a billionth: round up, as Kubernetes does.
            match 10i128.checked_pow(exponent.unsigned_abs()) {
                Some(per) => (scaled + per - 1) / per,
                None => 1,
            }
        };
        Ok(Amount {
            nanos: if negative { -nanos } else { nanos },
            binary: binary_power > 0,
        })
    }

    /// The quantity as a float (Go's `Quantity.AsApproximateFloat64`); `None` when it does not
    /// parse.
    pub fn approximate_f64(&self) -> Option<f64> {
        self.amount().ok().map(Amount::approximate_f64)
    }

    /// The exact sum of `quantities` (binary when any of them was written so).
    ///
    /// # Errors
    /// The first quantity that does not parse, or [`QuantityError::TooLarge`] when the sum
    /// overflows.
    pub fn sum<'a>(
        quantities: impl IntoIterator<Item = &'a Quantity>,
    ) -> Result<Quantity, QuantityError> {
        let mut total = Amount::ZERO;
        for q in quantities {
            total = total
                .checked_add(q.amount()?)
                .ok_or_else(|| QuantityError::TooLarge(q.0.clone()))?;
        }
        Ok(total.to_quantity())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_owned())
    }

    #[test]
    fn quantities_parse_like_kubernetes() {
        let cases = [
            ("4", Some(4.0)),
            ("500m", Some(0.5)),
            ("1.5", Some(1.5)),
            (".5", Some(0.5)),
            ("+2", Some(2.0)),
            ("-2", Some(-2.0)),
            ("8Gi", Some(8.0 * 1024.0 * 1024.0 * 1024.0)),
            ("512Mi", Some(512.0 * 1024.0 * 1024.0)),
            ("2k", Some(2000.0)),
            ("3M", Some(3e6)),
            ("1e3", Some(1000.0)),
            ("1E-2", Some(0.01)),
            ("2E", Some(2e18)),
            ("12Ki", Some(12.0 * 1024.0)),
            ("", None),
            ("Gi", None),
            (".", None),
            ("1.2.3", None),
            ("1e", None),
            ("4 cores", None),
            ("1Zi", None),
            ("1K", None),
        ];
        for (text, want) in cases {
            assert_eq!(q(text).approximate_f64(), want, "{text:?}");
        }
    }

    #[test]
    fn a_sum_is_exact_where_floats_are_not() {
        // 0.1 + 0.2 is not 0.3 in floats; in quantities it is.
        assert_eq!(Quantity::sum(&[q("100m"), q("200m")]), Ok(q("300m")));
        assert_eq!(Quantity::sum(&[q("1"), q("500m")]), Ok(q("1500m")));
        assert_eq!(Quantity::sum(&[q("0.1"), q("0.2"), q("0.7")]), Ok(q("1")));
        assert_eq!(Quantity::sum(&[q("1u"), q("1")]), Ok(q("1000001u")));
    }

    #[test]
    fn a_sum_of_memory_keeps_its_binary_suffix() {
        assert_eq!(Quantity::sum(&[q("8Gi"), q("8388608Ki")]), Ok(q("16Gi")));
        assert_eq!(Quantity::sum(&[q("1Gi"), q("512Mi")]), Ok(q("1536Mi")));
        // Not a whole number of Ki: plain bytes.
        assert_eq!(Quantity::sum(&[q("1Ki"), q("1")]), Ok(q("1025")));
        // Decimal suffixes are written back as plain units.
        assert_eq!(Quantity::sum(&[q("110"), q("1k")]), Ok(q("1110")));
        assert_eq!(Quantity::sum(&[]), Ok(q("0")));
    }

    #[test]
    fn a_sum_names_the_quantity_that_does_not_parse() {
        assert_eq!(
            Quantity::sum(&[q("4"), q("four")]),
            Err(QuantityError::Malformed("four".into()))
        );
        let err = Quantity::sum(&[q("four")]).unwrap_err().to_string();
        assert!(err.contains("\"four\"") && err.contains("8Gi"), "{err}");
        assert!(matches!(
            q("1e40").amount(),
            Err(QuantityError::TooLarge(_))
        ));
    }

    #[test]
    fn finer_than_a_billionth_rounds_up_as_kubernetes_does() {
        assert_eq!(Quantity::sum(&[q("0.0000000001")]), Ok(q("1n")));
        assert_eq!(Quantity::sum(&[q("1e-20")]), Ok(q("1n")));
        assert_eq!(Quantity::sum(&[q("0e-100")]), Ok(q("0")));
    }
}
