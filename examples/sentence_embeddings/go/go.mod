module kernelbridge.dev/examples/sentence_embeddings

go 1.19

require kernelbridge.dev/go/kernelbridge v0.0.0

replace kernelbridge.dev/go/kernelbridge => ../../../bindings/go
