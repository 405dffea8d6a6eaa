//! A minimal safetensors reader: 8 bytes little-endian header length N, N
//! bytes of JSON (`{"name": {"dtype", "shape", "data_offsets"}, ...}`), then
//! the data.  The data is read once into a `Vec<f32>` (one copy); tensors
//! are subslices of it.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::error::{fail, Result};
use crate::files::shape_string;
use crate::json::{self, Json};

const MAX_HEADER_BYTES: u64 = 100 << 20;

pub struct SafeTensors {
    path: PathBuf,
    header: Json,
    /// The bytes after the header, as little-endian float32 values.
    data: Vec<f32>,
    /// File offset of the data, and its size in bytes.
    start: u64,
    nbytes: u64,
}

impl SafeTensors {
    pub fn open(path: &Path) -> Result<SafeTensors> {
        let shown = path.display();
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => fail!("{shown}: missing"),
            Err(e) => fail!("{shown}: cannot read: {e}"),
        };
        let size = match f.metadata() {
            Ok(m) => m.len(),
            Err(e) => fail!("{shown}: cannot read: {e}"),
        };
        if size < 8 {
            fail!("{shown}: truncated: {size} bytes, a safetensors file starts with an 8-byte header length");
        }
        let mut len_buf = [0u8; 8];
        if let Err(e) = f.read_exact(&mut len_buf) {
            fail!("{shown}: cannot read: {e}");
        }
        let n = u64::from_le_bytes(len_buf);
        if n > MAX_HEADER_BYTES || n + 8 > size {
            fail!("{shown}: truncated or corrupt: header length {n} but the file has {size} bytes");
        }
        let mut raw = vec![0u8; n as usize];
        if let Err(e) = f.read_exact(&mut raw) {
            fail!("{shown}: cannot read: {e}");
        }
        let header = match std::str::from_utf8(&raw)
            .map_err(|e| e.to_string())
            .and_then(json::parse)
        {
            Ok(h @ Json::Object(_)) => h,
            Ok(_) => fail!("{shown}: the header is not a JSON object"),
            Err(e) => fail!("{shown}: the header is not valid JSON: {e}"),
        };
        let nbytes = size - 8 - n;
        let mut data = vec![0f32; nbytes.div_ceil(4) as usize];
        // Safety: f32 has no invalid bit patterns, the byte view covers
        // exactly the vector's initialised elements (nbytes <= 4 * len), and
        // it is dropped before `data` is used again.
        let bytes = unsafe { std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), nbytes as usize) };
        if let Err(e) = f.read_exact(bytes) {
            fail!("{shown}: cannot read: {e}");
        }
        for v in data.iter_mut() {
            *v = f32::from_bits(u32::from_le(v.to_bits()));
        }
        Ok(SafeTensors {
            path: path.to_path_buf(),
            header,
            data,
            start: 8 + n,
            nbytes,
        })
    }

    /// All the data, as float32 values; `float32` gives the tensors' ranges in it.
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// Where the tensor `name`, which must be F32 with the given shape, lies in `data()`.
    pub fn float32(&self, name: &str, shape: &[i64]) -> Result<Range<usize>> {
        let path = self.path.display();
        let entry = match self.header.get(name) {
            Some(e) if name != "__metadata__" => e,
            _ => fail!("{path}: tensor {name} is missing"),
        };
        let where_ = format!("{path}: tensor {name}");
        let dtype = entry.get("dtype").and_then(Json::as_str);
        if dtype != Some("F32") {
            fail!(
                "{where_}: dtype is {}, expected F32",
                entry
                    .get("dtype")
                    .map_or("missing".into(), Json::brief)
                    .trim_matches('"')
            );
        }
        let dims: Option<Vec<i64>> = match entry.get("shape") {
            Some(Json::Array(items)) => items.iter().map(|d| d.as_i64().filter(|&v| v >= 0)).collect(),
            _ => None,
        };
        let Some(dims) = dims else {
            fail!("{where_}: shape is not a list of sizes")
        };
        if dims != shape {
            fail!(
                "{where_}: shape is {}, expected {}",
                shape_string(&dims),
                shape_string(shape)
            );
        }
        let offsets: Option<Vec<i64>> = match entry.get("data_offsets") {
            Some(Json::Array(items)) if items.len() == 2 => items.iter().map(Json::as_i64).collect(),
            _ => None,
        };
        let (begin, end) = match offsets.as_deref() {
            Some(&[b, e]) if 0 <= b && b <= e => (b as u64, e as u64),
            _ => fail!("{where_}: data_offsets are not [begin, end]"),
        };
        let count = shape.iter().product::<i64>() as u64;
        if end - begin != 4 * count {
            fail!(
                "{where_}: data_offsets [{begin}, {end}] hold {} bytes, shape {} needs {}",
                end - begin,
                shape_string(shape),
                4 * count
            );
        }
        if end > self.nbytes {
            fail!(
                "{where_}: data ends at byte {} but the file has {} bytes (truncated?)",
                self.start + end,
                self.start + self.nbytes
            );
        }
        if begin % 4 != 0 {
            fail!("{where_}: data_offsets begin {begin} is not a multiple of 4");
        }
        Ok((begin / 4) as usize..(end / 4) as usize)
    }
}
