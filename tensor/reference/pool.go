package reference

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// MaxPool2D is torch's max_pool2d (dilation 1, ceil_mode off) on x [n, c,
// h, w]: each output is the maximum of its KH×KW window, padding counting
// as −∞. It returns y [n, c, OH, OW] with OH, OW from p.OutSize.
func MaxPool2D(x []float64, n, c, h, w int, p tensor.Pool2DParams) []float64 {
	oh, ow := poolCheck("maxpool2d", x, n, c, h, w, p)
	y := make([]float64, n*c*oh*ow)
	for pl := 0; pl < n*c; pl++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				at := poolMaxAt(x[pl*h*w:(pl+1)*h*w], h, w, i, j, p)
				y[(pl*oh+i)*ow+j] = x[pl*h*w+at]
			}
		}
	}
	return y
}

// MaxPool2DBackward returns dx [n, c, h, w] for max_pool2d: each output's
// gradient dy [n, c, OH, OW] goes to the position of its window's maximum
// in x, and windows that overlap add up. Among tied maxima the first in
// row-major order wins: torch's CPU kernel scans the window rows then
// columns and moves its recorded index only on a strictly greater value
// (or a NaN).
func MaxPool2DBackward(x, dy []float64, n, c, h, w int, p tensor.Pool2DParams) []float64 {
	oh, ow := poolCheck("maxpool2d backward", x, n, c, h, w, p)
	poolCheckLen("maxpool2d backward", "dy", dy, n*c*oh*ow)
	dx := make([]float64, len(x))
	for pl := 0; pl < n*c; pl++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				at := poolMaxAt(x[pl*h*w:(pl+1)*h*w], h, w, i, j, p)
				dx[pl*h*w+at] += dy[(pl*oh+i)*ow+j]
			}
		}
	}
	return dx
}

// poolMaxAt returns the index in the h×w plane x of the maximum of output
// (i, j)'s window, the first one on ties.
func poolMaxAt(x []float64, h, w, i, j int, p tensor.Pool2DParams) int {
	best, at := math.Inf(-1), -1
	for r := i*p.StrideH - p.PadH; r < i*p.StrideH-p.PadH+p.KH; r++ {
		for s := j*p.StrideW - p.PadW; s < j*p.StrideW-p.PadW+p.KW; s++ {
			if r < 0 || r >= h || s < 0 || s >= w {
				continue
			}
			if v := x[r*w+s]; at < 0 || v > best || math.IsNaN(v) {
				best, at = v, r*w+s
			}
		}
	}
	return at
}

// AvgPool2D is torch's avg_pool2d with count_include_pad=True and
// ceil_mode off on x [n, c, h, w]: each output is the sum of its window's
// elements inside the input divided by KH·KW, the padding counting as
// zeros. It returns y [n, c, OH, OW].
func AvgPool2D(x []float64, n, c, h, w int, p tensor.Pool2DParams) []float64 {
	oh, ow := poolCheck("avgpool2d", x, n, c, h, w, p)
	y := make([]float64, n*c*oh*ow)
	div := float64(p.KH * p.KW)
	for pl := 0; pl < n*c; pl++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				sum := 0.0
				poolWindow(h, w, i, j, p, func(at int) { sum += x[pl*h*w+at] })
				y[(pl*oh+i)*ow+j] = sum / div
			}
		}
	}
	return y
}

// AvgPool2DBackward returns dx [n, c, h, w] for avg_pool2d: each output's
// gradient, divided by KH·KW, goes to every input position of its window.
func AvgPool2DBackward(dy []float64, n, c, h, w int, p tensor.Pool2DParams) []float64 {
	oh, ow := poolCheck("avgpool2d backward", nil, n, c, h, w, p)
	poolCheckLen("avgpool2d backward", "dy", dy, n*c*oh*ow)
	dx := make([]float64, n*c*h*w)
	div := float64(p.KH * p.KW)
	for pl := 0; pl < n*c; pl++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				g := dy[(pl*oh+i)*ow+j] / div
				poolWindow(h, w, i, j, p, func(at int) { dx[pl*h*w+at] += g })
			}
		}
	}
	return dx
}

