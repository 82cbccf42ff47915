// Package tensor owns pipecast's tensor core: the Tensor type (float32,
// NCHW, a shape and storage on one device), the Device interface that every
// backend implements (allocation tagged with a memory category, live and
// peak bytes per category, copies between devices, a monotonic clock, and
// the kernels the model zoo needs), and the backend registry through which
// a name such as "cpu" resolves to a constructor.
//
// # Ownership
//
// A Tensor returned by Device.Alloc holds one reference. Retain adds a
// reference, Release drops one; the storage goes back to the device, and
// its bytes leave the live count of its category, when the last reference
// is released. Views made by Reshape share storage and references with the
// tensor they view.
//
// # Kernels
//
// Kernels write into tensors the caller allocated; they never allocate
// results, only workspace, which they account in the Workspace category and
// release before they return. Parameter-gradient kernels accumulate into
// their outputs (as torch accumulates .grad until zero_grad); all other
// kernels overwrite theirs.
//
// # Backends and what they say about themselves
//
// A backend registers its constructor under a name (Register); programs
// link the backends they use with a blank import, and other packages reach
// them through the registry by name (CPUBackend, MetaBackend) rather than
// by importing them, so that a package such as models depends on tensor
// alone. Beside the constructor a backend may register a WorkspaceModel,
// the scratch its kernels hold as a function of shapes, through which the
// meta backend forecasts a real backend's memory without importing it.
// Devices report optional capabilities by implementing small interfaces:
// MACCounter for devices that count multiply-accumulates, SymbolicDevice
// (see IsSymbolic) for devices whose tensors hold no values.
//
// # Capabilities
//
// Kernels holds what every backend implements. A kernel family that only
// some backends have a fast kernel for (an optimizer's step, a fused
// pair of layers, a new layer) is an optional capability instead: an
// interface in capability.go (SGDStepper, SGDBatcher, AdamWStepper,
// BatchNormReLUKernels, FiniteScreener), and beside it a package-level
// function (SGDStep, SGDSteps, AdamWSteps, BatchNormReLUTrain,
// FirstNonFiniteOn) that runs the device's kernel where the device
// implements the interface and otherwise a fallback composed from Kernels
// (or, where Kernels cannot compose it, a loop on host copies). A backend
// gains the family by implementing the interface, and the shared suite
// tests both the kernel and the fallback on every backend, so a new
// family changes no backend that lacks it. capability.go says how one
// arrives, step by step.
//
// The package imports no backend. Backends are tested by one shared
// suite, package tensortest.
package tensor
