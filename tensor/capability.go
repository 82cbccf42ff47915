package tensor

// Optional interfaces: what some devices can say about themselves beyond
// Device. Callers test for them with a type assertion (or the helper
// beside them), so that they need not import the backend.

// MACCounter is implemented by devices that count the multiply-accumulates
// of the kernels they run (the meta backend's): those of convolutions,
// linear layers and GEMMs, the usual measure of a network's work.
type MACCounter interface {
	// MACs returns the multiply-accumulates counted since the device
	// opened.
	MACs() int64
}

// SymbolicDevice is implemented by devices that may hold no values: their
// tensors have shapes and are accounted by category, but store nothing
// (the meta backend's).
type SymbolicDevice interface {
	// Symbolic reports whether the device's tensors hold no values.
	Symbolic() bool
}

// IsSymbolic reports whether d's tensors hold no values, so that work
// whose only product is values (drawing initial weights, say) can be
// skipped on it. Devices that do not implement SymbolicDevice hold values.
func IsSymbolic(d Device) bool {
	s, ok := d.(SymbolicDevice)
	return ok && s.Symbolic()
}
