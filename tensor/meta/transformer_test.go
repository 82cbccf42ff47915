package meta_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/meta"
)

// TestTransformerRowKernels runs every transformer kernel but attention
// on well-shaped meta tensors: none counts a MAC or holds memory beyond
// the tensors themselves. Then each panics on one mismatched shape.
func TestTransformerRowKernels(t *testing.T) {
	d := meta.New()
	defer d.Close()
	const n, dim, vocab = 6, 5, 11
	a := func(shape ...int) *tensor.Tensor { return d.Alloc(tensor.Activations, shape...) }
	x, y, dx, dy := a(2, 3, dim), a(2, 3, dim), a(2, 3, dim), a(2, 3, dim)
	ids, stat, vec := a(2, 3), a(n), a(dim)
	table := a(vocab, dim)
	rope := tensor.RoPEParams{Seq: 3, Heads: 1, HeadDim: 4, Theta: 10000}
	q := a(2, 3, 1, 4)
	live := d.Memory().LiveTotalBytes
	peak := d.Memory().PeakTotalBytes

	d.EmbeddingForward(ids, table, y)
	d.EmbeddingBackward(ids, dy, table)
	d.LayerNormForward(x, vec, vec, y, stat, stat, 1e-5)
	d.LayerNormBackward(x, dy, vec, stat, stat, dx, vec, vec)
	d.LayerNormBackward(x, dy, vec, stat, stat, nil, vec, vec)
	d.RMSNormForward(x, vec, y, stat, 1e-6)
	d.RMSNormBackward(x, dy, vec, stat, nil, vec)
	d.GELUTanhForward(x, y)
	d.GELUTanhBackward(x, dy, dx)
	d.SwiGLUForward(x, dy, y)
	d.SwiGLUBackward(x, dy, y, dx, nil)
	d.RoPE(q, q, rope)
	if got := d.MACs(); got != 0 {
		t.Errorf("MACs: got %d, want 0", got)
	}
	if m := d.Memory(); m.LiveTotalBytes != live || m.PeakTotalBytes != peak {
		t.Errorf("memory: live %d and peak %d bytes, want %d and %d", m.LiveTotalBytes, m.PeakTotalBytes, live, peak)
	}

	short := a(dim - 1)
	tests := []struct {
		name string
		fn   func()
	}{
		{"embedding rows of another width", func() { d.EmbeddingForward(ids, a(vocab, dim+1), y) }},
		{"layer norm beta too short", func() { d.LayerNormForward(x, vec, short, y, stat, stat, 1e-5) }},
		{"layer norm statistics too short", func() { d.LayerNormForward(x, vec, vec, y, short, stat, 1e-5) }},
		{"layer norm dgamma too short", func() { d.LayerNormBackward(x, dy, vec, stat, stat, dx, short, vec) }},
		{"rms norm gamma not dividing x", func() { d.RMSNormForward(x, a(4), y, stat, 1e-6) }},
		{"rms norm dx of another shape", func() { d.RMSNormBackward(x, dy, vec, stat, a(6, dim), vec) }},
		{"gelu y of another shape", func() { d.GELUTanhForward(x, a(6, dim)) }},
		{"swiglu dup of another shape", func() { d.SwiGLUBackward(x, dy, y, nil, a(6, dim)) }},
		{"rope of odd head width", func() { d.RoPE(q, q, tensor.RoPEParams{Seq: 3, Heads: 2, HeadDim: 3, Theta: 1}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			tc.fn()
		})
	}
}
