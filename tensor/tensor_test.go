package tensor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

func TestShapeNumel(t *testing.T) {
	tests := []struct {
		name  string
		shape tensor.Shape
		want  int
	}{
		{name: "scalar", shape: tensor.Shape{}, want: 1},
		{name: "nil is a scalar", shape: nil, want: 1},
		{name: "vector", shape: tensor.Shape{7}, want: 7},
		{name: "image batch", shape: tensor.Shape{2, 3, 224, 224}, want: 2 * 3 * 224 * 224},
		{name: "zero dimension", shape: tensor.Shape{4, 0, 5}, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.shape.Numel(); got != tc.want {
				t.Errorf("%v.Numel(): got %d, want %d", tc.shape, got, tc.want)
			}
		})
	}
}

func TestShapeEqual(t *testing.T) {
	tests := []struct {
		name string
		a, b tensor.Shape
		want bool
	}{
		{name: "same", a: tensor.Shape{2, 3}, b: tensor.Shape{2, 3}, want: true},
		{name: "both scalars", a: tensor.Shape{}, b: nil, want: true},
		{name: "other dimension", a: tensor.Shape{2, 3}, b: tensor.Shape{2, 4}, want: false},
		{name: "transposed", a: tensor.Shape{2, 3}, b: tensor.Shape{3, 2}, want: false},
		{name: "other rank, same numel", a: tensor.Shape{6}, b: tensor.Shape{2, 3}, want: false},
		{name: "prefix", a: tensor.Shape{2, 3}, b: tensor.Shape{2, 3, 1}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Equal(tc.b); got != tc.want {
				t.Errorf("%v.Equal(%v): got %t, want %t", tc.a, tc.b, got, tc.want)
			}
			if got := tc.b.Equal(tc.a); got != tc.want {
				t.Errorf("%v.Equal(%v): got %t, want %t (not symmetric)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestShapeValid(t *testing.T) {
	tests := []struct {
		name  string
		shape tensor.Shape
		want  bool
	}{
		{name: "scalar", shape: tensor.Shape{}, want: true},
		{name: "positive", shape: tensor.Shape{1, 2, 3}, want: true},
		{name: "zero", shape: tensor.Shape{2, 0}, want: false},
		{name: "negative", shape: tensor.Shape{-1, 4}, want: false},
		{name: "negative pair with positive product", shape: tensor.Shape{-2, -3}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.shape.Valid(); got != tc.want {
				t.Errorf("%v.Valid(): got %t, want %t", tc.shape, got, tc.want)
			}
		})
	}
}

func TestShapeString(t *testing.T) {
	tests := []struct {
		name  string
		shape tensor.Shape
		want  string
	}{
		{name: "scalar", shape: tensor.Shape{}, want: "[]"},
		{name: "vector", shape: tensor.Shape{5}, want: "[5]"},
		{name: "image batch", shape: tensor.Shape{2, 3, 224, 224}, want: "[2 3 224 224]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.shape.String(); got != tc.want {
				t.Errorf("String(): got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestShapeClone(t *testing.T) {
	s := tensor.Shape{2, 3}
	c := s.Clone()
	c[0] = 9
	if s[0] != 2 {
		t.Errorf("Clone shares memory: changing the clone changed the original to %v", s)
	}
}

func TestNanotimeMonotonic(t *testing.T) {
	prev := tensor.Nanotime()
	if prev < 0 {
		t.Fatalf("Nanotime: got %d, want ≥ 0 (time since the process's epoch)", prev)
	}
	for i := 0; i < 10000; i++ {
		now := tensor.Nanotime()
		if now < prev {
			t.Fatalf("Nanotime went backwards: %d after %d", now, prev)
		}
		prev = now
	}
	const pause = 2 * time.Millisecond
	start := tensor.Nanotime()
	time.Sleep(pause)
	if got := tensor.Nanotime() - start; got < int64(pause) {
		t.Errorf("Nanotime advanced %d ns across a %v sleep, want ≥ %d", got, pause, int64(pause))
	}
}

// newCPU opens a one-thread CPU device and closes it when the test ends,
// failing the test if it leaked memory.
func newCPU(t *testing.T) *cpu.Device {
	t.Helper()
	d := cpu.New(tensor.Options{Threads: 1})
	t.Cleanup(func() {
		if live := d.Memory().LiveTotalBytes; live != 0 {
			t.Errorf("%d bytes still live at the end of the test", live)
		}
		d.Close()
	})
	return d
}

func iota32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(i)
	}
	return s
}

func TestTensorAccessors(t *testing.T) {
	d := newCPU(t)
	x := tensor.FromHost(d, tensor.Activations, tensor.Shape{2, 3, 4}, iota32(24))
	defer x.Release()
	if x.Rank() != 3 || x.Dim(0) != 2 || x.Dim(2) != 4 || x.Len() != 24 || x.Bytes() != 96 {
		t.Errorf("got rank %d, dims %d,%d, len %d, bytes %d; want 3, 2,4, 24, 96", x.Rank(), x.Dim(0), x.Dim(2), x.Len(), x.Bytes())
	}
	if x.Device() != tensor.Device(d) || x.Category() != tensor.Activations || x.Offset() != 0 {
		t.Errorf("got device %v, category %v, offset %d", x.Device().Name(), x.Category(), x.Offset())
	}
	if s := x.Storage(); s.Len() != 24 || s.Bytes() != 96 || s.Device() != tensor.Device(d) || s.Category() != tensor.Activations {
		t.Errorf("storage: got len %d, bytes %d, category %v", s.Len(), s.Bytes(), s.Category())
	}
	if got, want := x.String(), "tensor[2 3 4] on cpu:0 (activations)"; got != want {
		t.Errorf("String(): got %q, want %q", got, want)
	}
	got := tensor.ToHost(x)
	for i, v := range got {
		if v != float32(i) {
			t.Fatalf("ToHost(FromHost(data))[%d]: got %v, want %v", i, v, float32(i))
		}
	}
	shape := tensor.Shape{2, 3, 4}
	x2 := tensor.FromHost(d, tensor.Weights, shape, iota32(24))
	shape[0] = 5
	if x2.Dim(0) != 2 {
		t.Errorf("the tensor shares its shape with the caller's slice: dim 0 became %d", x2.Dim(0))
	}
	x2.Release()
}

func TestTensorViews(t *testing.T) {
	d := newCPU(t)
	x := tensor.FromHost(d, tensor.Activations, tensor.Shape{4, 2, 3}, iota32(24))
	tests := []struct {
		name      string
		view      func() *tensor.Tensor
		wantShape tensor.Shape
		wantOff   int
		wantFirst float32
	}{
		{name: "slice of rows", view: func() *tensor.Tensor { return x.Slice(1, 3) }, wantShape: tensor.Shape{2, 2, 3}, wantOff: 6, wantFirst: 6},
		{name: "last row", view: func() *tensor.Tensor { return x.Slice(3, 4) }, wantShape: tensor.Shape{1, 2, 3}, wantOff: 18, wantFirst: 18},
		{name: "whole", view: func() *tensor.Tensor { return x.Slice(0, 4) }, wantShape: tensor.Shape{4, 2, 3}, wantOff: 0, wantFirst: 0},
		{name: "slice of a slice adds offsets", view: func() *tensor.Tensor {
			s := x.Slice(1, 4)
			defer s.Release()
			return s.Slice(1, 2)
		}, wantShape: tensor.Shape{1, 2, 3}, wantOff: 12, wantFirst: 12},
		{name: "reshape", view: func() *tensor.Tensor { return x.Reshape(8, 3) }, wantShape: tensor.Shape{8, 3}, wantOff: 0, wantFirst: 0},
		{name: "slice of a reshape", view: func() *tensor.Tensor {
			r := x.Reshape(8, 3)
			defer r.Release()
			return r.Slice(5, 7)
		}, wantShape: tensor.Shape{2, 3}, wantOff: 15, wantFirst: 15},
		{name: "reshape of a slice keeps its offset", view: func() *tensor.Tensor {
			s := x.Slice(2, 4)
			defer s.Release()
			return s.Reshape(12)
		}, wantShape: tensor.Shape{12}, wantOff: 12, wantFirst: 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.view()
			defer v.Release()
			if !v.Shape().Equal(tc.wantShape) || v.Offset() != tc.wantOff {
				t.Errorf("got shape %v offset %d, want %v offset %d", v.Shape(), v.Offset(), tc.wantShape, tc.wantOff)
			}
			if v.Storage() != x.Storage() {
				t.Error("the view does not share its tensor's storage")
			}
			data := tensor.ToHost(v)
			for i, got := range data {
				if want := tc.wantFirst + float32(i); got != want {
					t.Fatalf("element %d: got %v, want %v", i, got, want)
				}
			}
			if got, want := x.Refs(), int64(2); got != want {
				t.Errorf("refs with one view alive: got %d, want %d", got, want)
			}
		})
	}
	if got := x.Refs(); got != 1 {
		t.Errorf("refs after releasing every view: got %d, want 1", got)
	}
	x.Release()
}

func TestTensorRefcounts(t *testing.T) {
	d := newCPU(t)
	x := d.Alloc(tensor.Activations, 5)
	if got := d.Memory().LiveTotalBytes; got != 20 {
		t.Fatalf("live bytes after Alloc: got %d, want 20", got)
	}
	if x.Refs() != 1 {
		t.Errorf("refs after Alloc: got %d, want 1", x.Refs())
	}
	if y := x.Retain(); y != x || x.Refs() != 2 {
		t.Errorf("Retain: got %p with %d refs, want %p with 2", y, x.Refs(), x)
	}
	v := x.Reshape(1, 5)
	if x.Refs() != 3 || v.Refs() != 3 {
		t.Errorf("refs with a view: got %d and %d, want 3 and 3", x.Refs(), v.Refs())
	}
	x.Release()
	x.Release()
	if got := d.Memory().LiveTotalBytes; got != 20 {
		t.Errorf("storage freed while a view holds it: live bytes %d, want 20", got)
	}
	v.Release()
	if got := d.Memory().LiveTotalBytes; got != 0 {
		t.Errorf("live bytes after the last release: got %d, want 0", got)
	}
	var none *tensor.Tensor
	none.Release() // must not panic
}

// mustPanic fails the test unless fn panics with a message containing want.
func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("got no panic, want one containing %q", want)
			return
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Errorf("got panic %v, want one containing %q", r, want)
		}
	}()
	fn()
}

