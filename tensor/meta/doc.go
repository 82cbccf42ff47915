// Package meta is a backend that stores and computes nothing: its tensors
// have shapes and are accounted by category like any other, and its
// kernels only count the multiply-accumulates they would perform. Running
// a model's forward on a meta device therefore yields, in microseconds and
// without memory, its output shapes, the bytes each layer keeps for
// backward (with sharing between layers resolved by the same reference
// counts as a real run) and its MACs — the cost annotations the
// partitioner and the predictor use. It is registered as the "meta"
// backend, so the runner can execute a whole schedule on it: the predictor
// reads a configuration's exact memory peaks from such a run, in a
// fraction of a second and without the memory itself.
package meta
