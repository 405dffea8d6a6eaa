//! Tensors in storage formats ([`Dtype`]): the weights of a model read from
//! a GGUF file, used where they lie.
//!
//! A [`QTensor`] is the bytes of a `[rows, cols]` tensor with their format,
//! borrowed (a slice of a memory-mapped file, at any alignment) or owned (the
//! result of [`quantize_q`]).  The byte count is checked against
//! [`dtype_bytes`] when it is made, so a `QTensor` always
//! holds a whole tensor and the layer functions need no byte count:
//!
//! ```
//! use kernelbridge::{Activation, Backend, Context, Dtype, QTensor};
//!
//! let ctx = Context::new(Backend::Cpu, 1)?;
//! let (in_features, out_features) = (64, 3);
//! let w: Vec<f32> = (0..in_features * out_features).map(|i| (i as f32 * 0.37).sin()).collect();
//! let q8 = ctx.quantize_q(Dtype::Q8_0, out_features, in_features, &w)?; // owned bytes
//! assert_eq!(q8.data().len(), out_features * in_features / 32 * 34);
//!
//! // The same bytes borrowed from elsewhere (a file image, at an odd offset).
//! let mut file = vec![0u8; 1];
//! file.extend_from_slice(q8.data());
//! let w_in_place = QTensor::new(Dtype::Q8_0, out_features, in_features, &file[1..])?;
//!
//! let x = vec![0.5f32; 2 * in_features];          // two rows
//! let mut y = vec![0.0f32; 2 * out_features];
//! ctx.linear_q(&x, &w_in_place, None, Activation::None, &mut y)?;
//!
//! let table = ctx.quantize_q(Dtype::Q4_0, 4, 32, &vec![1.0f32; 4 * 32])?;
//! let mut rows = vec![0.0f32; 2 * 32];
//! ctx.embedding_q(&[3, 0], &table, &mut rows)?;
//! assert_eq!(rows, vec![1.0f32; 2 * 32]);
//! # Ok::<(), kernelbridge::Error>(())
//! ```
//!
//! Hand-written on the generated `quantize`, `dequantize`, `linear_w` and
//! `embedding_w`: every check after the tensor's own is theirs (and the C
//! library's), and so are the results, bit for bit.  The functions that
//! write into a caller's slice write nothing when they fail.

use std::borrow::Cow;
use std::fmt;

use crate::runtime::check_dense;
use crate::{dtype_bytes, with_default_context, Activation, Context, Dtype, Error, Result, Status};

/// A `[rows, cols]` tensor stored as a [`Dtype`]: `rows` rows of `cols`
/// elements, each row stored alone (GGUF's and PyTorch's layout of a weight
/// `[out_features, in_features]`; a GGUF tensor's dimensions `ne = [cols,
/// rows]` list the fastest-varying first).
///
/// Its bytes are a [`Cow`]: borrowed from memory the caller keeps (a mapped
/// GGUF file: no copy, any alignment) or owned.  The byte count always equals
/// [`dtype_bytes`]`(dtype, rows, cols)`; the bytes
/// themselves are any bytes (every pattern of every format is a value).
///
/// A tensor of a memory-mapped GGUF file, from its tensor info:
///
/// ```
/// use kernelbridge::{Dtype, Error, QTensor, Result, Status};
///
/// /// `ggml_type` and `ne` (two dimensions) from the tensor info, `bytes` its
/// /// data inside the mapping: used in place, for as long as the mapping lives.
/// fn gguf_tensor<'m>(ggml_type: u32, ne: [u64; 2], bytes: &'m [u8]) -> Result<QTensor<'m>> {
///     let dtype = i32::try_from(ggml_type).ok().and_then(Dtype::from_code).ok_or_else(|| {
///         Error::new(Status::Unsupported, format!("GGML type {ggml_type} is not supported"))
///     })?;
///     let dim = |d: u64| usize::try_from(d).map_err(|_| Error::new(Status::InvalidArgument, "dimension too large"));
///     QTensor::new(dtype, dim(ne[1])?, dim(ne[0])?, bytes) // ne[0] is the row length
/// }
///
/// let mapping = vec![0u8; 7 + 2 * 34];                      // stands for the file
/// let w = gguf_tensor(8, [32, 2], &mapping[7..])?;          // Q8_0, 2 rows of 32
/// assert!(w.is_borrowed() && w.dtype() == Dtype::Q8_0 && (w.rows(), w.cols()) == (2, 32));
/// assert_eq!(gguf_tensor(3, [32, 2], &mapping[7..]).unwrap_err().status(), Status::Unsupported); // Q4_1
/// # Ok::<(), Error>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct QTensor<'a> {
    dtype: Dtype,
    rows: usize,
    cols: usize,
    data: Cow<'a, [u8]>,
}

