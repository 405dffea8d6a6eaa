//! The steps every generated entry point shares: the `kernels!` macro that
//! turns one kernel contract into its public forms, the length checks, the
//! conversion of sizes to C, the translation of a C status into an [`Error`],
//! and the thread's default context.
//!
//! Hand-written; called by the generated `lib.rs` (tools/kbgen,
//! `emitters/rust.py`), which keeps only what is specific to each C function:
//! its signature, documentation, shape checks and the FFI call.  See
//! docs/rust.md.

use std::cell::OnceCell;
use std::ffi::CStr;

use crate::{sys, Backend, Context, Error, Result, Status};

/// Defines every form of the kernels given to it, from one entry per kernel
/// (one per in-place variant): its documentation, the signature of the slice
/// method, the signature of the buffer-view method and the body they share.
///
/// ```text
/// /// <documentation>
/// pub fn silu(&self, x: &[f32], y: &mut [f32]) -> Result<()>;
/// pub fn silu_buf(&self, x: &DeviceSlice<'_, f32>, y: &mut DeviceSliceMut<'_, f32>) -> Result<()> {
///     <checks and the C call>
/// }
/// ```
///
/// becomes `Context::silu` and `Context::silu_buf` (each with that body;
/// slices and views have the same `len`, `as_ptr` and `as_mut_ptr`) and the
/// free function `silu`, which runs `Context::silu` on the thread's default
/// context ([`with_default_context`]).  The methods come out as two
/// `impl Context` blocks (slice forms, then view forms) and the free
/// functions after them, in the order given.  The documentation is the
/// kernel's own; this macro appends what every form of that kind says (the
/// errors, what views are, the default context).  `self` is passed in by
/// the caller (`&self` in the signatures) so that the body can use it.  The
/// body's tokens keep their lines in `lib.rs`, so compiler errors point
/// there, and so do a debugger's steps (Rust >= 1.79 collapses the debug
/// locations of macros from other crates only).
///
/// # Safety of the calls in the bodies
///
/// Each body's `// Safety:` comment states what is specific to its call
/// (that the lengths are checked above it, and an in-place alias); the
/// rest holds for every kernel:
///
/// - the context pointer is live (owned by `self`); other threads may be
///   calling on it at the same time, which the C library allows;
/// - a slice, or a view (which lies inside its buffer, checked when it was
///   made, and borrows it for the call), checked against the header's
///   contract is only read and written inside by C;
/// - a view's memory kind is checked by C against the context (device memory
///   on a CPU context, or host memory on a CUDA context, is an error), so C
///   dereferences no memory of the wrong kind;
/// - outputs are `&mut [T]` or `&mut DeviceSliceMut` borrows (made from a
///   `&mut Buffer` borrow, or split from one), so they cannot overlap any
///   other argument; only an in-place form passes an output as exactly the
///   pointer of an input, where the header allows it (`alias`);
/// - a `None` tensor is passed as NULL; only tensors the header marks
///   `nullable` are `Option`s;
/// - the C function keeps no pointer after it returns (kernels finish before
///   returning).
macro_rules! kernels {
    ($(
        $(#[$doc:meta])*
        pub fn $name:ident(&$slf:ident $(, $p:ident: $t:ty)* $(,)?) -> Result<()>;
        pub fn $buf:ident(&$buf_slf:ident $(, $bp:ident: $bt:ty)* $(,)?) -> Result<()>
        $body:block
    )*) => {
        impl Context {
            $(
                $(#[$doc])*
                ///
                /// # Errors
                ///
                /// [`Status::ShapeMismatch`] naming the argument when a slice length does not match the shape; otherwise the status and message of the C library (for example [`Status::InvalidArgument`] for an out-of-range scalar).  Nothing is written on error.
                #[inline] // a few checks around one C call: let callers in other crates inline it
                pub fn $name(&$slf $(, $p: $t)*) -> Result<()> $body
            )*
        }

        /// The kernels on buffer views (`<kernel>_buf`): each is the slice form of the
        /// same name with [`DeviceSlice`] inputs and [`DeviceSliceMut`] outputs.
        impl Context {
            $(
                $(#[$doc])*
                ///
                #[doc = concat!("[`Context::", stringify!($name), "`] on buffer views: inputs are [`DeviceSlice`]s, outputs [`DeviceSliceMut`]s (host buffers on a CPU context, device buffers of the context's device on a CUDA context).")]
                ///
                /// # Errors
                ///
                /// [`Status::ShapeMismatch`] naming the argument when a view length does not match the shape; otherwise the status and message of the C library (for example [`Status::InvalidArgument`] for an out-of-range scalar, or for memory of the wrong kind for the context).  Nothing is written on error.
                #[inline]
                pub fn $buf(&$buf_slf $(, $bp: $bt)*) -> Result<()> $body
            )*
        }

        $(
            $(#[$doc])*
            ///
            /// # Errors
            ///
            /// [`Status::ShapeMismatch`] naming the argument when a slice length does not match the shape; otherwise the status and message of the C library (for example [`Status::InvalidArgument`] for an out-of-range scalar).  Nothing is written on error.
            ///
            /// Runs on the calling thread's default context (CPU, one thread; see [`with_default_context`]).
            #[inline]
            pub fn $name($($p: $t),*) -> Result<()> {
                with_default_context(|ctx| ctx.$name($($p),*))
            }
        )*
    };
}

// --- status -> Result --------------------------------------------------------

/// Turns a C status into a Result, copying the message on failure: the
/// context's, or for a NULL `ctx` (a call without a context) the calling
/// thread's `kb_last_error()`.
#[inline]
pub(crate) fn check_status(func: &'static str, raw: sys::kb_status, ctx: *const sys::kb_context) -> Result<()> {
    if raw == sys::kb_status_KB_STATUS_OK {
        Ok(())
    } else {
        Err(failure(func, raw, ctx))
    }
}

#[cold]
#[inline(never)]
pub(crate) fn failure(func: &'static str, raw: sys::kb_status, ctx: *const sys::kb_context) -> Error {
    let text = if ctx.is_null() {
        // Safety: no preconditions; the failing call had no context, so its
        // message is the calling thread's (Rust threads are OS threads), valid
        // until the thread's next such call, and copied below before any.
        unsafe { sys::kb_last_error() }
    } else {
        // Safety: ctx is the live context the failing call used, on this
        // thread; the message is valid until the next call and copied below.
        unsafe { sys::kb_context_last_error(ctx) }
    };
    let message = if text.is_null() {
        String::new()
    } else {
        // Safety: a non-NULL message is a NUL-terminated string, still valid (see above).
        unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
    };
    let status = match Status::from_raw(raw) {
        Some(status) => status,
        None => return Error::internal(func, &format!("returned unknown status {raw}")),
    };
    if message.is_empty() {
        Error::new(status, format!("{func} failed"))
    } else {
        Error::new(status, message)
    }
}

// --- sizes -------------------------------------------------------------------

/// A size as C's int64_t.
#[inline]
pub(crate) fn to_c_dim(func: &str, name: &str, value: usize) -> Result<i64> {
    match i64::try_from(value) {
        Ok(v) => Ok(v),
        Err(_) => Err(too_large(func, name, value)),
    }
}

/// Sizes (name, value) as C's int64_t, converted in order: the first too
/// large is the error.
#[inline]
pub(crate) fn c_dims<const N: usize>(func: &str, dims: [(&str, usize); N]) -> Result<[i64; N]> {
    let mut out = [0i64; N];
    for (slot, (name, value)) in out.iter_mut().zip(dims) {
        *slot = to_c_dim(func, name, value)?;
    }
    Ok(out)
}

#[cold]
#[inline(never)]
fn too_large(func: &str, name: &str, value: usize) -> Error {
    Error::new(Status::InvalidArgument, format!("{func}: {name} must be <= {}, got {value}", i64::MAX))
}

// --- length checks -----------------------------------------------------------
//
// `len` is the length of the slice or view (bytes for raw-byte tensors),
// `shape` the header's shape as text for the message, `dims` its values.
// A failed check is a `LengthFailure`, a plain value that `?` turns into the
// `Error` (overflow of the size, or mismatch) in a cold function: the
// successful call stays a bare comparison, with no error value to inspect.

/// A dense tensor: exactly the product of `dims` elements.
#[inline]
pub(crate) fn check_dense<'a>(func: &'a str, name: &'a str, len: usize, shape: &'a str, dims: &'a [usize]) -> Result<(), LengthFailure<'a>> {
    match dense_extent(dims) {
        Some(want) if len == want => Ok(()),
        _ => Err(LengthFailure { func, name, len, shape, dims, layout: Layout::Dense }),
    }
}

/// A `[rows, cols]` matrix with row stride `ld`: at least
/// `(rows - 1) * ld + cols` elements.
#[inline]
pub(crate) fn check_strided<'a>(
    func: &'a str,
    name: &'a str,
    len: usize,
    shape: &'a str,
    dims: &'a [usize],
    ld: usize,
) -> Result<(), LengthFailure<'a>> {
    match strided_extent(dims[0], dims[1], ld) {
        Some(want) if len >= want => Ok(()),
        _ => Err(LengthFailure { func, name, len, shape, dims, layout: Layout::Strided(ld) }),
    }
}

/// A batch of `dims[0]` items, consecutive items `stride` elements apart,
/// each dense or (with `ld`) a `[rows, cols]` matrix with row stride `ld`:
/// at least `(count - 1) * stride` + the extent of one item.
#[inline]
pub(crate) fn check_batched<'a>(
    func: &'a str,
    name: &'a str,
    len: usize,
    shape: &'a str,
    dims: &'a [usize],
    ld: Option<usize>,
    stride: usize,
) -> Result<(), LengthFailure<'a>> {
    match batched_extent(dims, ld, stride) {
        Ok(want) if len >= want => Ok(()),
        _ => Err(LengthFailure { func, name, len, shape, dims, layout: Layout::Batched(ld, stride) }),
    }
}

