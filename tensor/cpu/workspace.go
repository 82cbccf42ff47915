package cpu

import "github.com/pipecast/pipecast/tensor"

// ConvPass names one of a convolution's three kernels.
type ConvPass int

// The convolution kernels that take scratch memory.
const (
	ConvForward ConvPass = iota
	ConvBackwardData
	ConvBackwardFilter
)

// ConvWorkspaceElems returns the float32 elements of scratch (Workspace)
// memory the CPU backend's convolution kernel pass holds while it runs on
// a device of threads threads, for input x [N, C, H, W], weights w [O, C,
// KH, KW] and output y [N, O, OH, OW]: one im2col buffer (K·P elements,
// K = C·KH·KW, P = OH·OW) per thread that takes its own samples (all T
// when N ≥ T > 1, else one), none for a 1×1 stride-1 unpadded convolution,
// and for the filter gradient a partial dw (O·K) per thread when the
// threads sum their own samples (O ≤ P). It is the kernels' allocation
// policy written out, so that a device without storage (the meta backend)
// can account the scratch a CPU run holds; a test checks it against the
// kernels.
func ConvWorkspaceElems(pass ConvPass, x, w, y tensor.Shape, p tensor.Conv2DParams, threads int) int {
	g := convGeom{n: x[0], c: x[1], h: x[2], w: x[3], o: w[0], kh: w[2], kw: w[3], oh: y[2], ow: y[3], p: p}
	slots := 1
	if threads > 1 && g.n >= threads {
		slots = threads
	}
	k, pix := g.cols(), g.pixels()
	col := k * pix
	if g.direct() {
		col = 0
	}
	switch pass {
	case ConvForward, ConvBackwardData:
		return slots * col
	default:
		if g.o > pix {
			slots = 1 // samples run one by one into dw itself
		}
		part := 0
		if slots > 1 {
			part = g.o * k
		}
		return slots * (col + part)
	}
}
