package kernelbridge

// Hand-written: QTensor, a [rows, cols] tensor in a storage format (Dtype),
// and the kernels taking one (LinearQ, EmbeddingQ, QuantizeQ, Dequantize).
// They derive the sizes of the generated LinearW, EmbeddingW, Quantize and
// Dequantize from the tensor, which carries its shape and format with its
// bytes, and check that the bytes fit the shape before any C call.

import (
	"strconv"
	"strings"
)

// QTensor is a [Rows, Cols] tensor stored as Type: Data holds its bytes in
// that format (kb_dtype_bytes(Type, Rows, Cols) of them, rows one after the
// other; see Dtype for the layouts).  Data is used in place, never copied:
// a slice of a memory-mapped GGUF file works as it is, whatever its
// alignment.  Make one with NewQTensor (which checks the byte count) or
// QuantizeQ; the functions taking a QTensor check it again, so a literal
// QTensor{...} is safe too.
type QTensor struct {
	// Type is the storage format (GGML's type number, as in a GGUF file).
	Type Dtype
	// Rows and Cols are the shape; the block formats (DtypeQ8_0,
	// DtypeQ4_0) need Cols to be a multiple of 32.
	Rows, Cols int
	// Data is the tensor's bytes.
	Data []byte
}

// DtypeBytes is the number of bytes of a [rows, cols] tensor stored as typ
// (kb_dtype_bytes): what to slice out of a GGUF file for it.  An unknown
// typ, a negative size or, for a block format, cols not a multiple of 32 is
// an *Error with Code InvalidArgument; a count that does not fit an int one
// with Code OutOfMemory.
func DtypeBytes(typ Dtype, rows, cols int) (int, error) {
	return dtypeBytes("DtypeBytes", "", typ, rows, cols)
}

// NewQTensor is the QTensor of data, a [rows, cols] tensor stored as typ.
// data is not copied.  An unknown typ, a negative size or, for a block
// format, cols not a multiple of 32 is an *Error with Code InvalidArgument
// naming it; len(data) other than DtypeBytes(typ, rows, cols) one with Code
// ShapeMismatch.
func NewQTensor(typ Dtype, rows, cols int, data []byte) (QTensor, error) {
	q := QTensor{Type: typ, Rows: rows, Cols: cols, Data: data}
	if err := q.check("NewQTensor", ""); err != nil {
		return QTensor{}, err
	}
	return q, nil
}

// dtypeBytes is DtypeBytes with the messages of fn; name, when not empty,
// is the QTensor argument the sizes are fields of ("w: cols must be ...").
func dtypeBytes(fn, name string, typ Dtype, rows, cols int) (int, error) {
	n, err := cDtypeBytes(typ, rows, cols)
	if e, ok := err.(*Error); ok {
		// The C message names type, rows or cols, the QTensor's fields;
		// in place of the C function it names the Go one and the argument.
		msg := strings.TrimPrefix(e.Msg, "kb_dtype_bytes: ")
		if name != "" {
			msg = name + ": " + msg
		}
		return 0, &Error{e.Code, fn + ": " + msg}
	}
	if err != nil {
		return 0, err
	}
	if int64(int(n)) != n {
		return 0, overflowError(fn, orData(name))
	}
	return int(n), nil
}

// check fails unless q's bytes are its shape in its format; name is q's in
// messages ("" for NewQTensor's arguments).
func (q QTensor) check(fn, name string) error {
	want, err := dtypeBytes(fn, name, q.Type, q.Rows, q.Cols)
	if err != nil {
		return err
	}
	if len(q.Data) != want {
		return &Error{ShapeMismatch, fn + ": len(" + orData(name) + ") is " + strconv.Itoa(len(q.Data)) +
			", want " + strconv.Itoa(want) + " for [" + strconv.Itoa(q.Rows) + ", " + strconv.Itoa(q.Cols) +
			"] as " + q.Type.String()}
	}
	return nil
}

// orData names the bytes of QTensor argument name ("data": NewQTensor's).
func orData(name string) string {
	if name == "" {
		return "data"
	}
	return name + ".Data"
}

// QuantizeQ converts x, a [rows, cols] float32 tensor, to a new QTensor
// stored as typ: GGML's reference quantization for the block formats, bit
// for bit; nearest-even rounding for DtypeF16 and DtypeBF16; a copy for
// DtypeF32 (see Quantize for the rules).  It runs on a pooled default
// context, as [Context] explains; see also [Context.QuantizeQ].
func QuantizeQ(typ Dtype, rows, cols int, x []float32) (QTensor, error) {
	ctx, err := defaultContext()
	if err != nil {
		return QTensor{}, err
	}
	q, err := ctx.QuantizeQ(typ, rows, cols, x)
	releaseDefault(ctx)
	return q, err
}

// QuantizeQ runs QuantizeQ on ctx.  Besides the errors of NewQTensor,
// len(x) other than rows*cols is an *Error with Code ShapeMismatch, and an
// element a block format cannot hold (not finite, or too large for the
// binary16 scale) one with Code InvalidArgument naming it (x[row, col]).
func (ctx *Context) QuantizeQ(typ Dtype, rows, cols int, x []float32) (QTensor, error) {
	const fn = "QuantizeQ"
	chk := ctx.checkSlices(fn)
	if chk.err != nil {
		return QTensor{}, chk.err
	}
	n, err := dtypeBytes(fn, "", typ, rows, cols)
	if err != nil {
		return QTensor{}, err
	}
	chk.length("x", len(x), chk.size("x", sizeOf(rows, cols)), "[rows, cols]")
	if chk.err != nil {
		return QTensor{}, chk.err
	}
	q := QTensor{Type: typ, Rows: rows, Cols: cols, Data: make([]byte, n)}
	if err := ctx.Quantize(typ, rows, cols, x, q.Data); err != nil {
		return QTensor{}, err
	}
	return q, nil
}

