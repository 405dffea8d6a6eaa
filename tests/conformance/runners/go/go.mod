module kernelbridge.dev/go/conformance

go 1.19

require kernelbridge.dev/go/kernelbridge v0.0.0

replace kernelbridge.dev/go/kernelbridge => ../../../../bindings/go
