package tensor

import (
	"math"
	"testing"
)

// TestFirstNonFiniteIn checks the chunked screen against testing every
// value: a NaN, +Inf or −Inf at every position of slices around the
// chunk and unroll sizes, the largest finite values and subnormals
// (which must pass), and the first of several.
func TestFirstNonFiniteIn(t *testing.T) {
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001)}
	for _, n := range []int{0, 1, 3, 4, 5, FiniteChunk - 1, FiniteChunk, FiniteChunk + 3, 3*FiniteChunk + 2} {
		vals := make([]float32, n)
		for i := range vals {
			switch i % 4 {
			case 0:
				vals[i] = math.MaxFloat32
			case 1:
				vals[i] = -math.MaxFloat32
			case 2:
				vals[i] = math.SmallestNonzeroFloat32
			default:
				vals[i] = float32(i) - 0.5
			}
		}
		if got := FirstNonFiniteIn(vals); got != -1 {
			t.Fatalf("n=%d, all finite: got %d, want -1", n, got)
		}
		for pos := 0; pos < n; pos += max(1, n/37) {
			for _, b := range bad {
				keep := append([]float32(nil), vals...)
				vals[pos] = b
				if pos+2 < n {
					vals[pos+2] = b // a later one must not win
				}
				if got := FirstNonFiniteIn(vals); got != pos {
					t.Errorf("n=%d, %v at %d: got %d", n, b, pos, got)
				}
				copy(vals, keep)
			}
		}
	}
}

// BenchmarkFirstNonFiniteIn screens 1 Mi finite values.
func BenchmarkFirstNonFiniteIn(b *testing.B) {
	vals := make([]float32, 1<<20)
	for i := range vals {
		vals[i] = float32(i)
	}
	b.SetBytes(int64(len(vals)) * 4)
	for b.Loop() {
		if FirstNonFiniteIn(vals) != -1 {
			b.Fatal("finite values reported")
		}
	}
}
