package cpu

import (
	"cmp"
	"slices"

	"github.com/pipecast/pipecast/tensor"
)

// A convolution pass is lowered to matrix products over groups of
// samples (see conv.go). convPlan is that lowering's policy, written out
// once: the kernels run it, and ConvWorkspaceElems and ConvGemmShapes
// read it, so that what they report is what the kernels do.
const (
	// convTargetCols is the width, in columns of the product (samples ×
	// output pixels), that grouping aims for: narrower products pack the
	// weights for few columns and leave the micro-kernel's NR-wide
	// slivers ragged. On ResNet-50's and VGG-16-BN's layers at 64×64 (one
	// thread), products of 128 columns ran 20–30% slower than those of
	// 256; 512 gained up to 8% more on the deepest (ResNet-50's layer4).
	convTargetCols = 512
	// convLeastCols is the narrowest group threads take samples of their
	// own for: below it (small batches of small images), the groups run
	// one by one, each wider product on the whole pool.
	convLeastCols = 256
	// convGroupElems bounds the buffers (column matrix and output or
	// gradient matrix, in float32 elements) a group may hold, so that
	// grouping does not grow the scratch of layers whose single samples
	// are already wide: 4 Mi elements, 16 MiB.
	convGroupElems = 1 << 22
)

// convPlan is how one convolution pass runs.
type convPlan struct {
	pass    ConvPass
	g       convGeom
	threads int
	// group is the most samples one product spans: their columns sit
	// side by side, group·P columns in all.
	group int
	// perThread: each of the T threads takes per = N/T samples of its
	// own, in groups, with its own buffers (a slot) and serial products;
	// the N mod T samples left run afterwards in slot 0, each product on
	// the whole pool. Otherwise every group runs on the whole pool.
	perThread bool
	slots     int
	// Elements of one slot's buffers: cols is the column matrix (or the
	// gathered input of a 1×1 convolution, or the column gradient) [K,
	// group·P]; outs is a group's output or gathered output gradient [O,
	// group·P]; pack is the packing buffer of a serial product.
	cols, outs, pack int
	// parts is the filter gradient's partial sums: one O·K copy for each
	// thread but the first, which adds onto dw itself.
	parts int
}

// newConvPlan returns the plan of pass on a device of threads threads;
// ownThreads is the device's (products must not run serially on the
// pool's threads).
func newConvPlan(pass ConvPass, g convGeom, threads int, ownThreads bool) convPlan {
	pl := convPlan{pass: pass, g: g, threads: threads, group: 1, slots: 1}
	k, pix := g.cols(), g.pixels()
	if g.n == 0 || pix == 0 {
		return pl
	}
	// Samples that fit the budget, and those for the target and least
	// widths.
	fit := max(1, convGroupElems/((k+g.o)*pix))
	want := max(1, min(g.n, fit, (convTargetCols+pix-1)/pix))
	least := max(1, min(fit, (convLeastCols+pix-1)/pix))
	per := g.n / max(threads, 1)
	pl.group = want
	if threads > 1 && !ownThreads && per >= least {
		// Every thread gets groups at least convLeastCols wide.
		pl.perThread = true
		pl.group = min(want, per)
	}
	if pass == ConvBackwardFilter && pl.perThread && g.o > pl.group*pix {
		// A partial dw per thread would outweigh the thread's column
		// buffer: sum on the whole pool into dw itself instead.
		pl.perThread = false
		pl.group = want
	}
	if pl.perThread {
		pl.slots = threads
	}
	cols := pl.group * pix
	if !g.direct() || pl.group > 1 {
		pl.cols = k * cols
	}
	if pl.group > 1 {
		pl.outs = g.o * cols
	}
	if pl.perThread {
		s := pl.shape(pl.group)
		pl.pack = gemmPackElems(s.M, s.N, s.K)
		if pass == ConvBackwardFilter {
			pl.parts = (threads - 1) * g.o * k
		}
	}
	return pl
}

// elems is the scratch the pass holds for its whole run: every slot's
// buffers and the partial sums.
func (pl *convPlan) elems() int {
	return pl.slots*(pl.cols+pl.outs+pl.pack) + pl.parts
}

// shape is the product that lowers a group of n samples.
func (pl *convPlan) shape(n int) GemmShape {
	g := &pl.g
	k, cols := g.cols(), n*g.pixels()
	switch pl.pass {
	case ConvForward: // y_g [O, cols] = w [O, K] · col [K, cols]
		return GemmShape{M: g.o, N: cols, K: k, Count: 1}
	case ConvBackwardData: // dcol [K, cols] = wᵀ · dy_g [O, cols]
		return GemmShape{M: k, N: cols, K: g.o, TransA: true, Count: 1}
	default: // dw [O, K] += dy_g [O, cols] · colᵀ
		return GemmShape{M: g.o, N: k, K: cols, TransB: true, Count: 1}
	}
}

// convRun is count groups of n samples each, run with serial products
// (one per thread) or on the whole pool.
type convRun struct {
	n, count  int
	wholePool bool
}

// runs lists the groups the pass runs, in the order convGroups visits
// them.
func (pl *convPlan) runs() []convRun {
	var rs []convRun
	add := func(n, count int, whole bool) {
		if n > 0 && count > 0 {
			rs = append(rs, convRun{n, count, whole})
		}
	}
	rest := pl.g.n
	if pl.perThread {
		per := pl.g.n / pl.threads
		add(pl.group, pl.threads*(per/pl.group), false)
		add(per%pl.group, pl.threads, false)
		rest -= pl.threads * per
	}
	add(pl.group, rest/pl.group, true)
	add(rest%pl.group, 1, true)
	return rs
}

// ConvGemmShapes returns the matrix products the CPU backend's
// convolution kernel pass runs on a device of threads threads (with the
// backend's own products), for input
// x [N, C, H, W], weights w [O, C, KH, KW] and output y [N, O, OH, OW]:
// each distinct shape once, with Count the number of times it runs,
// largest products first. A forward product is w · col, a backward-data
// one wᵀ · dy, a backward-filter one dy · colᵀ, where col and dy hold
// several samples side by side when their images are small (see
// conv.go).
func ConvGemmShapes(pass ConvPass, x, w, y tensor.Shape, p tensor.Conv2DParams, threads int) []GemmShape {
	pl := newConvPlan(pass, shapeGeom(x, w, y, p), threads, false)
	var out []GemmShape
	for _, r := range pl.runs() {
		s := pl.shape(r.n)
		if i := slices.IndexFunc(out, func(o GemmShape) bool { o.Count = 1; return o == s }); i >= 0 {
			out[i].Count += r.count
			continue
		}
		s.Count = r.count
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b GemmShape) int { return cmp.Compare(b.M*b.N*b.K, a.M*a.N*a.K) })
	return out
}

// shapeGeom is the geometry of a convolution given by its shapes.
func shapeGeom(x, w, y tensor.Shape, p tensor.Conv2DParams) convGeom {
	return convGeom{n: x[0], c: x[1], h: x[2], w: x[3], o: w[0], kh: w[2], kw: w[3], oh: y[2], ow: y[3], p: p}
}