// poolWindow calls f with the plane index of every input position inside
// output (i, j)'s window.
func poolWindow(h, w, i, j int, p tensor.Pool2DParams, f func(at int)) {
	for r := i*p.StrideH - p.PadH; r < i*p.StrideH-p.PadH+p.KH; r++ {
		for s := j*p.StrideW - p.PadW; s < j*p.StrideW-p.PadW+p.KW; s++ {
			if r >= 0 && r < h && s >= 0 && s < w {
				f(r*w + s)
			}
		}
	}
}

// AdaptiveBin returns the input range [lo, hi) that output cell i of out
// cells covers in an axis of size in: lo = floor(i·in/out), hi =
// ceil((i+1)·in/out), as torch's adaptive pooling bins it. Neighbouring
// bins may overlap, and when out > in several cells share one input.
func AdaptiveBin(i, in, out int) (lo, hi int) {
	return i * in / out, ((i+1)*in + out - 1) / out
}

// AdaptiveAvgPool2D is torch's adaptive_avg_pool2d of x [n, c, h, w] to y
// [n, c, oh, ow]: each output is the mean of its cell (AdaptiveBin on both
// axes), divided by the cell's own size.
func AdaptiveAvgPool2D(x []float64, n, c, h, w, oh, ow int) []float64 {
	poolCheckAdaptive("adaptive avgpool2d", n, c, h, w, oh, ow)
	poolCheckLen("adaptive avgpool2d", "x", x, n*c*h*w)
	y := make([]float64, n*c*oh*ow)
	for pl := 0; pl < n*c; pl++ {
		for i := 0; i < oh; i++ {
			r0, r1 := AdaptiveBin(i, h, oh)
			for j := 0; j < ow; j++ {
				s0, s1 := AdaptiveBin(j, w, ow)
				sum := 0.0
				for r := r0; r < r1; r++ {
					for s := s0; s < s1; s++ {
						sum += x[(pl*h+r)*w+s]
					}
				}
				y[(pl*oh+i)*ow+j] = sum / float64((r1-r0)*(s1-s0))
			}
		}
	}
	return y
}

// AdaptiveAvgPool2DBackward returns dx [n, c, h, w] for
// adaptive_avg_pool2d from dy [n, c, oh, ow]: each output's gradient,
// divided by its cell's size, goes to every input of the cell.
func AdaptiveAvgPool2DBackward(dy []float64, n, c, h, w, oh, ow int) []float64 {
	poolCheckAdaptive("adaptive avgpool2d backward", n, c, h, w, oh, ow)
	poolCheckLen("adaptive avgpool2d backward", "dy", dy, n*c*oh*ow)
	dx := make([]float64, n*c*h*w)
	for pl := 0; pl < n*c; pl++ {
		for i := 0; i < oh; i++ {
			r0, r1 := AdaptiveBin(i, h, oh)
			for j := 0; j < ow; j++ {
				s0, s1 := AdaptiveBin(j, w, ow)
				g := dy[(pl*oh+i)*ow+j] / float64((r1-r0)*(s1-s0))
				for r := r0; r < r1; r++ {
					for s := s0; s < s1; s++ {
						dx[(pl*h+r)*w+s] += g
					}
				}
			}
		}
	}
	return dx
}

// poolCheck panics on invalid parameters or sizes, or an x (unless nil)
// that does not hold n·c·h·w values, and returns the output size.
func poolCheck(op string, x []float64, n, c, h, w int, p tensor.Pool2DParams) (oh, ow int) {
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("reference: %s: %v", op, err))
	}
	oh, ow = p.OutSize(h, w)
	if n < 1 || c < 1 || h < 1 || w < 1 || oh < 1 || ow < 1 {
		panic(fmt.Sprintf("reference: %s: input [%d %d %d %d] gives output %dx%d", op, n, c, h, w, oh, ow))
	}
	if x != nil {
		poolCheckLen(op, "x", x, n*c*h*w)
	}
	return oh, ow
}

func poolCheckAdaptive(op string, n, c, h, w, oh, ow int) {
	if n < 1 || c < 1 || h < 1 || w < 1 || oh < 1 || ow < 1 {
		panic(fmt.Sprintf("reference: %s: input [%d %d %d %d] to %dx%d", op, n, c, h, w, oh, ow))
	}
}

func poolCheckLen(op, name string, s []float64, n int) {
	if len(s) != n {
		panic(fmt.Sprintf("reference: %s: %s of %d values, want %d", op, name, len(s), n))
	}
}
