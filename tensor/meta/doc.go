// Package meta is a backend that stores and computes nothing: its tensors
// have shapes and are accounted by category like any other, and its
// kernels only count the multiply-accumulates they would perform. Running
// a model's forward on a meta device therefore yields, in microseconds and
// without memory, its output shapes, the bytes each layer keeps for
// backward (with sharing between layers resolved by the same reference
// counts as a real run) and its MACs — the cost annotations the
// partitioner and the predictor use. It is registered as the "meta"
// backend (tensor.MetaBackend), so the runner can execute a whole schedule
// on it: the predictor reads a configuration's exact memory peaks from
// such a run, in a fraction of a second and without the memory itself.
// Its devices are symbolic (tensor.IsSymbolic) and count MACs
// (tensor.MACCounter), so that callers reach them through package tensor
// alone: models.Describe opens one by name.
//
// # Scratch memory
//
// A meta device stands in for a device of the CPU backend with the same
// thread count, and accounts the scratch memory that backend's
// convolutions and products would hold. It does not import tensor/cpu:
// it reads the scratch from the tensor.WorkspaceModel that the CPU
// backend registers under its name, looked up when the device is opened.
// In a program that does not link the CPU backend no model is registered
// and a meta device accounts no scratch; every other count is the same.
// The package depends on tensor alone.
package meta
