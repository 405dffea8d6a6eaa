package kernelbridge

// AttentionOptions describe one kb_attention_ex call for
// [Context.AttentionWith]: shapes, layout, key lengths, an additive mask and
// causal alignment.  The zero values are the defaults: head-major layout
// ([batch, heads, seq, head_dim]), every key taking part, no mask, not
// causal, scale 1/sqrt(HeadDim).
type AttentionOptions struct {
	// Shapes; query head h reads key/value head h / (Heads / KVHeads).
	Batch, Heads, KVHeads, SeqQ, SeqKV, HeadDim int
	// SeqMajor: q, k, v and out are [batch, seq, heads, head_dim], the
	// layout of a linear layer's [batch, seq, heads*head_dim] output.
	SeqMajor bool
	// KVLengths, when not nil: keys j < KVLengths[b] take part for batch row
	// b (one per batch row, each in [0, SeqKV]).
	KVLengths []int32
	// Mask, when not nil: added to the scaled scores, laid out
	// [MaskBatch, MaskHeads, MaskQ, SeqKV] and broadcast over its dimensions
	// of size 1 (each 1 or Batch, Heads, SeqQ; 0 is read as 1); -Inf
	// removes a key.  Mask16 is the mask of the 16-bit variants (bit
	// patterns in the kernel's format).
	Mask                        []float32
	Mask16                      []uint16
	MaskBatch, MaskHeads, MaskQ int
	// Causal: query i sees keys j <= i (top-left, PyTorch's is_causal);
	// with CausalBottomRight too, j <= i + L - SeqQ for a row of L keys (the
	// KV-cache alignment, FlashAttention's).  CausalBottomRight without
	// Causal is an InvalidArgument error.
	Causal, CausalBottomRight bool
	// Scale of the scores; 0 means 1/sqrt(HeadDim).
	Scale float32
}

func (o *AttentionOptions) maskDims() (int, int, int) {
	one := func(v int) int {
		if v == 0 {
			return 1
		}
		return v
	}
	return one(o.MaskBatch), one(o.MaskHeads), one(o.MaskQ)
}

// AttentionWith runs kb_attention_ex on ctx with the options o; a query row
// left without keys gives zeros.  Slice lengths are checked before the call
// (ShapeMismatch naming the argument), everything else by the library;
// nothing is written on error.
func (ctx *Context) AttentionWith(o *AttentionOptions, q, k, v, out []float32) error {
	mb, mh, mq := o.maskDims()
	return ctx.AttentionEx(o.Batch, o.Heads, o.KVHeads, o.SeqQ, o.SeqKV, o.HeadDim, o.SeqMajor, q, k, v,
		o.KVLengths, mb, mh, mq, o.Mask, o.Causal, o.CausalBottomRight, o.Scale, out)
}

// AttentionWithBF16 is AttentionWith for bfloat16 bit patterns (the mask
// is o.Mask16).
func (ctx *Context) AttentionWithBF16(o *AttentionOptions, q, k, v, out []uint16) error {
	mb, mh, mq := o.maskDims()
	return ctx.AttentionExBF16(o.Batch, o.Heads, o.KVHeads, o.SeqQ, o.SeqKV, o.HeadDim, o.SeqMajor, q, k, v,
		o.KVLengths, mb, mh, mq, o.Mask16, o.Causal, o.CausalBottomRight, o.Scale, out)
}

// AttentionWithF16 is AttentionWith for IEEE binary16 bit patterns (the
// mask is o.Mask16).
func (ctx *Context) AttentionWithF16(o *AttentionOptions, q, k, v, out []uint16) error {
	mb, mh, mq := o.maskDims()
	return ctx.AttentionExF16(o.Batch, o.Heads, o.KVHeads, o.SeqQ, o.SeqKV, o.HeadDim, o.SeqMajor, q, k, v,
		o.KVLengths, mb, mh, mq, o.Mask16, o.Causal, o.CausalBottomRight, o.Scale, out)
}

// AttentionWith runs [Context.AttentionWith] on a pooled default context
// (safe for concurrent use).
func AttentionWith(o *AttentionOptions, q, k, v, out []float32) error {
	ctx, err := defaultContext()
	if err != nil {
		return err
	}
	err = ctx.AttentionWith(o, q, k, v, out)
	releaseDefault(ctx)
	return err
}
