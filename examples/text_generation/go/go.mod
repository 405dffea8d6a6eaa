module kernelbridge.dev/examples/text_generation

go 1.19

require kernelbridge.dev/go/kernelbridge v0.0.0

replace kernelbridge.dev/go/kernelbridge => ../../../bindings/go