func TestTensorMisusePanics(t *testing.T) {
	d := newCPU(t)
	x := d.Alloc(tensor.Activations, 4, 3)
	tests := []struct {
		name string
		fn   func()
		want string
	}{
		{name: "slice past the end", fn: func() { x.Slice(2, 5) }, want: "tensor: slice [2, 5) of [4 3]"},
		{name: "negative slice", fn: func() { x.Slice(-1, 2) }, want: "tensor: slice"},
		{name: "empty slice", fn: func() { x.Slice(2, 2) }, want: "tensor: slice"},
		{name: "reversed slice", fn: func() { x.Slice(3, 1) }, want: "tensor: slice"},
		{name: "reshape to another size", fn: func() { x.Reshape(5, 3) }, want: "tensor: reshape [4 3] to [5 3]"},
		{name: "reshape with a negative dimension", fn: func() { x.Reshape(-4, -3) }, want: "tensor: reshape"},
		{name: "different shapes", fn: func() {
			y := d.Alloc(tensor.Activations, 3, 4)
			defer y.Release()
			tensor.SameShape("add", x, y)
		}, want: "tensor: add: shape [3 4] does not match [4 3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustPanic(t, tc.want, tc.fn)
			if got := x.Refs(); got != 1 {
				t.Errorf("refs after a failed view: got %d, want 1 (no reference leaked)", got)
			}
		})
	}
	x.Release()
	t.Run("double release", func(t *testing.T) {
		mustPanic(t, "tensor: Release of a released tensor", x.Release)
	})
	t.Run("retain after release", func(t *testing.T) {
		y := d.Alloc(tensor.Activations, 2)
		y.Release()
		mustPanic(t, "tensor: Retain of a released tensor", func() { y.Retain() })
	})
}
