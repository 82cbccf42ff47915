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
