package cuda

import (
	"fmt"
	"math"
)

// Launch geometry: the grids and blocks the kernels of kernels/ were
// written for. Every grid helper returns a grid of no blocks when there is
// nothing to compute, and launch queues nothing for such a grid, so that
// an empty tensor launches no kernel.
const (
	// threadsPerBlock is the block of the one-dimensional kernels, the
	// reductions and the loss.
	threadsPerBlock = 256
	// maxStrideBlocks caps the grid of the grid-stride kernels: 4096
	// blocks of 256 threads fill any current GPU several times over, and
	// each thread then strides over the rest.
	maxStrideBlocks = 4096
	// maxGridBlocks is the largest grid.y a GPU takes, and the cap the
	// kernels' author chose for the blocks of a reduction (one per
	// channel, column or row; the blocks stride over any more).
	maxGridBlocks = 65535
	// gemmTile is the side of the C tile one block of the GEMM and
	// implicit-GEMM kernels computes, with a 16×16 block of threads (4×4
	// outputs each).
	gemmTile = 64
	// gemmSlab is the depth those kernels take per step: a split of the
	// depth into slab multiples leaves no part but the last a partial
	// slab.
	gemmSlab = 16
)

// The depth split of the filter gradient (pc_conv_bwd_filter_part, then
// pc_sum_parts_acc): its product is a few 64×64 tiles deep in n·oh·ow,
// so it splits the depth until the grid holds splitWaves blocks per
// multiprocessor, enough to occupy every one with some to spare for the
// imbalance between them.
const (
	// h200SMs is the streaming multiprocessor count of an H200 (and an
	// H100 SXM), the GPU the split is sized for when the driver does not
	// say how many its GPU has.
	h200SMs = 132
	// splitWaves is how many blocks per multiprocessor the split aims
	// for.
	splitWaves = 2
	// minSplitDepth is the least depth a part walks: below it the
	// parts' writes and their reduction cost more than the parallelism
	// saves.
	minSplitDepth = 256
	// maxSplitParts caps the parts, and with them the workspace (parts
	// tiles of the product) and the reduction's reads per element.
	maxSplitParts = 64
)

var (
	// block1D is the block of every kernel but the tiled products.
	block1D = [3]uint32{threadsPerBlock, 1, 1}
	// blockTile is the block of pc_sgemm and the implicit-GEMM
	// convolutions.
	blockTile = [3]uint32{16, 16, 1}
)

// gridStride returns the grid of a grid-stride kernel that writes total
// elements: one thread per element up to maxStrideBlocks blocks.
func gridStride(total int64) [3]uint32 {
	if total <= 0 {
		return [3]uint32{0, 1, 1}
	}
	blocks := min((total+threadsPerBlock-1)/threadsPerBlock, maxStrideBlocks)
	return [3]uint32{uint32(blocks), 1, 1}
}

// gridPerItem returns the grid of a kernel that gives each of n items
// (channels, columns, rows) a block, up to maxGridBlocks.
func gridPerItem(n int) [3]uint32 {
	if n <= 0 {
		return [3]uint32{0, 1, 1}
	}
	return [3]uint32{uint32(min(n, maxGridBlocks)), 1, 1}
}

// gridTiles returns the grid of a tiled product with an m×n output: one
// block per gemmTile×gemmTile tile, columns along x.
func gridTiles(m, n int) [3]uint32 {
	if m <= 0 || n <= 0 {
		return [3]uint32{0, 0, 1}
	}
	x, y := (n+gemmTile-1)/gemmTile, (m+gemmTile-1)/gemmTile
	if x > math.MaxUint32 || y > maxGridBlocks {
		panic(fmt.Sprintf("cuda: a product of %d×%d outputs needs a grid of %d×%d tiles, past the GPU's limit", m, n, x, y))
	}
	return [3]uint32{uint32(x), uint32(y), 1}
}

// depthSplit returns how to split the depth of a tiled product of tiles
// blocks over sms multiprocessors: into parts of chunk depths each (the
// last one the rest), parts = 1 and chunk = depth when it should not be
// split. Parts are added until tiles·parts reaches splitWaves·sms blocks,
// at most maxSplitParts, each at least minSplitDepth deep; chunk is a
// multiple of gemmSlab, and no part is empty.
func depthSplit(tiles, depth, sms int) (parts, chunk int) {
	if sms < 1 {
		sms = h200SMs
	}
	target := splitWaves * sms
	if tiles <= 0 || depth <= 0 || tiles >= target {
		return 1, depth
	}
	parts = min((target+tiles-1)/tiles, maxSplitParts, depth/minSplitDepth)
	if parts <= 1 {
		return 1, depth
	}
	chunk = ((depth+parts-1)/parts + gemmSlab - 1) / gemmSlab * gemmSlab
	// Rounding chunk up may leave fewer parts; never fewer than 2, since
	// depth ≥ 2·minSplitDepth.
	return (depth + chunk - 1) / chunk, chunk
}

// gridPhases returns the grid of pc_conv_bwd_data: the tiles of the
// largest phase's c × n·⌈h/sh⌉·⌈w/sw⌉ product, one z per phase.
func gridPhases(c, n, h, w, sh, sw int) [3]uint32 {
	g := gridTiles(c, n*((h+sh-1)/sh)*((w+sw-1)/sw))
	if sh*sw > maxGridBlocks {
		panic(fmt.Sprintf("cuda: a convolution of stride %d×%d needs %d phases, past the GPU's %d", sh, sw, sh*sw, maxGridBlocks))
	}
	g[2] = uint32(sh * sw)
	return g
}

// empty reports a grid of no blocks.
func empty(grid [3]uint32) bool { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0 }

// i32 converts a size to a kernel's int parameter, panicking when it does
// not fit (element counts that may pass 2^31 are long long in the
// kernels' prototypes; the rest must fit an int).
func i32(op string, v int) int32 {
	if v < math.MinInt32 || v > math.MaxInt32 {
		panic(fmt.Sprintf("cuda: %s: size %d does not fit the kernels' int", op, v))
	}
	return int32(v)
}

// flag converts a bool to a kernel's int flag.
func flag(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
