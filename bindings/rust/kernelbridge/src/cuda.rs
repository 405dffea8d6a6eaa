//! CUDA devices: how many there are and what they are.
//!
//! Hand-written on the generated `cuda_device_*` functions (the same calls
//! with C's `i64` types): devices are `usize` indices, capabilities
//! `(major, minor)`, memory sizes `u64` bytes.
//!
//! The CUDA backend is a separate library, `libkernelbridge_cuda.so`, loaded
//! at run time the first time CUDA is asked for (see docs/cuda.md; the full
//! path may be given in `$KB_CUDA_LIBRARY`).  Building this crate needs no
//! CUDA.  Without a usable backend (library, NVIDIA driver or device missing)
//! every function here, [`Context::cuda`](crate::Context::cuda) and
//! `Context::new(Backend::Cuda, ..)` fail with
//! [`Status::BackendUnavailable`] and a message saying which part is missing:
//!
//! ```
//! use kernelbridge::{cuda, Status};
//! match cuda::device_count() {
//!     Ok(n) => println!("{n} CUDA devices"),
//!     Err(e) if e.status() == Status::BackendUnavailable => println!("no CUDA: {}", e.message()),
//!     Err(e) => panic!("{e}"),
//! }
//! ```
//!
//! Errors carry the message of the calling thread's
//! [`last_error`](crate::last_error), read right after the call.

use crate::{Error, Result, Status};

fn c_device(func: &str, device: usize) -> Result<i64> {
    i64::try_from(device).map_err(|_| Error::new(Status::InvalidArgument, format!("{func}: device {device} is out of range")))
}

fn non_negative<T: TryFrom<i64>>(func: &str, what: &str, value: i64) -> Result<T> {
    T::try_from(value).map_err(|_| Error::new(Status::Internal, format!("{func}: returned {what} {value}")))
}

/// Number of CUDA devices kernelbridge can use (kernels need compute
/// capability 8.0 or newer).
///
/// # Errors
///
/// [`Status::BackendUnavailable`] when CUDA cannot be used, with the reason.
pub fn device_count() -> Result<usize> {
    non_negative("kb_cuda_device_count", "count", crate::cuda_device_count()?)
}

/// True when at least one CUDA device can be used; see [`device_count`] for why not.
pub fn is_available() -> bool {
    matches!(device_count(), Ok(n) if n > 0)
}

/// Name of device `device`, such as `"NVIDIA H100 80GB HBM3"`.
///
/// # Errors
///
/// [`Status::BackendUnavailable`] without CUDA; [`Status::InvalidArgument`]
/// when `device` is not below [`device_count`].
pub fn device_name(device: usize) -> Result<String> {
    crate::cuda_device_name(c_device("kb_cuda_device_name", device)?)
}

/// Compute capability of device `device` as `(major, minor)`, e.g. `(9, 0)`
/// for sm_90.
///
/// # Errors
///
/// As [`device_name`].
pub fn compute_capability(device: usize) -> Result<(u32, u32)> {
    const FUNC: &str = "kb_cuda_device_compute_capability";
    let cc: u32 = non_negative(FUNC, "capability", crate::cuda_device_compute_capability(c_device(FUNC, device)?)?)?;
    Ok((cc / 10, cc % 10))
}

/// Total memory of device `device` in bytes.
///
/// # Errors
///
/// As [`device_name`].
pub fn total_memory(device: usize) -> Result<u64> {
    const FUNC: &str = "kb_cuda_device_total_memory";
    non_negative(FUNC, "bytes", crate::cuda_device_total_memory(c_device(FUNC, device)?)?)
}

/// Memory of device `device` that is free now, in bytes.
///
/// # Errors
///
/// As [`device_name`].
pub fn free_memory(device: usize) -> Result<u64> {
    const FUNC: &str = "kb_cuda_device_free_memory";
    non_negative(FUNC, "bytes", crate::cuda_device_free_memory(c_device(FUNC, device)?)?)
}