/// A length check that failed; `?` makes it the [`Error`].
pub(crate) struct LengthFailure<'a> {
    func: &'a str,
    name: &'a str,
    len: usize,
    shape: &'a str,
    dims: &'a [usize],
    layout: Layout,
}

enum Layout {
    Dense,
    Strided(usize),
    Batched(Option<usize>, usize),
}

impl From<LengthFailure<'_>> for Error {
    /// `OutOfMemory` when the size overflows (naming the part that does),
    /// otherwise `ShapeMismatch`.
    #[cold]
    #[inline(never)]
    fn from(f: LengthFailure<'_>) -> Error {
        let (want, qualifier) = match f.layout {
            Layout::Dense => (dense_extent(f.dims).ok_or(f.dims), ""),
            Layout::Strided(ld) => (strided_extent(f.dims[0], f.dims[1], ld).ok_or(&f.dims[..2]), "at least "),
            Layout::Batched(ld, stride) => (batched_extent(f.dims, ld, stride), "at least "),
        };
        match want {
            Ok(want) => Error::new(
                Status::ShapeMismatch,
                format!(
                    "{}: {} has {} elements, expected {qualifier}{want} for shape {} = {:?}",
                    f.func, f.name, f.len, f.shape, f.dims
                ),
            ),
            Err(part) => {
                Error::new(Status::OutOfMemory, format!("{}: size of {} overflows (shape {part:?})", f.func, f.name))
            }
        }
    }
}

