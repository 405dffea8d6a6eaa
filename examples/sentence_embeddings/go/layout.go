package main

// layout: where the tokens of a batch live.  n packed rows (sentence after
// sentence, real tokens only) and b*s padded rows (sentence r's token j at
// row r*s + j; s is the longest sentence).
type layout struct {
	b, s, n   int
	lengths   []int32 // tokens per sentence
	offsets   []int   // first packed row of each sentence
	ids       []int32 // packed token ids
	positions []int32 // packed positions
	toPadded  []int32 // padded row -> packed row
	toPacked  []int32 // packed row -> padded row
}

func newLayout(batch [][]int32) *layout {
	l := &layout{b: len(batch), lengths: make([]int32, len(batch)), offsets: make([]int, len(batch))}
	for r, ids := range batch {
		l.lengths[r] = int32(len(ids))
		l.offsets[r] = l.n
		l.n += len(ids)
		if len(ids) > l.s {
			l.s = len(ids)
		}
	}
	l.ids = make([]int32, 0, l.n)
	l.positions = make([]int32, 0, l.n)
	l.toPacked = make([]int32, 0, l.n)
	l.toPadded = make([]int32, l.b*l.s)
	for r, ids := range batch {
		l.ids = append(l.ids, ids...)
		for j := 0; j < l.s; j++ {
			if j < len(ids) {
				l.positions = append(l.positions, int32(j))
				l.toPacked = append(l.toPacked, int32(r*l.s+j))
				l.toPadded[r*l.s+j] = int32(l.offsets[r] + j)
			} else {
				// A padding row copies its sentence's first token: any real row
				// will do, attention ignores it and nothing reads its result.
				l.toPadded[r*l.s+j] = int32(l.offsets[r])
			}
		}
	}
	return l
}

// pooling: [b, n]; row r holds float32(1 / lengths[r]) over its own tokens
// and 0 elsewhere.
func (l *layout) pooling() []float32 {
	p := make([]float32, l.b*l.n)
	for r, n := range l.lengths {
		inv := float32(1.0 / float64(n))
		row := p[r*l.n+l.offsets[r] : r*l.n+l.offsets[r]+int(n)]
		for i := range row {
			row[i] = inv
		}
	}
	return p
}
