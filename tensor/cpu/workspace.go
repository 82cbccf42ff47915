package cpu

import "github.com/pipecast/pipecast/tensor"

// ConvPass names one of a convolution's three kernels. It is package
// tensor's, so that the workspace model the backend registers there
// (workspace_model.go) takes the same values.
type ConvPass = tensor.ConvPass

// The convolution kernels that take scratch memory.
const (
	ConvForward        = tensor.ConvForward
	ConvBackwardData   = tensor.ConvBackwardData
	ConvBackwardFilter = tensor.ConvBackwardFilter
)

// ConvWorkspaceElems returns the float32 elements of scratch (Workspace)
// memory the CPU backend's convolution kernel pass holds at its peak on a
// device of threads threads (with the backend's own products), for input
// x [N, C, H, W], weights w [O, C, KH, KW] and output y [N, O, OH, OW].
// For its whole run the pass holds, per slot (one per thread when the
// threads take samples of their own, else one), a column matrix [K, g·P]
// (K = C·KH·KW, P = OH·OW, g the samples grouped into one product; none
// for a 1×1 stride-1 unpadded convolution with g = 1), an output matrix
// [O, g·P] when g > 1 and, for serial products, their packing buffers;
// the filter gradient adds a partial dw (O·K) per thread but the first.
// A product on the whole pool holds GemmWorkspaceElems on top while it
// runs. It is the kernels' policy (convPlan) written out, so that a
// device without storage (the meta backend, through the workspace model
// registered in workspace_model.go) can account the scratch a CPU run
// holds; a test checks it against the kernels.
func ConvWorkspaceElems(pass ConvPass, x, w, y tensor.Shape, p tensor.Conv2DParams, threads int) int {
	pl := newConvPlan(pass, shapeGeom(x, w, y, p), threads, false)
	gemm := 0
	for _, r := range pl.runs() {
		if r.wholePool {
			s := pl.shape(r.n)
			gemm = max(gemm, GemmWorkspaceElems(s.M, s.N, s.K, threads))
		}
	}
	return pl.elems() + gemm
}