// Dequantize is q widened to float32, a new [q.Rows, q.Cols] slice: exact,
// every value of every format is a float32.  It runs on a pooled default
// context; see also [Context.DequantizeQ].  A QTensor whose bytes do not
// fit its shape is an *Error, as for NewQTensor.
func (q QTensor) Dequantize() ([]float32, error) {
	ctx, err := defaultContext()
	if err != nil {
		return nil, err
	}
	y, err := ctx.dequantizeQ("QTensor.Dequantize", q)
	releaseDefault(ctx)
	return y, err
}

// DequantizeQ runs q.Dequantize on ctx.
func (ctx *Context) DequantizeQ(q QTensor) ([]float32, error) {
	return ctx.dequantizeQ("DequantizeQ", q)
}

func (ctx *Context) dequantizeQ(fn string, q QTensor) ([]float32, error) {
	if err := ctx.checkOpen(fn); err != nil {
		return nil, err
	}
	if err := q.check(fn, "q"); err != nil {
		return nil, err
	}
	// The bytes exist, so the element count (at most 16/9 of them) fits.
	y := make([]float32, q.Rows*q.Cols)
	if err := ctx.Dequantize(q.Type, q.Rows, q.Cols, q.Data, y); err != nil {
		return nil, err
	}
	return y, nil
}

// LinearQ is LinearW with the weight a QTensor: y = act(x·wᵀ + bias) for x
// of rows×w.Cols float32 elements (rows = len(x)/w.Cols, any number of
// rows), w the [out_features, in_features] = [w.Rows, w.Cols] weight in its
// storage format, bias nil or of w.Rows elements, y of rows×w.Rows
// elements, written.  With w.Type DtypeF32 it is Linear bit for bit; see
// LinearW for the others.  It runs on a pooled default context, as
// [Context] explains; see also [Context.LinearQ].
func LinearQ(x []float32, w QTensor, bias []float32, act Activation, y []float32) error {
	ctx, err := defaultContext()
	if err == nil {
		err = ctx.LinearQ(x, w, bias, act, y)
		releaseDefault(ctx)
	}
	return err
}

// LinearQ runs LinearQ on ctx.  A w whose bytes do not fit its shape is an
// *Error naming w, as for NewQTensor; a len(x) that is not a multiple of
// w.Cols, or a bias or y of the wrong length, one with Code ShapeMismatch
// naming it.  Nothing is written on error.
func (ctx *Context) LinearQ(x []float32, w QTensor, bias []float32, act Activation, y []float32) error {
	const fn = "LinearQ"
	chk := ctx.checkSlices(fn)
	if chk.err != nil {
		return chk.err
	}
	if err := w.check(fn, "w"); err != nil {
		return err
	}
	// rows is read from x; with no input features (w.Cols == 0, a layer
	// that is its bias), from y.
	rows := 0
	switch {
	case w.Cols > 0:
		rows = len(x) / w.Cols
		if len(x)%w.Cols != 0 {
			return &Error{ShapeMismatch, fn + ": len(x) is " + strconv.Itoa(len(x)) +
				", not a multiple of w.Cols = " + strconv.Itoa(w.Cols) + " for shape [rows, w.Cols]"}
		}
	case w.Rows > 0:
		rows = len(y) / w.Rows
	}
	chk.length("x", len(x), rows*w.Cols, "[rows, w.Cols]")
	chk.length("bias", optLen(bias), w.Rows, "[w.Rows]")
	chk.length("y", len(y), chk.size("y", sizeOf(rows, w.Rows)), "[rows, w.Rows]")
	if chk.err != nil {
		return chk.err
	}
	return ctx.LinearW(rows, w.Cols, w.Rows, x, w.Type, w.Data, bias, act, y)
}

// EmbeddingQ is EmbeddingW with the table a QTensor: row ids[i] of the
// [vocab, dim] = [table.Rows, table.Cols] table, widened to float32 exactly,
// is written to out[i*table.Cols:(i+1)*table.Cols]; out has
// len(ids)×table.Cols elements.  It runs on a pooled default context, as
// [Context] explains; see also [Context.EmbeddingQ].
func EmbeddingQ(ids []int32, table QTensor, out []float32) error {
	ctx, err := defaultContext()
	if err == nil {
		err = ctx.EmbeddingQ(ids, table, out)
		releaseDefault(ctx)
	}
	return err
}

// EmbeddingQ runs EmbeddingQ on ctx.  A table whose bytes do not fit its
// shape is an *Error naming table, as for NewQTensor; an out of the wrong
// length one with Code ShapeMismatch; an id outside [0, table.Rows) one
// with Code InvalidArgument naming it (ids[i]).  Every id is checked before
// anything is written.
func (ctx *Context) EmbeddingQ(ids []int32, table QTensor, out []float32) error {
	const fn = "EmbeddingQ"
	chk := ctx.checkSlices(fn)
	if chk.err != nil {
		return chk.err
	}
	if err := table.check(fn, "table"); err != nil {
		return err
	}
	chk.length("out", len(out), chk.size("out", sizeOf(len(ids), table.Cols)), "[len(ids), table.Cols]")
	if chk.err != nil {
		return chk.err
	}
	return ctx.EmbeddingW(table.Rows, table.Cols, ids, table.Type, table.Data, out)
}
