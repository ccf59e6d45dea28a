//! Kubernetes' quantity library: `quantity()`, `isQuantity()`, `sign()`, and the `Quantity`
//! methods `isInteger`, `asInteger`, `asApproximateFloat`, `add`, `sub`, `isGreaterThan`,
//! `isLessThan`, `compareTo`; `==` compares values (`quantity('1Gi') == quantity('1024Mi')`).
//!
//! Parsing follows `resource.ParseQuantity` of apimachinery: a signed decimal number (digits may
//! be missing on either side of the point, so `'.5'`, `'5.'`, `'+'` and even `'Mi'` parse), then
//! a binary-SI suffix (`Ki`…`Ei`), a decimal-SI suffix (`n u m k M G T P E`) or a decimal exponent
//! (`e3`, `E-2`). The value is exact (an integer mantissa times a power of ten), rounded up in
//! magnitude to nano precision as Kubernetes rounds, and a binary-SI value is capped at
//! 2^63−1 as Kubernetes caps it. Exponents beyond ±1000 are refused (an error) so a hostile
//! quantity cannot make comparisons allocate without end; Kubernetes has no such bound.

use super::{Outcome, boolean, fail, int, int_arg, overload_error, string_arg, take, typed_arg};
use cel::common::types::{CelDouble, INT_TYPE, STRING_TYPE, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive, Zero};
use std::any::Any;
use std::cmp::Ordering;

/// The CEL type of a quantity, named as Kubernetes names it.
pub(crate) static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");

/// The largest decimal exponent a quantity may carry.
const MAX_EXPONENT: i64 = 1000;

/// Nano precision: values are kept with at most nine fractional digits.
const NANO: i32 = -9;

/// The wording of apimachinery's parse errors.
const ERR_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// A Kubernetes resource quantity: `mantissa × 10^exponent`, exact.
#[derive(Clone, Debug)]
pub(crate) struct Quantity {
    mantissa: BigInt,
    exponent: i32,
}

impl Quantity {
    /// Parses `text` as `resource.ParseQuantity` does.
    pub(crate) fn parse(text: &str) -> Result<Quantity, String> {
        if text.is_empty() {
            return Err(ERR_FORMAT.to_owned());
        }
        let parts = split(text).ok_or_else(|| ERR_FORMAT.to_owned())?;
        let (base, exponent, binary) =
            interpret_suffix(parts.suffix).ok_or_else(|| ERR_SUFFIX.to_owned())?;
        let digits = format!("{}{}", parts.whole, parts.fraction);
        let mut mantissa: BigInt = digits.parse().unwrap_or_default();
        let mut exp10 = -(parts.fraction.len() as i64);
        if base == 2 {
            mantissa <<= exponent as usize;
        } else {
            exp10 += exponent;
        }
        if !(-MAX_EXPONENT..=MAX_EXPONENT).contains(&exp10) {
            return Err(format!(
                "quantity exponent out of the supported range (±{MAX_EXPONENT})"
            ));
        }
        if !parts.positive {
            mantissa = -mantissa;
        }
        let mut quantity = Quantity::new(mantissa, exp10 as i32).rounded_up_to_nano();
        if binary {
            let max = Quantity::new(BigInt::from(i64::MAX), 0);
            if quantity.cmp_value(&max) == Ordering::Greater {
                quantity = max;
            }
        }
        Ok(quantity)
    }

    fn new(mantissa: BigInt, exponent: i32) -> Quantity {
        Quantity { mantissa, exponent }
    }

    fn from_int(value: i64) -> Quantity {
        Quantity::new(BigInt::from(value), 0)
    }

    /// Rounds the magnitude up (away from zero) to nine fractional digits, as Kubernetes does.
    fn rounded_up_to_nano(self) -> Quantity {
        if self.exponent >= NANO {
            return self;
        }
        let divisor = BigInt::from(10).pow((NANO - self.exponent) as u32);
        let magnitude = self.mantissa.abs();
        let (mut quotient, remainder) = (&magnitude / &divisor, &magnitude % &divisor);
        if !remainder.is_zero() {
            quotient += 1;
        }
        let mantissa = if self.mantissa.is_negative() {
            -quotient
        } else {
            quotient
        };
        Quantity::new(mantissa, NANO)
    }

    /// Both mantissas at the smaller of the two exponents.
    fn aligned(&self, other: &Quantity) -> (BigInt, BigInt, i32) {
        let exponent = self.exponent.min(other.exponent);
        let scale =
            |q: &Quantity| &q.mantissa * BigInt::from(10).pow((q.exponent - exponent) as u32);
        (scale(self), scale(other), exponent)
    }

    pub(crate) fn cmp_value(&self, other: &Quantity) -> Ordering {
        let (a, b, _) = self.aligned(other);
        a.cmp(&b)
    }

