module kernelbridge.dev/go/kernelbridge

go 1.19
