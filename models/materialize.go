package models

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Materialize gives every parameter and tensor buffer of l, typically
// built shape-only on a meta device, zeroed storage on dev. The
// parameters become views into one flat tensor in category cat, in
// state_dict order, so that a stage's weights move between devices as a
// single transfer; Materialize returns that tensor, holding its own
// reference (release it with ReleaseLayer's). Buffers (running
// statistics) get tensors of their own in the Weights category; counters
// are reset to 0. Gradients and optimizer state are dropped.
func Materialize(l Layer, dev tensor.Device, cat tensor.Category) *tensor.Tensor {
	params := Params(l)
	n := 0
	for _, p := range params {
		n += p.Param.Value.Len()
	}
	flat := dev.Alloc(cat, max(n, 1))
	off := 0
	for _, p := range params {
		v := p.Param.Value
		size, shape := v.Len(), v.Shape().Clone()
		p.Param.Release()
		part := flat.Slice(off, off+size)
		p.Param.Value = part.Reshape(shape...)
		part.Release()
		off += size
	}
	for _, b := range Buffers(l) {
		if b.Buffer.Value != nil {
			shape := b.Buffer.Value.Shape().Clone()
			b.Buffer.Value.Release()
			b.Buffer.Value = dev.Alloc(tensor.Weights, shape...)
		}
		if b.Buffer.Count != nil {
			*b.Buffer.Count = 0
		}
	}
	return flat
}

// CopyState copies the values of every parameter, tensor buffer and
// counter of src into dst, which must have the same state_dict (names and
// shapes); the two may live on different devices.
func CopyState(dst, src Layer) error {
	d, s := StateDict(dst), StateDict(src)
	if len(d) != len(s) {
		return fmt.Errorf("copy state: %d entries into %d", len(s), len(d))
	}
	for i := range d {
		if d[i].Name != s[i].Name || !d[i].Shape.Equal(s[i].Shape) || d[i].Kind != s[i].Kind {
			return fmt.Errorf("copy state: %s %v into %s %v", s[i].Name, s[i].Shape, d[i].Name, d[i].Shape)
		}
	}
	for i := range d {
		if dt := d[i].Tensor(); dt != nil {
			dt.Device().CopyFrom(dt, s[i].Tensor())
			continue
		}
		*d[i].Buffer.Count = *s[i].Buffer.Count
	}
	return nil
}