    fn add(&self, other: &Quantity) -> Quantity {
        let (a, b, exponent) = self.aligned(other);
        Quantity::new(a + b, exponent)
    }

    fn neg(&self) -> Quantity {
        Quantity::new(-self.mantissa.clone(), self.exponent)
    }

    fn sign(&self) -> i64 {
        match self.mantissa.sign() {
            num_bigint::Sign::Minus => -1,
            num_bigint::Sign::NoSign => 0,
            num_bigint::Sign::Plus => 1,
        }
    }

    /// The value as an `i64` when it is a whole number in range (`AsInt64`).
    pub(crate) fn as_i64(&self) -> Option<i64> {
        if self.exponent >= 0 {
            if self.exponent > 19 && !self.mantissa.is_zero() {
                return None;
            }
            (&self.mantissa * BigInt::from(10).pow(self.exponent as u32)).to_i64()
        } else {
            let divisor = BigInt::from(10).pow(self.exponent.unsigned_abs());
            if !(&self.mantissa % &divisor).is_zero() {
                return None;
            }
            (&self.mantissa / divisor).to_i64()
        }
    }

    /// The nearest `f64` (±infinity beyond its range).
    pub(crate) fn as_f64(&self) -> f64 {
        format!("{}e{}", self.mantissa, self.exponent)
            .parse()
            .unwrap_or(f64::NAN)
    }
}

/// The pieces of a quantity string, as apimachinery's `parseQuantityString` cuts them.
struct Parts<'a> {
    positive: bool,
    whole: &'a str,
    fraction: &'a str,
    suffix: &'a str,
}

/// Cuts `text` into sign, digits and suffix; `None` when it does not match the quantity syntax.
fn split(text: &str) -> Option<Parts<'_>> {
    let (positive, rest) = match text.as_bytes().first() {
        Some(b'-') => (false, &text[1..]),
        Some(b'+') => (true, &text[1..]),
        _ => (true, text),
    };
    let digits_end = |s: &str| {
        s.bytes()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(s.len())
    };
    let whole_end = digits_end(rest);
    let (whole, rest) = rest.split_at(whole_end);
    let (fraction, rest) = match rest.strip_prefix('.') {
        Some(after) => after.split_at(digits_end(after)),
        None => ("", rest),
    };
    let letters_end = rest
        .bytes()
        .position(|b| !b"eEinumkKMGTP".contains(&b))
        .unwrap_or(rest.len());
    let (_, tail) = rest.split_at(letters_end);
    let tail = tail.strip_prefix(['+', '-']).unwrap_or(tail);
    if !tail.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(Parts {
        positive,
        whole,
        fraction,
        suffix: rest,
    })
}

/// `(base, exponent, binary)` of a suffix: `Ki` is `(2, 10, true)`, `k` `(10, 3, false)`, `e-2`
/// `(10, -2, false)`; `None` for an unknown suffix.
fn interpret_suffix(suffix: &str) -> Option<(i32, i64, bool)> {
    let decimal = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(exponent) = decimal {
        return Some((10, exponent, false));
    }
    let binary = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(exponent) = binary {
        return Some((2, exponent, true));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    if exponent.is_empty() {
        return None;
    }
    // Go parses an int64 and keeps its low 32 bits; out of our range either way.
    let value: i64 = exponent.parse().ok()?;
    if value.abs() > MAX_EXPONENT {
        return Some((10, MAX_EXPONENT + 1, false));
    }
    Some((10, value, false))
}

impl Val for Quantity {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }

    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Quantity>()
            .is_some_and(|other| self.cmp_value(other) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for Quantity {}

/// Registers the quantity functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || QUANTITY_TYPE.to_owned();
    env.add_type(q())?;
    env.add_overload(
        "quantity",
        "k8s_string_to_quantity",
        vec![STRING_TYPE],
        to_quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "k8s_is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_overload("sign", "k8s_quantity_sign", vec![q()], sign)?;
    env.add_member_overload(
        "isInteger",
        "k8s_quantity_is_integer",
        q(),
        vec![],
        is_integer,
    )?;
    env.add_member_overload("asInteger", "k8s_quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload(
        "asApproximateFloat",
        "k8s_quantity_get_float",
        q(),
        vec![],
        as_float,
    )?;
    env.add_member_overload("add", "k8s_quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "k8s_quantity_add_int", q(), vec![INT_TYPE], add)?;
    env.add_member_overload("sub", "k8s_quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "k8s_quantity_sub_int", q(), vec![INT_TYPE], sub)?;
    env.add_member_overload(
        "isGreaterThan",
        "k8s_quantity_is_greater_than",
        q(),
        vec![q()],
        is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "k8s_quantity_is_less_than",
        q(),
        vec![q()],
        is_less_than,
    )?;
    env.add_member_overload(
        "compareTo",
        "k8s_quantity_compare_to",
        q(),
        vec![q()],
        compare_to,
    )
}

fn quantity_arg<'a>(function: &str, val: &'a dyn Val) -> Result<&'a Quantity, ExecutionError> {
    typed_arg::<Quantity>(function, val)
}

fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text] = take("quantity", args)?;
    let text = string_arg("quantity", text.as_ref())?;
    let quantity = Quantity::parse(text).map_err(|e| fail("quantity", e))?;
    Ok(CowVal::owned(quantity))
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [text] = take("isQuantity", args)?;
    boolean(Quantity::parse(string_arg("isQuantity", text.as_ref())?).is_ok())
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [q] = take("sign", args)?;
    int(quantity_arg("sign", q.as_ref())?.sign())
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [q] = take("isInteger", args)?;
    boolean(quantity_arg("isInteger", q.as_ref())?.as_i64().is_some())
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [q] = take("asInteger", args)?;
    match quantity_arg("asInteger", q.as_ref())?.as_i64() {
        Some(value) => int(value),
        None => Err(fail("asInteger", "cannot convert value to integer")),
    }
}

