package reference

import (
	"fmt"

	"github.com/pipecast/pipecast/tensor"
)

// Conv2D returns y = conv(x, wt) + bias, torch's conv2d with groups 1 and
// dilation 1: x [n, c, h, w], wt [o, c, kh, kw], bias [o] or nil, and y [n,
// o, oh, ow] with (oh, ow) = p.OutSize(h, w, kh, kw):
//
//	y[b, q, i, j] = bias[q] + Σ_{ch, u, v} x[b, ch, i·StrideH − PadH + u, j·StrideW − PadW + v]·wt[q, ch, u, v]
//
// where x is zero outside [0, h)×[0, w).
func Conv2D(x []float64, n, c, h, w int, wt []float64, o, kh, kw int, bias []float64, p tensor.Conv2DParams) []float64 {
	oh, ow := convCheck("conv2d", "x", x, n, c, h, w, wt, o, kh, kw, p)
	if bias != nil && len(bias) != o {
		panic(fmt.Sprintf("reference: conv2d: bias of %d values, want %d", len(bias), o))
	}
	y := make([]float64, n*o*oh*ow)
	for b := 0; b < n; b++ {
		for q := 0; q < o; q++ {
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					s := 0.0
					if bias != nil {
						s = bias[q]
					}
					convTaps(c, h, w, kh, kw, i, j, p, func(ch, u, v, iy, ix int) {
						s += x[((b*c+ch)*h+iy)*w+ix] * wt[((q*c+ch)*kh+u)*kw+v]
					})
					y[((b*o+q)*oh+i)*ow+j] = s
				}
			}
		}
	}
	return y
}

// Conv2DBackwardData returns dx [n, c, h, w], the gradient of Conv2D with
// respect to x, from dy [n, o, oh, ow]: every output's gradient flows back
// to the inputs it read, weighted by the tap that read them.
func Conv2DBackwardData(dy []float64, n, c, h, w int, wt []float64, o, kh, kw int, p tensor.Conv2DParams) []float64 {
	oh, ow := convCheck("conv2d backward data", "dy", nil, n, c, h, w, wt, o, kh, kw, p)
	convCheckLen("conv2d backward data", "dy", dy, n*o*oh*ow)
	dx := make([]float64, n*c*h*w)
	for b := 0; b < n; b++ {
		for q := 0; q < o; q++ {
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					g := dy[((b*o+q)*oh+i)*ow+j]
					convTaps(c, h, w, kh, kw, i, j, p, func(ch, u, v, iy, ix int) {
						dx[((b*c+ch)*h+iy)*w+ix] += g * wt[((q*c+ch)*kh+u)*kw+v]
					})
				}
			}
		}
	}
	return dx
}

// Conv2DBackwardFilter returns the gradients of Conv2D with respect to its
// weights, dw [o, c, kh, kw], and bias, dbias [o] (the sums of dy per
// output channel), from x [n, c, h, w] and dy [n, o, oh, ow]. Backends
// accumulate them; this returns them alone.
func Conv2DBackwardFilter(x []float64, n, c, h, w int, dy []float64, o, kh, kw int, p tensor.Conv2DParams) (dw, dbias []float64) {
	oh, ow := convCheck("conv2d backward filter", "x", x, n, c, h, w, nil, o, kh, kw, p)
	convCheckLen("conv2d backward filter", "dy", dy, n*o*oh*ow)
	dw = make([]float64, o*c*kh*kw)
	dbias = make([]float64, o)
	for b := 0; b < n; b++ {
		for q := 0; q < o; q++ {
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					g := dy[((b*o+q)*oh+i)*ow+j]
					dbias[q] += g
					convTaps(c, h, w, kh, kw, i, j, p, func(ch, u, v, iy, ix int) {
						dw[((q*c+ch)*kh+u)*kw+v] += g * x[((b*c+ch)*h+iy)*w+ix]
					})
				}
			}
		}
	}
	return dw, dbias
}

// convTaps calls f for every kernel tap (ch, u, v) of output position (i,
// j) whose input position (iy, ix) lies inside the image; taps on the
// padding contribute zero and are skipped.
func convTaps(c, h, w, kh, kw, i, j int, p tensor.Conv2DParams, f func(ch, u, v, iy, ix int)) {
	for ch := 0; ch < c; ch++ {
		for u := 0; u < kh; u++ {
			iy := i*p.StrideH - p.PadH + u
			if iy < 0 || iy >= h {
				continue
			}
			for v := 0; v < kw; v++ {
				ix := j*p.StrideW - p.PadW + v
				if ix < 0 || ix >= w {
					continue
				}
				f(ch, u, v, iy, ix)
			}
		}
	}
}

// convCheck validates the sizes and returns the output's height and width.
// A nil x or wt is not checked (the caller has no such operand).
func convCheck(op, name string, x []float64, n, c, h, w int, wt []float64, o, kh, kw int, p tensor.Conv2DParams) (oh, ow int) {
	if err := p.Validate(); err != nil {
		panic(fmt.Sprintf("reference: %s: %v", op, err))
	}
	if n < 1 || c < 1 || h < 1 || w < 1 || o < 1 || kh < 1 || kw < 1 {
		panic(fmt.Sprintf("reference: %s: sizes n=%d c=%d h=%d w=%d o=%d kh=%d kw=%d must be positive", op, n, c, h, w, o, kh, kw))
	}
	if h+2*p.PadH < kh || w+2*p.PadW < kw {
		panic(fmt.Sprintf("reference: %s: kernel %d×%d larger than the %d×%d input padded by %d×%d", op, kh, kw, h, w, p.PadH, p.PadW))
	}
	if x != nil {
		convCheckLen(op, name, x, n*c*h*w)
	}
	if wt != nil {
		convCheckLen(op, "wt", wt, o*c*kh*kw)
	}
	return p.OutSize(h, w, kh, kw)
}

// convCheckLen panics unless s holds want values.
func convCheckLen(op, name string, s []float64, want int) {
	if len(s) != want {
		panic(fmt.Sprintf("reference: %s: %s of %d values, want %d", op, name, len(s), want))
	}
}
