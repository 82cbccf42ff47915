package cpu

import "fmt"

// colMatrix is a row-major matrix as the GEMM driver reads op(B) and
// writes C: plain, with leading dimension ld; or blocked, its columns in
// blocks of width w, block s a row-major [rows, w] matrix at
// data[s·step:]. A blocked matrix is a batch of samples in NCHW order,
// each sample a [channels, pixels] matrix, seen as one [channels,
// n·pixels] matrix without copying it: a convolution's product then
// reads its input, and writes its output, in place rather than through
// gathered and scattered copies. row and col offset the view.
type colMatrix struct {
	data     []float32
	ld       int // plain: the leading dimension
	w, step  int // blocked: the block width and the stride between blocks
	row, col int
}

// plainMatrix returns the plain view of data with leading dimension ld.
func plainMatrix(data []float32, ld int) colMatrix { return colMatrix{data: data, ld: ld} }

// blockedMatrix returns the blocked view of data: blocks of w columns,
// step elements apart.
func blockedMatrix(data []float32, w, step int) colMatrix {
	if w < 1 || step < w {
		panic(fmt.Sprintf("cpu: blocked matrix of width %d and step %d", w, step))
	}
	return colMatrix{data: data, w: w, step: step}
}

// at returns the matrix from row i, column j of the view on, and the
// leading dimension to walk it with; for a blocked view only the columns
// up to the end of j's block are the view's.
func (v colMatrix) at(i, j int) ([]float32, int) {
	i, j = i+v.row, j+v.col
	if v.w == 0 {
		return v.data[i*v.ld+j:], v.ld
	}
	s := j / v.w
	return v.data[s*v.step+i*v.w+j%v.w:], v.w
}

// sub returns the view from row i, column j on.
func (v colMatrix) sub(i, j int) colMatrix {
	v.row, v.col = v.row+i, v.col+j
	return v
}

// cols returns op(B)'s view from column j on, op(B) being v, or vᵀ when
// trans (which only a plain view can be).
func (v colMatrix) cols(j int, trans bool) colMatrix {
	if trans {
		if v.w != 0 {
			panic("cpu: a blocked matrix cannot be transposed")
		}
		return v.sub(j, 0)
	}
	return v.sub(0, j)
}

// eachRun calls fn on the contiguous runs that make up columns [0, n) of
// row i: the row itself for a plain view, one run per block for a
// blocked one.
func (v colMatrix) eachRun(i, n int, fn func(run []float32)) {
	for j := 0; j < n; {
		run, _ := v.at(i, j)
		width := n - j
		if v.w != 0 {
			width = min(width, v.w-(j+v.col)%v.w)
		}
		fn(run[:width])
		j += width
	}
}

// pack packs rows [pc, pc+kc) and columns [jc, jc+nc) of op(B) (v, or
// vᵀ when trans) into nr-column slivers with pB, block by block for a
// blocked view: every block's columns start a sliver, so its width and
// the view's first column must be multiples of nr.
func (v colMatrix) pack(pB func(dst []float32, trans bool, b []float32, ldb, pc, jc, kc, nc, nr int), dst []float32, trans bool, pc, jc, kc, nc, nr int) {
	if v.w == 0 {
		if trans {
			pB(dst, true, v.data, v.ld, v.col+pc, v.row+jc, kc, nc, nr)
			return
		}
		pB(dst, false, v.data, v.ld, v.row+pc, v.col+jc, kc, nc, nr)
		return
	}
	if v.w%nr != 0 || (v.col+jc)%nr != 0 {
		panic(fmt.Sprintf("cpu: blocked matrix of width %d packed from column %d in slivers of %d", v.w, v.col+jc, nr))
	}
	for j := jc; j < jc+nc; {
		g := j + v.col
		s := g / v.w
		end := min(jc+nc, (s+1)*v.w-v.col)
		pB(dst[(j-jc)*kc:], false, v.data[s*v.step:], v.w, v.row+pc, g-s*v.w, kc, end-j, nr)
		j = end
	}
}
