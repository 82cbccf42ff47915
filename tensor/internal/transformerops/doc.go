// Package transformerops holds the plain float32 loops of decoder
// transformers' kernels (tensor.TransformerKernels): the one
// implementation that the tensor package's host fallback runs whole and
// the CPU backend shares out over its threads by rows (the lo, hi
// arguments: rows of a normalisation or rotation, (sequence, head) pairs
// of an attention), or by columns where a sum runs over the rows (an
// embedding's or a norm's parameter gradient). Slices hold whole
// tensors, contiguous, laid out as tensor.TransformerKernels documents.
package transformerops

// RoPESizes are tensor.RoPEParams in this package's terms.
type RoPESizes struct {
	Seq, Heads, HeadDim int
	Theta               float64
	Inverse             bool
}

// AttentionSizes are tensor.AttentionParams in this package's terms.
type AttentionSizes struct {
	Seq, Heads, KVHeads, HeadDim int
	Scale                        float32
	Causal                       bool
}
