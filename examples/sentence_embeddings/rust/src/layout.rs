//! Where the tokens of a batch live: `n` packed rows (sentence after
//! sentence, real tokens only) and `b * s` padded rows (sentence r's token j
//! at row `r * s + j`; `s` is the longest sentence).

pub struct Layout {
    pub b: usize,
    pub s: usize,
    pub n: usize,
    /// Tokens per sentence.
    pub lengths: Vec<i32>,
    /// First packed row of each sentence.
    offsets: Vec<usize>,
    /// Packed token ids and positions.
    pub ids: Vec<i32>,
    pub positions: Vec<i32>,
    /// Padded row -> packed row.
    pub to_padded: Vec<i32>,
    /// Packed row -> padded row.
    pub to_packed: Vec<i32>,
}

impl Layout {
    pub fn new(batch: &[Vec<i32>]) -> Layout {
        let b = batch.len();
        let s = batch.iter().map(Vec::len).max().unwrap_or(0);
        let lengths: Vec<i32> = batch.iter().map(|ids| ids.len() as i32).collect();
        let mut offsets = Vec::with_capacity(b);
        let mut n = 0;
        for ids in batch {
            offsets.push(n);
            n += ids.len();
        }
        let mut l = Layout {
            b,
            s,
            n,
            lengths,
            offsets,
            ids: Vec::with_capacity(n),
            positions: Vec::with_capacity(n),
            to_padded: vec![0; b * s],
            to_packed: Vec::with_capacity(n),
        };
        for (r, ids) in batch.iter().enumerate() {
            l.ids.extend_from_slice(ids);
            for j in 0..s {
                if j < ids.len() {
                    l.positions.push(j as i32);
                    l.to_packed.push((r * s + j) as i32);
                    l.to_padded[r * s + j] = (l.offsets[r] + j) as i32;
                } else {
                    // A padding row copies its sentence's first token: any real
                    // row will do, attention ignores it and nothing reads its result.
                    l.to_padded[r * s + j] = l.offsets[r] as i32;
                }
            }
        }
        l
    }

    /// `[b, n]`: row r holds float32(1 / lengths[r]) over its own tokens, 0 elsewhere.
    pub fn pooling(&self) -> Vec<f32> {
        let mut p = vec![0f32; self.b * self.n];
        for (r, &len) in self.lengths.iter().enumerate() {
            let start = r * self.n + self.offsets[r];
            p[start..start + len as usize].fill((1.0 / f64::from(len)) as f32);
        }
        p
    }
}
