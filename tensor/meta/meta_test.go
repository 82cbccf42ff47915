package meta_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/meta"
)

func TestAccounting(t *testing.T) {
	d := meta.New()
	x := d.Alloc(tensor.Activations, 2, 3, 5, 5)
	w := d.Alloc(tensor.Weights, 4, 3, 3, 3)
	if got, want := d.Memory().LiveTotalBytes, int64(4*(150+108)); got != want {
		t.Errorf("live bytes: got %d, want %d", got, want)
	}
	out := make([]float32, x.Len())
	out[0] = 7
	d.Download(out, x)
	if out[0] != 0 {
		t.Errorf("Download: got %v, want zeros", out[0])
	}
	x.Release()
	w.Release()
	if got := d.Memory().LiveTotalBytes; got != 0 {
		t.Errorf("live bytes after release: got %d, want 0", got)
	}
}

func TestMACs(t *testing.T) {
	d := meta.New()
	p := tensor.Conv2DParams{StrideH: 2, StrideW: 1, PadH: 1, PadW: 0}
	x := d.Alloc(tensor.Activations, 2, 3, 9, 7)
	w := d.Alloc(tensor.Weights, 5, 3, 3, 3)
	oh, ow := p.OutSize(9, 7, 3, 3) // 5×5
	y := d.Alloc(tensor.Activations, 2, 5, oh, ow)
	d.Conv2DForward(x, w, nil, y, p)
	if got, want := d.MACs(), int64(2*5*oh*ow*3*3*3); got != want {
		t.Errorf("conv MACs: got %d, want %d", got, want)
	}
	a := d.Alloc(tensor.Activations, 4, 6)
	lw := d.Alloc(tensor.Weights, 3, 6)
	ly := d.Alloc(tensor.Activations, 4, 3)
	before := d.MACs()
	d.LinearForward(a, lw, nil, ly)
	if got, want := d.MACs()-before, int64(4*3*6); got != want {
		t.Errorf("linear MACs: got %d, want %d", got, want)
	}
	before = d.MACs()
	d.Gemm(true, false, 1, a, a, 0, d.Alloc(tensor.Workspace, 6, 6))
	if got, want := d.MACs()-before, int64(6*6*4); got != want {
		t.Errorf("gemm MACs: got %d, want %d", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("conv with mismatched output: no panic")
		}
	}()
	d.Conv2DForward(x, w, nil, d.Alloc(tensor.Activations, 2, 5, oh+1, ow), p)
}

func TestCapabilities(t *testing.T) {
	d, err := tensor.Open(tensor.MetaBackend, tensor.Options{Index: 2, Threads: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !tensor.IsSymbolic(d) {
		t.Error("a meta device is not symbolic")
	}
	if _, ok := d.(tensor.MACCounter); !ok {
		t.Error("a meta device counts no multiply-accumulates")
	}
	if got, want := d.Name(), "meta:2"; got != want {
		t.Errorf("name: got %q, want %q", got, want)
	}
	if got, want := d.Backend(), meta.BackendName; got != want {
		t.Errorf("backend: got %q, want %q", got, want)
	}
}
