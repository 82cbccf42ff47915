package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	ops "github.com/pipecast/pipecast/tensor/internal/transformerops"
)

// TestTransformerKernelsMatchHostLoops runs the CPU backend's transformer
// kernels (attention aside) on 1, 2 and 3 threads against the loops of
// package transformerops run whole on copies, as package tensor's host
// fallback runs them: every output bit for bit, since the kernels share
// rows and columns out without changing any value's operations or their
// order. The suite (tensortest) checks the same kernels against the
// float64 references; this checks that sharing them out is exact, on
// shapes that split into uneven ranges by rows and by columns.
func TestTransformerKernelsMatchHostLoops(t *testing.T) {
	for _, threads := range []int{1, 2, 3} {
		for _, shape := range [][2]int{{1, 1}, {7, 5}, {64, 771}, {300, 130}} {
			t.Run(fmt.Sprintf("threads=%d/%dx%d", threads, shape[0], shape[1]), func(t *testing.T) {
				d := New(tensor.Options{Threads: threads})
				defer d.Close()
				testTransformerRowsExact(t, d, shape[0], shape[1])
			})
		}
	}
}

func testTransformerRowsExact(t *testing.T, d *Device, n, dim int) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
	host := func(t *tensor.Tensor) []float32 { return append([]float32(nil), Data(t)...) }
	alloc := func(shape ...int) *tensor.Tensor { return d.Alloc(tensor.Activations, shape...) }
	x, dy, gamma, beta := randTensor(d, rng, n, dim), randTensor(d, rng, n, dim), randTensor(d, rng, dim), randTensor(d, rng, dim)

	// Embedding, with a vocabulary small enough that tokens repeat.
	const vocab = 13
	ids := alloc(n)
	for i := range Data(ids) {
		Data(ids)[i] = float32(rng.IntN(vocab))
	}
	table := randTensor(d, rng, vocab, dim)
	y := alloc(n, dim)
	d.EmbeddingForward(ids, table, y)
	want := make([]float32, n*dim)
	ops.EmbeddingForward(host(ids), host(table), want, dim)
	sameBits(t, "embedding y", Data(y), want)
	want = host(table)
	ops.EmbeddingBackward(host(ids), host(dy), want, dim, 0, dim)
	d.EmbeddingBackward(ids, dy, table)
	sameBits(t, "embedding dtable", Data(table), want)

	// LayerNorm, its backward into parameter gradients holding values.
	mean, rstd := alloc(n), alloc(n)
	d.LayerNormForward(x, gamma, beta, y, mean, rstd, 1e-5)
	wy, wm, wr := make([]float32, n*dim), make([]float32, n), make([]float32, n)
	ops.LayerNormForward(host(x), host(gamma), host(beta), wy, wm, wr, dim, 1e-5, 0, n)
	sameBits(t, "layer norm y", Data(y), wy)
	sameBits(t, "layer norm mean", Data(mean), wm)
	sameBits(t, "layer norm rstd", Data(rstd), wr)
	dx, dgamma, dbeta := alloc(n, dim), randTensor(d, rng, dim), randTensor(d, rng, dim)
	wdx, wdg, wdb := make([]float32, n*dim), host(dgamma), host(dbeta)
	ops.LayerNormBackward(host(x), host(dy), host(gamma), wm, wr, wdx, wdg, wdb, dim, n)
	d.LayerNormBackward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta)
	sameBits(t, "layer norm dx", Data(dx), wdx)
	sameBits(t, "layer norm dgamma", Data(dgamma), wdg)
	sameBits(t, "layer norm dbeta", Data(dbeta), wdb)

	// RMSNorm.
	d.RMSNormForward(x, gamma, y, rstd, 1e-6)
	ops.RMSNormForward(host(x), host(gamma), wy, wr, dim, 1e-6, 0, n)
	sameBits(t, "rms norm y", Data(y), wy)
	sameBits(t, "rms norm rstd", Data(rstd), wr)
	wdg = host(dgamma)
	ops.RMSNormBackward(host(x), host(dy), host(gamma), wr, wdx, wdg, dim, n)
	d.RMSNormBackward(x, dy, gamma, rstd, dx, dgamma)
	sameBits(t, "rms norm dx", Data(dx), wdx)
	sameBits(t, "rms norm dgamma", Data(dgamma), wdg)

	// The activations, x as GELU's input and SwiGLU's gate.
	d.GELUTanhForward(x, y)
	ops.GELUTanhForward(host(x), wy)
	sameBits(t, "gelu y", Data(y), wy)
	d.GELUTanhBackward(x, dy, dx)
	ops.GELUTanhBackward(host(x), host(dy), wdx)
	sameBits(t, "gelu dx", Data(dx), wdx)
	up := randTensor(d, rng, n, dim)
	d.SwiGLUForward(x, up, y)
	ops.SwiGLUForward(host(x), host(up), wy)
	sameBits(t, "swiglu y", Data(y), wy)
	dup, wdup := alloc(n, dim), make([]float32, n*dim)
	d.SwiGLUBackward(x, up, dy, dx, dup)
	ops.SwiGLUBackward(host(x), host(up), host(dy), wdx, wdup)
	sameBits(t, "swiglu dgate", Data(dx), wdx)
	sameBits(t, "swiglu dup", Data(dup), wdup)

	// RoPE on two sequences of n tokens of 3 heads of 2·dim values, in
	// place.
	q := randTensor(d, rng, 2, n, 3, 2*dim)
	p := tensor.RoPEParams{Seq: n, Heads: 3, HeadDim: 2 * dim, Theta: 10000}
	wq := make([]float32, q.Len())
	ops.RoPE(host(q), wq, ops.RoPESizes{Seq: n, Heads: 3, HeadDim: 2 * dim, Theta: 10000}, 0, 2*n)
	d.RoPE(q, q, p)
	sameBits(t, "rope y", Data(q), wq)

	for _, tt := range []*tensor.Tensor{x, dy, gamma, beta, ids, table, y, mean, rstd, dx, dgamma, dbeta, up, dup, q} {
		tt.Release()
	}
}