impl<'a> QTensor<'a> {
    /// The `[rows, cols]` tensor stored as `dtype` in `data`: a `&[u8]`
    /// (borrowed for `'a`), a `Vec<u8>` or a `Cow`.
    ///
    /// # Errors
    ///
    /// The error of [`dtype_bytes`] naming the argument
    /// ([`Status::InvalidArgument`] for `cols` not a multiple of 32 in a block
    /// format, [`Status::OutOfMemory`] when the size overflows), and
    /// [`Status::ShapeMismatch`] naming `data` when it does not hold exactly
    /// that many bytes:
    /// `"QTensor::new: data has 107 bytes, expected 108 for [3, 64] as Q4_0"`.
    pub fn new(dtype: Dtype, rows: usize, cols: usize, data: impl Into<Cow<'a, [u8]>>) -> Result<QTensor<'a>> {
        let data = data.into();
        let want = byte_count(dtype, rows, cols)?;
        if data.len() != want {
            return Err(Error::new(
                Status::ShapeMismatch,
                format!("QTensor::new: data has {} bytes, expected {want} for [{rows}, {cols}] as {dtype}", data.len()),
            ));
        }
        Ok(QTensor { dtype, rows, cols, data })
    }

    /// The storage format.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Rows (`out_features` of a weight, `vocab` of an embedding table).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Elements per row (`in_features` of a weight, `dim` of a table).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// The stored bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether the bytes are borrowed (used in place) rather than owned.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.data, Cow::Borrowed(_))
    }

    /// The stored bytes, as they are held.
    pub fn into_data(self) -> Cow<'a, [u8]> {
        self.data
    }

    /// The same tensor owning its bytes (copied if they were borrowed).
    pub fn into_owned(self) -> QTensor<'static> {
        QTensor { dtype: self.dtype, rows: self.rows, cols: self.cols, data: Cow::Owned(self.data.into_owned()) }
    }

    /// The tensor widened to float32, `rows * cols` values in row-major
    /// order, on the calling thread's default context (see
    /// [`Context::dequantize_q`]).  Exact: every value of every format is a
    /// float32.
    ///
    /// # Errors
    ///
    /// The error of `kb_dequantize`, or of creating the default context.
    pub fn dequantize(&self) -> Result<Vec<f32>> {
        with_default_context(|ctx| ctx.dequantize_q(self))
    }
}

impl fmt::Debug for QTensor<'_> {
    /// The format, the shape and the byte count (not the bytes).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QTensor")
            .field("dtype", &self.dtype)
            .field("rows", &self.rows)
            .field("cols", &self.cols)
            .field("bytes", &self.data.len())
            .field("borrowed", &self.is_borrowed())
            .finish()
    }
}

/// `dtype_bytes` as a length.
fn byte_count(dtype: Dtype, rows: usize, cols: usize) -> Result<usize> {
    let n = dtype_bytes(dtype, rows, cols)?;
    // Only a 32-bit target can fail here: C's count fits int64_t.
    usize::try_from(n).map_err(|_| {
        Error::new(Status::OutOfMemory, format!("kb_dtype_bytes: {n} bytes of [{rows}, {cols}] as {dtype} do not fit usize"))
    })
}

/// Rows of `row` elements in a slice of `len` elements; a remainder is
/// `ShapeMismatch` naming the slice (as [`crate::Linear`] counts them).
fn whole_rows(len: usize, row: usize, name: &str) -> Result<usize> {
    if len % row != 0 {
        return Err(Error::new(
            Status::ShapeMismatch,
            format!("kb_linear_w: {name} has {len} elements, which is not a whole number of rows of {row}"),
        ));
    }
    Ok(len / row)
}

