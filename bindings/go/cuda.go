package kernelbridge

// CUDA device queries.  The CUDA kernels live in a separate library,
// libkernelbridge_cuda.so, that the C library loads with dlopen the first
// time CUDA is asked for (search order: the full path in $KB_CUDA_LIBRARY,
// the directory of the program or library holding kernelbridge, the system
// search path); the Go package never links CUDA.  Without a usable backend
// (library, NVIDIA driver or device missing) every function here fails with
// Code BackendUnavailable and a message saying which part is missing.  Their
// messages are per OS thread in C; the generated wrappers read them inside
// the failing cgo call.

// CUDADeviceCount is the number of CUDA devices kernelbridge can use
// (kernels need compute capability 8.0 or newer).
func CUDADeviceCount() (int, error) {
	n, err := cCUDADeviceCount()
	return int(n), err
}

// CUDADeviceName is the name of CUDA device `device`, such as
// "NVIDIA H100 80GB HBM3".
func CUDADeviceName(device int) (string, error) {
	return cCUDADeviceName(int64(device))
}

// CUDAComputeCapability is the compute capability of CUDA device `device`
// (8, 0 for sm_80; 9, 0 for sm_90).
func CUDAComputeCapability(device int) (major, minor int, err error) {
	cc, err := cCUDADeviceComputeCapability(int64(device))
	if err != nil {
		return 0, 0, err
	}
	return int(cc / 10), int(cc % 10), nil
}

// CUDATotalMemory is the total memory of CUDA device `device` in bytes.
func CUDATotalMemory(device int) (int64, error) {
	return cCUDADeviceTotalMemory(int64(device))
}

// CUDAFreeMemory is the memory of CUDA device `device` that is free now, in
// bytes.
func CUDAFreeMemory(device int) (int64, error) {
	return cCUDADeviceFreeMemory(int64(device))
}
