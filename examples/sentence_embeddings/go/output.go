package main

// Printing numbers the same way in every language: fixed decimals, rounded
// half to even from the float32 value (README, "Output").

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

func fixed(value float32, decimals int) string {
	v := float64(value)
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	scale := int64(1)
	for i := 0; i < decimals; i++ {
		scale *= 10
	}
	n := int64(math.RoundToEven(v * float64(scale)))
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	return fmt.Sprintf("%s%d.%0*d", sign, n/scale, decimals, n%scale)
}

func similarityTable(texts []string, sim []float32) string {
	n := len(texts)
	var b strings.Builder
	b.WriteString("cosine similarity\n     ")
	for j := 0; j < n; j++ {
		fmt.Fprintf(&b, "%8d", j)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\n%5d", i)
		for j := 0; j < n; j++ {
			fmt.Fprintf(&b, "%8s", fixed(sim[i*n+j], 4))
		}
	}
	for i, t := range texts {
		fmt.Fprintf(&b, "\n%5d  %s", i, t)
	}
	return b.String()
}

func embeddingLines(emb []float32, hidden int) string {
	var b strings.Builder
	for r := 0; r*hidden < len(emb); r++ {
		if r > 0 {
			b.WriteByte('\n')
		}
		for j, v := range emb[r*hidden : (r+1)*hidden] {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(fixed(v, 6))
		}
	}
	return b.String()
}

func tokenLines(ids [][]int32) string {
	var b strings.Builder
	for r, row := range ids {
		if r > 0 {
			b.WriteByte('\n')
		}
		for j, id := range row {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.Itoa(int(id)))
		}
	}
	return b.String()
}
