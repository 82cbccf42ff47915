package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// rowsCase is one band of rows: rows rows of n values, ds apart in the
// destination and ss apart in the source.
type rowsCase struct{ rows, n, ds, ss int }

func rowsCases() []rowsCase {
	var cs []rowsCase
	for n := 1; n <= 40; n++ {
		for _, rows := range []int{1, 2, 5} {
			cs = append(cs, rowsCase{rows, n, n, n}, rowsCase{rows, n, n + 3, n}, rowsCase{rows, n, n, n + 7})
		}
	}
	return cs
}

// checkRows runs move (addRows, copyRows or an assembly loop) on every
// case and compares the destination, values between and after the rows
// included, with want's loop on a copy, bit for bit.
func checkRows(t *testing.T, name string, move func(dst []float32, ds int, src []float32, ss int, rows, n int), add bool) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range rowsCases() {
		// The rows end where the slices end, so a tail that read or
		// wrote past its row would fault or show.
		dst := make([]float32, (c.rows-1)*c.ds+c.n)
		src := make([]float32, (c.rows-1)*c.ss+c.n)
		for i := range dst {
			dst[i] = float32(rng.NormFloat64())
		}
		for i := range src {
			src[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), dst...)
		for r := range c.rows {
			for q := range c.n {
				if add {
					want[r*c.ds+q] += src[r*c.ss+q]
				} else {
					want[r*c.ds+q] = src[r*c.ss+q]
				}
			}
		}
		move(dst, c.ds, src, c.ss, c.rows, c.n)
		for i := range want {
			if math.Float32bits(dst[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s %+v: dst[%d] = %v, want %v", name, c, i, dst[i], want[i])
			}
		}
	}
}

func TestAddCopyRows(t *testing.T) {
	checkRows(t, "addRows", addRows, true)
	checkRows(t, "copyRows", copyRows, false)
}

func TestRowsBounds(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("addRows past the end of dst did not panic")
		}
	}()
	addRows(make([]float32, 10), 4, make([]float32, 20), 4, 3, 4)
}
