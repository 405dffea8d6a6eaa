//! Reader of the corpus' .npy files (NumPy format 1.0/2.0, little-endian
//! `<f4`, `<i4`, `<f8` or `<u2` (bfloat16 / float16 bit patterns), or bytes `|u1`, C order).  The header is parsed generally: the
//! keys are found by name and the shape tuple is read.

use std::fs;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    F32(Vec<f32>),
    I32(Vec<i32>),
    F64(Vec<f64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
}

impl Data {
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::U16(v) => v.len(),
        }
    }
}

/// The value of `'key': ` in the header dict, up to the next `,` at nesting
/// level 0 (or the closing brace).
fn header_value<'a>(header: &'a str, key: &str) -> Option<&'a str> {
    let pat_sq = format!("'{key}'");
    let pat_dq = format!("\"{key}\"");
    let at = header.find(&pat_sq).map(|i| i + pat_sq.len()).or_else(|| header.find(&pat_dq).map(|i| i + pat_dq.len()))?;
    let rest = header[at..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Some(rest[..i].trim()),
            _ => {}
        }
        if depth == 0 && (c == ')' || c == ']') {
            return Some(rest[..=i].trim());
        }
    }
    None
}

pub fn read(path: &Path) -> Result<Data, String> {
    let name = path.display();
    let bytes = fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(format!("{name}: not a .npy file"));
    }
    let (hlen, hstart) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(format!("{name}: unsupported .npy version {v}")),
    };
    let header = bytes
        .get(hstart..hstart + hlen)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| format!("{name}: bad header"))?;
    let descr = header_value(header, "descr").ok_or_else(|| format!("{name}: no descr"))?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    let fortran = header_value(header, "fortran_order").ok_or_else(|| format!("{name}: no fortran_order"))?;
    if fortran != "False" {
        return Err(format!("{name}: fortran_order {fortran} is not supported"));
    }
    let shape = header_value(header, "shape").ok_or_else(|| format!("{name}: no shape"))?;
    let inner = shape.trim_start_matches('(').trim_end_matches(')');
    let mut count: usize = 1;
    for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let d: usize = part.trim_end_matches('L').parse().map_err(|_| format!("{name}: bad shape {shape}"))?;
        count = count.checked_mul(d).ok_or_else(|| format!("{name}: shape {shape} overflows"))?;
    }
    let data = &bytes[hstart + hlen..];
    let width = match descr {
        "<f4" | "<i4" => 4,
        "<f8" => 8,
        "|u1" => 1,
        "<u2" => 2,
        _ => return Err(format!("{name}: unsupported dtype {descr}")),
    };
    if data.len() != count * width {
        return Err(format!("{name}: {} data bytes, shape {shape} needs {}", data.len(), count * width));
    }
    Ok(match descr {
        "<f4" => Data::F32(data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        "<i4" => Data::I32(data.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        "<f8" => Data::F64(
            data.chunks_exact(8)
                .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect(),
        ),
        "<u2" => Data::U16(data.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()),
        _ => Data::U8(data.to_vec()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values() {
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }          \n";
        assert_eq!(header_value(h, "descr"), Some("'<f4'"));
        assert_eq!(header_value(h, "fortran_order"), Some("False"));
        assert_eq!(header_value(h, "shape"), Some("(2, 3)"));
        let h = "{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }";
        assert_eq!(header_value(h, "shape"), Some("(7,)"));
        let h = "{'shape': (), 'descr': '<f8', 'fortran_order': False}";
        assert_eq!(header_value(h, "shape"), Some("()"));
        assert_eq!(header_value(h, "fortran_order"), Some("False"));
        let h = "{'descr': '|u1', 'fortran_order': False, 'shape': (34,), }";
        assert_eq!(header_value(h, "descr"), Some("'|u1'"));
    }
}
