package tensor

import (
	"fmt"
	"sync/atomic"
)

// BytesPerElement is the size of one float32 element.
const BytesPerElement = 4

// Storage is one allocation on a device, shared by a tensor and its views.
// Backends create it through NewTensor and receive it back in Device.Free
// when its last reference is released.
type Storage struct {
	// Mem is the backend's handle to the memory: []float32 for the CPU
	// backend.
	Mem any

	dev  Device
	cat  Category
	n    int // elements
	refs atomic.Int64
}

// Device returns the device that owns the storage.
func (s *Storage) Device() Device { return s.dev }

// Category returns the memory category the storage is accounted in.
func (s *Storage) Category() Category { return s.cat }

// Len returns the number of float32 elements in the storage.
func (s *Storage) Len() int { return s.n }

// Bytes returns the size of the storage in bytes.
func (s *Storage) Bytes() int64 { return int64(s.n) * BytesPerElement }

// SetCategory changes the category the storage is accounted in. Only
// backends call it, from Device.Retag, after moving the bytes.
func (s *Storage) SetCategory(c Category) { s.cat = c }

// Tensor is a float32 array with a shape, stored on one device. Image
// tensors are NCHW. A Tensor is a window of elements [Offset, Offset+Len)
// of its Storage; views share the storage.
type Tensor struct {
	shape Shape
	st    *Storage
	off   int
}

// NewTensor wraps freshly allocated backend memory holding n elements in a
// tensor with one reference. Backends call it from Device.Alloc after
// accounting the bytes.
func NewTensor(dev Device, cat Category, shape Shape, mem any) *Tensor {
	st := &Storage{Mem: mem, dev: dev, cat: cat, n: shape.Numel()}
	st.refs.Store(1)
	return &Tensor{shape: shape.Clone(), st: st}
}

// Shape returns the tensor's dimensions. The caller must not modify them.
func (t *Tensor) Shape() Shape { return t.shape }

// Dim returns dimension i.
func (t *Tensor) Dim(i int) int { return t.shape[i] }

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int { return len(t.shape) }

// Len returns the number of elements.
func (t *Tensor) Len() int { return t.shape.Numel() }

// Bytes returns the size of the tensor's elements in bytes (not of the
// storage it may share).
func (t *Tensor) Bytes() int64 { return int64(t.Len()) * BytesPerElement }

// Offset returns the index of the tensor's first element in its storage.
func (t *Tensor) Offset() int { return t.off }

// Storage returns the allocation behind the tensor.
func (t *Tensor) Storage() *Storage { return t.st }

// Device returns the device the tensor lives on.
func (t *Tensor) Device() Device { return t.st.dev }

// Category returns the memory category of the tensor's storage.
func (t *Tensor) Category() Category { return t.st.cat }

// String describes the tensor without its data.
func (t *Tensor) String() string {
	return fmt.Sprintf("tensor%v on %s (%s)", t.shape, t.st.dev.Name(), t.st.cat)
}

// Retain adds a reference and returns t, so that a saved context can keep
// a tensor that its producer will release.
func (t *Tensor) Retain() *Tensor {
	if t.st.refs.Add(1) <= 1 {
		panic("tensor: Retain of a released tensor")
	}
	return t
}

// Release drops a reference. The last release returns the storage to its
// device. Releasing a nil tensor does nothing.
func (t *Tensor) Release() {
	if t == nil {
		return
	}
	switch n := t.st.refs.Add(-1); {
	case n == 0:
		t.st.dev.Free(t.st)
	case n < 0:
		panic("tensor: Release of a released tensor")
	}
}

// Refs returns the number of references to the tensor's storage.
func (t *Tensor) Refs() int64 { return t.st.refs.Load() }

// Reshape returns a view of t with another shape of the same number of
// elements. The view holds its own reference: release it.
func (t *Tensor) Reshape(shape ...int) *Tensor {
	s := Shape(shape)
	if s.Numel() != t.Len() || !s.Valid() {
		panic(fmt.Sprintf("tensor: reshape %v to %v", t.shape, s))
	}
	t.Retain()
	return &Tensor{shape: s.Clone(), st: t.st, off: t.off}
}

// Slice returns a view of rows [lo, hi) of the outermost dimension, such
// as a micro-batch of a mini-batch. The view holds its own reference:
// release it.
func (t *Tensor) Slice(lo, hi int) *Tensor {
	if len(t.shape) == 0 || lo < 0 || hi > t.shape[0] || lo >= hi {
		panic(fmt.Sprintf("tensor: slice [%d, %d) of %v", lo, hi, t.shape))
	}
	row := t.Len() / t.shape[0]
	s := t.shape.Clone()
	s[0] = hi - lo
	t.Retain()
	return &Tensor{shape: s, st: t.st, off: t.off + lo*row}
}

// SameShape panics unless every tensor has the shape of the first; kernels
// use it to check their arguments.
func SameShape(op string, ts ...*Tensor) {
	for _, o := range ts[1:] {
		if !o.shape.Equal(ts[0].shape) {
			panic(fmt.Sprintf("tensor: %s: shape %v does not match %v", op, o.shape, ts[0].shape))
		}
	}
}
