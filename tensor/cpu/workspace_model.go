package cpu

import "github.com/pipecast/pipecast/tensor"

// The CPU backend's scratch policy, registered as its workspace model: the
// meta backend looks it up by name to account the scratch a CPU run
// holds, without importing this package.
func init() {
	tensor.RegisterWorkspaceModel(BackendName, workspaceModel{})
}

// workspaceModel is the tensor.WorkspaceModel of the "cpu" backend: the
// kernels' policy as ConvWorkspaceElems, GemmWorkspaceElems and
// AttentionWorkspaceElems write it out.
type workspaceModel struct{}

var _ tensor.WorkspaceModel = workspaceModel{}

// ConvWorkspaceElems returns ConvWorkspaceElems of the pass.
func (workspaceModel) ConvWorkspaceElems(pass tensor.ConvPass, x, w, y tensor.Shape, p tensor.Conv2DParams, threads int) int {
	return ConvWorkspaceElems(pass, x, w, y, p, threads)
}

// GemmWorkspaceElems returns GemmWorkspaceElems of the product.
func (workspaceModel) GemmWorkspaceElems(m, n, k, threads int) int {
	return GemmWorkspaceElems(m, n, k, threads)
}

// AttentionWorkspaceElems returns AttentionWorkspaceElems of the
// attention kernels: beyond tensor.WorkspaceModel, asked for by the meta
// backend where a model has it.
func (workspaceModel) AttentionWorkspaceElems(p tensor.AttentionParams, batch, threads int) int {
	return AttentionWorkspaceElems(p, batch, threads)
}