/// Elements of a dense tensor of this shape (None: the product overflows).
#[inline]
fn dense_extent(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Elements spanned by a [rows, cols] matrix with row stride ld.
#[inline]
fn strided_extent(rows: usize, cols: usize, ld: usize) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (rows - 1).checked_mul(ld)?.checked_add(cols)
}

/// Elements spanned by a batch of `dims[0]` items, consecutive items
/// `stride` elements apart (0 when the batch is empty).  An overflow is
/// `Err` with the dims of the part that overflows: one item, or the batch.
#[inline]
fn batched_extent(dims: &[usize], ld: Option<usize>, stride: usize) -> Result<usize, &[usize]> {
    let item = match ld {
        Some(ld) => strided_extent(dims[1], dims[2], ld),
        None => dense_extent(&dims[1..]),
    };
    let item = item.ok_or(&dims[1..])?;
    if dims[0] == 0 || item == 0 {
        return Ok(0);
    }
    (dims[0] - 1).checked_mul(stride).and_then(|n| n.checked_add(item)).ok_or(dims)
}

// --- in strings --------------------------------------------------------------

/// `s` as a C string for an `in string` parameter, or an InvalidArgument
/// error naming it when it holds a NUL byte (C would read it as the end).
pub(crate) fn c_string(func: &str, name: &str, s: &str) -> Result<std::ffi::CString> {
    std::ffi::CString::new(s)
        .map_err(|_| Error::new(Status::InvalidArgument, format!("{func}: {name} holds a NUL byte")))
}

// --- out strings -------------------------------------------------------------

/// Bytes of the buffer passed to C for an `out string` parameter (longer
/// strings are truncated by C, e.g. device names).
pub(crate) const OUT_STRING_CAPACITY: usize = 256;

/// The NUL-terminated string C wrote into `buf` (all of it without a NUL).
pub(crate) fn string_from_c_buffer(buf: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

// --- the default context -----------------------------------------------------

thread_local! {
    static DEFAULT_CONTEXT: OnceCell<Context> = const { OnceCell::new() };
}

/// Runs `f` with the calling thread's default context, created on first use
/// with [`Backend::Cpu`] and one thread (the C library's defaults for a NULL
/// context).  The free kernel functions of this crate use it.
///
/// # Errors
///
/// The error of creating the context, or of `f`; [`Status::Internal`] when
/// called while the thread's locals are being destroyed.
pub fn with_default_context<R>(f: impl FnOnce(&Context) -> Result<R>) -> Result<R> {
    let run = |cell: &OnceCell<Context>| -> Result<R> {
        if let Some(ctx) = cell.get() {
            return f(ctx);
        }
        let created = Context::new(Backend::Cpu, 1)?;
        f(cell.get_or_init(|| created))
    };
    match DEFAULT_CONTEXT.try_with(run) {
        Ok(result) => result,
        Err(_) => Err(Error::internal("kernelbridge", "the thread's default context is gone (thread exiting)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_becomes_an_error_with_that_status() {
        for &status in Status::ALL {
            if status == Status::Ok {
                continue;
            }
            let err = failure("kb_test", status.to_raw(), std::ptr::null());
            assert_eq!(err.status(), status);
            assert_eq!(err.code(), status.code());
        }
        let unknown = failure("kb_test", 1000, std::ptr::null());
        assert_eq!(unknown.status(), Status::Internal);
        assert!(unknown.message().contains("1000"), "{unknown}");
    }
}
