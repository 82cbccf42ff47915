package tensor

import "sync"

// ConvPass names one of a convolution's three kernels.
type ConvPass int

// The convolution kernels that take scratch memory.
const (
	ConvForward ConvPass = iota
	ConvBackwardData
	ConvBackwardFilter
)

// WorkspaceModel forecasts the scratch (Workspace) memory a backend's
// kernels hold while they run, from shapes alone. A device without
// storage (the meta backend) accounts it in place of the kernels it
// imitates, so its memory peaks equal a real run's, scratch included,
// without linking the backend's kernels into the device's package.
type WorkspaceModel interface {
	// ConvWorkspaceElems returns the float32 elements of scratch the
	// convolution kernel pass holds at its peak on a device of threads
	// threads, for input x [N, C, H, W], weights w [O, C, KH, KW] and
	// output y [N, O, OH, OW].
	ConvWorkspaceElems(pass ConvPass, x, w, y Shape, p Conv2DParams, threads int) int
	// GemmWorkspaceElems returns the float32 elements of scratch one
	// m×n×k product holds on a device of threads threads.
	GemmWorkspaceElems(m, n, k, threads int) int
}

var (
	workspaceMu     sync.Mutex
	workspaceModels = map[string]WorkspaceModel{}
)

// RegisterWorkspaceModel makes m the workspace model of the named
// backend; backends call it from init, beside Register. Registering a
// name twice, or a nil model, panics.
func RegisterWorkspaceModel(backend string, m WorkspaceModel) {
	workspaceMu.Lock()
	defer workspaceMu.Unlock()
	if backend == "" || m == nil {
		panic("tensor: RegisterWorkspaceModel without a backend name or a model")
	}
	if _, dup := workspaceModels[backend]; dup {
		panic("tensor: workspace model of " + backend + " registered twice")
	}
	workspaceModels[backend] = m
}

// LookupWorkspaceModel returns the workspace model registered for the
// named backend; ok is false when there is none (the backend is not
// linked, or its kernels take no scratch).
func LookupWorkspaceModel(backend string) (m WorkspaceModel, ok bool) {
	workspaceMu.Lock()
	defer workspaceMu.Unlock()
	m, ok = workspaceModels[backend]
	return m, ok
}
