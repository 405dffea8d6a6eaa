//! Numbers read as the C driver reads them (strtod, strtol, strtoull), so
//! that every option value the C driver takes, this program takes with the
//! same meaning, and every one it refuses, this program refuses: leading
//! white space, "1e3", "0x10", "5." and ".5" behave alike in both.

/// C's isspace in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn skip_space(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_c_space(b)).count();
    &s[n..]
}

/// The whole of `text` as strtod reads it, or None where the C driver's
/// check (`errno != 0 || end == text || *end != '\0'`) fails: nothing
/// numeric, something after the number, or a result out of range (glibc's
/// ERANGE: overflow, or underflow of a non-zero value to zero or a subnormal).
pub fn strtod_full(text: &str) -> Option<f64> {
    let s = skip_space(text.as_bytes());
    let (neg, body) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let body = std::str::from_utf8(body).ok()?;
    let hex = body.len() > 2 && (body.starts_with("0x") || body.starts_with("0X"));
    let (v, mantissa) = if hex {
        let digits = &body[2..];
        (hex_float(digits)?, digits.split(['p', 'P']).next().unwrap_or(""))
    } else {
        // Rust's grammar is C's for decimal numbers, "inf", "infinity" and
        // "nan"; it has no sign here (taken above), so "+-1" fails as in C.
        if body.starts_with(['+', '-']) {
            return None;
        }
        (body.parse::<f64>().ok()?, body.split(['e', 'E']).next().unwrap_or(""))
    };
    // A number written with a non-zero digit ("inf" and "nan" have none)
    // that comes out infinite, zero or subnormal is out of range.
    let nonzero = mantissa
        .bytes()
        .any(|b| matches!(b, b'1'..=b'9') || (hex && b.is_ascii_hexdigit() && b != b'0'));
    if nonzero && (v.is_infinite() || v == 0.0 || v.is_subnormal()) {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// A hexadecimal float after its "0x": digits, an optional fraction and an
/// optional binary exponent; at least one digit (else strtod stops after the
/// "0" and the rest is left over).
fn hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find(['p', 'P']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (int, frac) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars().chain(frac.chars()) {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut e = -4 * i64::try_from(frac.len()).ok()?;
    if let Some(x) = exp {
        let digits = x.strip_prefix(['+', '-']).unwrap_or(x);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let x: i64 = x.parse().unwrap_or(if x.starts_with('-') { -100_000 } else { 100_000 });
        e += x.clamp(-100_000, 100_000);
    }
    Some(v * 2f64.powi(e.clamp(-4000, 4000) as i32))
}

/// strtoull(text, NULL, 10) as the C driver calls it on a value strtod
/// already accepted: white space, a sign, the leading decimal digits (none:
/// 0), saturating at u64::MAX; a minus sign negates modulo 2^64.
pub fn strtoull10(text: &str) -> u64 {
    let s = skip_space(text.as_bytes());
    let (neg, s) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut v: u64 = 0;
    for &b in s.iter().take_while(|b| b.is_ascii_digit()) {
        match v.checked_mul(10).and_then(|v| v.checked_add(u64::from(b - b'0'))) {
            Some(n) => v = n,
            None => return u64::MAX,
        }
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

/// strtol(s, &end, 10): the value and the bytes consumed, or None when no
/// digits follow the white space and sign (end == s) or the value overflows
/// a long (ERANGE).
pub fn strtol10(s: &[u8]) -> Option<(i64, usize)> {
    let start = s.len() - skip_space(s).len();
    let mut i = start;
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits = s[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let mut v: i64 = 0;
    for &b in &s[i..i + digits] {
        let d = i64::from(b - b'0');
        v = v
            .checked_mul(10)
            .and_then(|v| if neg { v.checked_sub(d) } else { v.checked_add(d) })?;
    }
    Some((v, i + digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtod_accepts_what_c_accepts() {
        assert_eq!(strtod_full("32"), Some(32.0));
        assert_eq!(strtod_full("  7"), Some(7.0));
        assert_eq!(strtod_full("+3.5"), Some(3.5));
        assert_eq!(strtod_full("1e3"), Some(1000.0));
        assert_eq!(strtod_full("5."), Some(5.0));
        assert_eq!(strtod_full(".5"), Some(0.5));
        assert_eq!(strtod_full("0x10"), Some(16.0));
        assert_eq!(strtod_full("0x1p4"), Some(16.0));
        assert_eq!(strtod_full("-0"), Some(-0.0));
        assert_eq!(strtod_full("inf"), Some(f64::INFINITY));
        assert!(strtod_full("nan").unwrap().is_nan());
    }

    #[test]
    fn strtod_refuses_what_c_refuses() {
        for bad in [
            "", " ", "x", "1x", "1 ", "1e", "0x", "+-1", "--1", "1e999", "1e-999", "0x1p",
        ] {
            assert_eq!(strtod_full(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn strtoull_takes_the_leading_digits() {
        assert_eq!(strtoull10("42"), 42);
        assert_eq!(strtoull10("1e3"), 1);
        assert_eq!(strtoull10("42.9"), 42);
        assert_eq!(strtoull10(" 0x10"), 0);
        assert_eq!(strtoull10("-0"), 0);
        assert_eq!(strtoull10("18446744073709551615"), u64::MAX);
        assert_eq!(strtoull10("18446744073709551616"), u64::MAX);
    }

    #[test]
    fn strtol_reads_a_prefix() {
        assert_eq!(strtol10(b"12,3"), Some((12, 2)));
        assert_eq!(strtol10(b" -5"), Some((-5, 3)));
        assert_eq!(strtol10(b"+7x"), Some((7, 2)));
        assert_eq!(strtol10(b",1"), None);
        assert_eq!(strtol10(b"-"), None);
        assert_eq!(strtol10(b"99999999999999999999"), None);
    }
}
