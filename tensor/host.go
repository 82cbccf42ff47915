package tensor

// FromHost allocates a tensor of the given shape on dev in category cat and
// fills it with data, which must hold exactly shape.Numel() elements.
func FromHost(dev Device, cat Category, shape Shape, data []float32) *Tensor {
	t := dev.Alloc(cat, shape...)
	dev.Upload(t, data)
	return t
}

// ToHost returns a copy of t's elements in host memory.
func ToHost(t *Tensor) []float32 {
	out := make([]float32, t.Len())
	t.Device().Download(out, t)
	return out
}