impl Context {
    /// `x`, a `[rows, cols]` float32 tensor, stored as `dtype`
    /// (`kb_quantize`: GGML's reference quantization for Q8_0 and Q4_0,
    /// rounding to nearest even for F16 and BF16, a copy for F32).
    ///
    /// # Errors
    ///
    /// [`Status::ShapeMismatch`] naming `x` when it does not hold
    /// `rows * cols` values; the error of [`dtype_bytes`]
    /// naming `cols` when it is not a multiple of 32 in a block format; the
    /// error of `kb_quantize` ([`Status::InvalidArgument`] naming the element,
    /// `x[row, col]`, that is not finite or too large for a block format).
    pub fn quantize_q(&self, dtype: Dtype, rows: usize, cols: usize, x: &[f32]) -> Result<QTensor<'static>> {
        // x first: then the allocation is at most 4 bytes per element of x.
        check_dense("kb_quantize", "x", x.len(), "[rows, cols]", &[rows, cols])?;
        let mut data = vec![0u8; byte_count(dtype, rows, cols)?];
        self.quantize(dtype, rows, cols, x, &mut data)?;
        Ok(QTensor { dtype, rows, cols, data: Cow::Owned(data) })
    }

    /// `t` widened to float32: `rows * cols` values in row-major order
    /// (`kb_dequantize`; exact).
    ///
    /// # Errors
    ///
    /// The error of `kb_dequantize` (e.g. [`Status::Unsupported`] on a CUDA
    /// context, which has no such kernel yet).
    pub fn dequantize_q(&self, t: &QTensor<'_>) -> Result<Vec<f32>> {
        let n = t.rows.checked_mul(t.cols).ok_or_else(|| {
            Error::new(Status::OutOfMemory, format!("kb_dequantize: size of y overflows (shape [{}, {}])", t.rows, t.cols))
        })?;
        let mut y = vec![0.0f32; n];
        self.dequantize(t.dtype, t.rows, t.cols, &t.data, &mut y)?;
        Ok(y)
    }

    /// A fused linear layer with a weight in a storage format:
    /// `y = act(x Wᵀ + bias)` (`kb_linear_w`) with `weight` `W` the
    /// `[out_features, in_features]` tensor, so `in_features =
    /// weight.cols()` and `out_features = weight.rows()`.  `x` holds any
    /// number of rows of `in_features` (`x.len() / in_features`, or
    /// `y.len() / out_features` when `in_features` is 0), `y` as many rows of
    /// `out_features`, `bias` `out_features` values.  For F32 weights the
    /// result is [`Context::linear`]'s, bit for bit.
    ///
    /// # Errors
    ///
    /// [`Status::ShapeMismatch`] naming `x` (or `y`) when its length is not a
    /// whole number of rows; otherwise the errors of the generated
    /// [`Context::linear_w`] (lengths of `y` and `bias` naming them, then the
    /// C library's).  Nothing is written on error.
    pub fn linear_q(&self, x: &[f32], weight: &QTensor<'_>, bias: Option<&[f32]>, act: Activation, y: &mut [f32]) -> Result<()> {
        let (in_features, out_features) = (weight.cols, weight.rows);
        let rows = if in_features > 0 {
            whole_rows(x.len(), in_features, "x")?
        } else if out_features > 0 {
            whole_rows(y.len(), out_features, "y")?
        } else {
            0
        };
        self.linear_w(rows, in_features, out_features, x, weight.dtype, &weight.data, bias, act, y)
    }

    /// Embedding lookup from a table in a storage format (`kb_embedding_w`):
    /// row `i` of `out` (`ids.len()` rows of `table.cols()`) is row `ids[i]`
    /// of `table`, widened to float32 exactly.
    ///
    /// # Errors
    ///
    /// [`Status::ShapeMismatch`] naming `out` when it does not hold
    /// `ids.len() * table.cols()` values; [`Status::InvalidArgument`] naming
    /// the id (`ids[1] = 7 is out of range [0, 4)`) when one is not a row of
    /// the table.  The ids are all checked before anything is written.
    pub fn embedding_q(&self, ids: &[i32], table: &QTensor<'_>, out: &mut [f32]) -> Result<()> {
        self.embedding_w(table.rows, table.cols, ids, table.dtype, &table.data, out)
    }
}

/// [`Context::quantize_q`] on the calling thread's default context (CPU, one
/// thread; see [`with_default_context`]).
///
/// # Errors
///
/// Those of [`Context::quantize_q`].
pub fn quantize_q(dtype: Dtype, rows: usize, cols: usize, x: &[f32]) -> Result<QTensor<'static>> {
    with_default_context(|ctx| ctx.quantize_q(dtype, rows, cols, x))
}

/// [`Context::linear_q`] on the calling thread's default context.
///
/// # Errors
///
/// Those of [`Context::linear_q`]; nothing is written on error.
pub fn linear_q(x: &[f32], weight: &QTensor<'_>, bias: Option<&[f32]>, act: Activation, y: &mut [f32]) -> Result<()> {
    with_default_context(|ctx| ctx.linear_q(x, weight, bias, act, y))
}

/// [`Context::embedding_q`] on the calling thread's default context.
///
/// # Errors
///
/// Those of [`Context::embedding_q`]; nothing is written on error.
pub fn embedding_q(ids: &[i32], table: &QTensor<'_>, out: &mut [f32]) -> Result<()> {
    with_default_context(|ctx| ctx.embedding_q(ids, table, out))
}