fn as_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [q] = take("asApproximateFloat", args)?;
    let value = quantity_arg("asApproximateFloat", q.as_ref())?.as_f64();
    Ok(CowVal::owned(CelDouble::from(value)))
}

/// The operand of `add`/`sub`: a quantity, or an int taken as a decimal quantity.
fn operand(function: &str, val: &dyn Val) -> Result<Quantity, ExecutionError> {
    if let Some(q) = val.downcast_ref::<Quantity>() {
        return Ok(q.clone());
    }
    int_arg(function, val)
        .map(Quantity::from_int)
        .map_err(|_| overload_error(function, val))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [q, other] = take("add", args)?;
    let sum = quantity_arg("add", q.as_ref())?.add(&operand("add", other.as_ref())?);
    Ok(CowVal::owned(sum))
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    let [q, other] = take("sub", args)?;
    let difference = quantity_arg("sub", q.as_ref())?.add(&operand("sub", other.as_ref())?.neg());
    Ok(CowVal::owned(difference))
}

/// The ordering of the receiver against the operand of a comparison method.
fn ordering(function: &str, args: Vec<CowVal<'_, '_>>) -> Result<Ordering, ExecutionError> {
    let [q, other] = take(function, args)?;
    Ok(quantity_arg(function, q.as_ref())?.cmp_value(quantity_arg(function, other.as_ref())?))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    boolean(ordering("isGreaterThan", args)? == Ordering::Greater)
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    boolean(ordering("isLessThan", args)? == Ordering::Less)
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Outcome<'b, 'v> {
    int(ordering("compareTo", args)? as i64)
}

#[cfg(test)]
mod tests {
    use super::Quantity;
    use std::cmp::Ordering;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap()
    }

    #[test]
    fn parses_what_apimachinery_parses() {
        for text in [
            "1.5G", "200k", "1.3Gi", "10000k", ".5", "5.", "+", "-", "Mi", "1e3", "0", "-1.5e-3",
        ] {
            assert!(Quantity::parse(text).is_ok(), "{text}");
        }
        for text in ["200K", "Three", "1,3G", "1e", "", "1x", "1e3.5"] {
            assert!(Quantity::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn compares_exactly_across_suffixes() {
        assert_eq!(q("200M").cmp_value(&q("0.2G")), Ordering::Equal);
        assert_eq!(q("50M").cmp_value(&q("50Mi")), Ordering::Less);
        assert_eq!(q("1Gi").cmp_value(&q("1024Mi")), Ordering::Equal);
        assert_eq!(q("Mi").cmp_value(&q("0")), Ordering::Equal);
    }

    #[test]
    fn rounds_up_to_nano_and_caps_binary_values() {
        assert_eq!(
            q("1.0000000001").cmp_value(&q("1.000000001")),
            Ordering::Equal
        );
        assert_eq!(
            q("-1.0000000001").cmp_value(&q("-1.000000001")),
            Ordering::Equal
        );
        assert_eq!(q("1e-10").cmp_value(&q("1n")), Ordering::Equal);
        assert_eq!(q("16Ei").as_i64(), Some(i64::MAX));
    }

    #[test]
    fn converts_to_scalars() {
        assert_eq!(q("50k").as_i64(), Some(50_000));
        assert_eq!(q("0.5").as_i64(), None);
        assert_eq!(q("9999999999999999999999999999999999999G").as_i64(), None);
        assert_eq!(q("1e1000").as_i64(), None);
        assert!(q("1e1000").as_f64().is_infinite());
        assert_eq!(q("1.5Ki").as_f64(), 1536.0);
        assert!(Quantity::parse("1e100000").is_err());
    }
}
