"""Text generation from a GGUF model on kernelbridge's kernels (the Python
version of examples/text_generation; see ../../README.md)."""
