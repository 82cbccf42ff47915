package cpu

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/pipecast/pipecast/tensor"
)

// Every matrix product of the backend (Gemm, linear, convolution) goes
// through sgemm or sgemmSerial below, and they reach the arithmetic only
// through gemmTile: a faster micro-kernel replaces gemmTile alone.
//
// gonum's Sgemm spawns runtime.GOMAXPROCS goroutines once C spans four or
// more 64×64 blocks, which would break the device's bound of T threads. So C
// is cut into tiles of at most gemmTileRows × gemmTileCols (one block high,
// three wide: below that threshold) and gonum is called once per tile, where
// it stays on the calling goroutine; the tiles are spread over the pool.
const (
	gemmTileRows = 64
	gemmTileCols = 192
	// gemmMinTileCols keeps tiles wide enough for the vector loops when
	// narrow ones are cut to give every thread work.
	gemmMinTileCols = 32
	// gemmDepth is the slice of the inner dimension multiplied per gonum
	// call, so that a 64×256 panel of A and a 256×192 panel of B (64 KiB
	// and 192 KiB) stay in cache while a tile of C is updated.
	gemmDepth = 256
	// gemmMinParallelMACs is the fewest multiply-adds worth handing to
	// another thread: about 20 µs of work, several times the cost of
	// waking a worker.
	gemmMinParallelMACs = 1 << 15
	// gemmTilesPerThread is how many tiles each thread should get, when
	// C is large enough, so that uneven tiles still balance.
	gemmTilesPerThread = 4
)

var gemmBLAS gonum.Implementation

// Gemm sets c = alpha·op(a)·op(b) + beta·c for 2-D tensors. c must not
// share memory with a or b. With beta 0, c's previous contents are
// ignored (a NaN there does not propagate), as in BLAS.
func (d *Device) Gemm(transA, transB bool, alpha float32, a, b *tensor.Tensor, beta float32, c *tensor.Tensor) {
	if a.Rank() != 2 || b.Rank() != 2 || c.Rank() != 2 {
		panic(fmt.Sprintf("cpu: gemm: a %v, b %v, c %v: all must be 2-D", a.Shape(), b.Shape(), c.Shape()))
	}
	m, k := a.Dim(0), a.Dim(1)
	if transA {
		m, k = k, m
	}
	kb, n := b.Dim(0), b.Dim(1)
	if transB {
		kb, n = n, kb
	}
	if kb != k || c.Dim(0) != m || c.Dim(1) != n {
		panic(fmt.Sprintf("cpu: gemm: op(a) %d×%d (a %v, transA %v) times op(b) %d×%d (b %v, transB %v) into c %v",
			m, k, a.Shape(), transA, kb, n, b.Shape(), transB, c.Shape()))
	}
	da := d.data("gemm", a, a.Len())
	db := d.data("gemm", b, b.Len())
	dc := d.data("gemm", c, c.Len())
	d.sgemm(transA, transB, m, n, k, alpha, da, a.Dim(1), db, b.Dim(1), beta, dc, n)
}

// sgemm sets c = alpha·op(a)·op(b) + beta·c on row-major matrices with
// leading dimensions lda, ldb, ldc, using the device's threads. op(a) is
// m×k, op(b) k×n. It must not be called from inside d.pool.parallel: use
// sgemmSerial there.
func (d *Device) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	rowTiles, colTiles := gemmTiling(m, n, d.pool.threads)
	tileMACs := max(min(m, gemmTileRows)*(n/colTiles)*k, 1)
	grain := (gemmMinParallelMACs + tileMACs - 1) / tileMACs
	d.pool.parallel(rowTiles*colTiles, grain, func(lo, hi int) {
		gemmTiles(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, colTiles, lo, hi)
	})
}

// sgemmSerial is sgemm on the calling goroutine alone, for kernels that
// already spread independent products over the pool.
func sgemmSerial(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	rowTiles, colTiles := gemmTiling(m, n, 1)
	gemmTiles(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, colTiles, 0, rowTiles*colTiles)
}

// gemmTiling returns how many tiles C is cut into along its rows and its
// columns: rows in gemmTileRows, columns in equal widths of at most
// gemmTileCols, narrower (down to gemmMinTileCols) when that is what it
// takes to give each of the threads gemmTilesPerThread tiles.
func gemmTiling(m, n, threads int) (rowTiles, colTiles int) {
	rowTiles = (m + gemmTileRows - 1) / gemmTileRows
	colTiles = (n + gemmTileCols - 1) / gemmTileCols
	if want := (gemmTilesPerThread*threads + rowTiles - 1) / rowTiles; threads > 1 && colTiles < want {
		colTiles = max(colTiles, min(want, n/gemmMinTileCols))
	}
	return rowTiles, colTiles
}

// gemmTiles computes tiles [lo, hi) of C, numbered row-major with colTiles
// tiles per row of tiles, so that consecutive tiles share rows of A. Column
// tile j spans columns [j·n/colTiles, (j+1)·n/colTiles): widths differ by
// at most one.
func gemmTiles(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, colTiles, lo, hi int) {
	for t := lo; t < hi; t++ {
		i0 := (t / colTiles) * gemmTileRows
		j := t % colTiles
		gemmTile(transA, transB, i0, min(i0+gemmTileRows, m), j*n/colTiles, (j+1)*n/colTiles, k,
			alpha, a, lda, b, ldb, beta, c, ldc)
	}
}

// gemmTile computes rows [i0, i1) and columns [j0, j1) of C: it applies
// beta once, then adds the product one gemmDepth slice of the inner
// dimension at a time. The tile spans fewer than four 64×64 blocks, so
// gonum computes it serially.
func gemmTile(transA, transB bool, i0, i1, j0, j1, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	mt, nt := i1-i0, j1-j0
	switch beta {
	case 1:
	case 0:
		for i := i0; i < i1; i++ {
			clear(c[i*ldc+j0 : i*ldc+j1])
		}
	default:
		for i := i0; i < i1; i++ {
			row := c[i*ldc+j0 : i*ldc+j1]
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if alpha == 0 {
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if transA {
		tA = blas.Trans
	}
	if transB {
		tB = blas.Trans
	}
	cSub := c[i0*ldc+j0:]
	for l0 := 0; l0 < k; l0 += gemmDepth {
		kt := min(gemmDepth, k-l0)
		var aSub, bSub []float32
		if transA { // a is k×m
			aSub = a[l0*lda+i0:]
		} else {
			aSub = a[i0*lda+l0:]
		}
		if transB { // b is n×k
			bSub = b[j0*ldb+l0:]
		} else {
			bSub = b[l0*ldb+j0:]
		}
		gemmBLAS.Sgemm(tA, tB, mt, nt, kt, alpha, aSub, lda, bSub, ldb, 1, cSub, ldc)
	}
}
