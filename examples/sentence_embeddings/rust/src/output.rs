//! Printing numbers the same way in every language: fixed decimals, rounded
//! half to even from the float32 value (README, "Output").

use std::fmt::Write;

pub fn fixed(value: f32, decimals: u32) -> String {
    let v = f64::from(value);
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let scale = 10i64.pow(decimals);
    let n = (v * scale as f64).round_ties_even() as i64;
    let sign = if n < 0 { "-" } else { "" };
    let n = n.abs();
    format!("{sign}{}.{:0width$}", n / scale, n % scale, width = decimals as usize)
}

pub fn similarity_table(texts: &[String], sim: &[f32]) -> String {
    let n = texts.len();
    let mut s = String::from("cosine similarity\n     ");
    for j in 0..n {
        let _ = write!(s, "{j:>8}");
    }
    for i in 0..n {
        let _ = write!(s, "\n{i:>5}");
        for j in 0..n {
            let _ = write!(s, "{:>8}", fixed(sim[i * n + j], 4));
        }
    }
    for (i, t) in texts.iter().enumerate() {
        let _ = write!(s, "\n{i:>5}  {t}");
    }
    s
}

pub fn embedding_lines(emb: &[f32], hidden: usize) -> String {
    let rows: Vec<String> = emb
        .chunks(hidden)
        .map(|r| r.iter().map(|&v| fixed(v, 6)).collect::<Vec<_>>().join(" "))
        .collect();
    rows.join("\n")
}

pub fn token_lines(ids: &[Vec<i32>]) -> String {
    let rows: Vec<String> = ids
        .iter()
        .map(|r| r.iter().map(i32::to_string).collect::<Vec<_>>().join(" "))
        .collect();
    rows.join("\n")
}

#[cfg(test)]
mod tests {
    use super::fixed;

    #[test]
    fn rounding() {
        assert_eq!(fixed(0.03125, 4), "0.0312"); // a tie: to even
        assert_eq!(fixed(0.09375, 4), "0.0938");
        assert_eq!(fixed(-0.5, 4), "-0.5000");
        assert_eq!(fixed(-0.00001, 4), "0.0000");
        assert_eq!(fixed(1.0, 6), "1.000000");
        assert_eq!(fixed(f32::NAN, 4), "nan");
        assert_eq!(fixed(f32::NEG_INFINITY, 4), "-inf");
    }
}
