package cpu

// A stride-1 convolution's column matrix is, tap by tap, the input plane
// shifted: row (c, i, j) holds x[c, oy − PH + i, ox − PW + j] at
// (oy, ox). For the narrow maps of the networks' later stages (output
// rows of 4 to 16 values) the copies and clears of each output row
// cost more, call by call, than the values they move, and a table of
// offsets (tapTable) reads value by value. im2colPadded instead copies
// each channel's plane once into a zero-bordered buffer, from which
// every tap's rows are one band (copyRows), with no bounds to test and
// no padding to clear; col2imPadded adds the bands back the same way
// (addRows), into a zeroed padded plane whose interior it then copies
// out.

// convPaddedMax bounds the padded plane im2colPadded keeps on the stack.
const convPaddedMax = 1024

// paddedRows reports whether im2col copies this convolution's rows from
// a padded plane: stride 1, output rows of 4 to 16 values (fixed-size
// copies for 4, 8 and 16, copy for the others: Inception-v3's 9×9 maps
// at 96 px lowered in half the time of the tap table), and a padded
// plane that fits convPaddedMax.
func (g *convGeom) paddedRows() bool {
	if g.p.StrideH != 1 || g.p.StrideW != 1 {
		return false
	}
	if g.ow < 4 || g.ow > 16 {
		return false // a row of 1 to 3 values costs less through a tap table
	}
	hp, wp := g.h+2*g.p.PadH, g.w+2*g.p.PadW
	// The rows a tap reads must lie inside the padded plane: they do
	// when the output is the padded input less the kernel, as for every
	// stride-1 convolution.
	return hp*wp <= convPaddedMax && g.ow == wp-g.kw+1 && g.oh == hp-g.kh+1
}

// im2colPadded is im2colRows for the convolutions paddedRows accepts:
// rows [lo, hi) of one sample's column matrix col [K, P] (rows ld apart)
// from x [C, H, W].
func (g *convGeom) im2colPadded(x, col []float32, ld, lo, hi int) {
	var buf [convPaddedMax]float32
	ph, pw := g.p.PadH, g.p.PadW
	wp := g.w + 2*pw
	pad := buf[:(g.h+2*ph)*wp]
	plane, taps, pix := g.h*g.w, g.kh*g.kw, g.pixels()
	cur := -1
	for r := lo; r < hi; r++ {
		c, t := r/taps, r%taps
		if c != cur {
			// The borders stay zero: only the interior is written.
			copyRows(pad[ph*wp+pw:], wp, x[c*plane:(c+1)*plane], g.w, g.h, g.w)
			cur = c
		}
		i, j := t/g.kw, t%g.kw
		copyRows(col[r*ld:r*ld+pix], g.ow, pad[i*wp+j:], wp, g.oh, g.ow)
	}
}

// col2imPadded is col2imChannels for the convolutions paddedRows
// accepts: channels [lo, hi) of one sample's input gradient dx [C, H, W]
// from its column gradient dcol [K, P] (rows ld apart). Every value of
// dx gets the same additions in the same order as in col2imChannels
// (taps in order onto zero), so the two agree bit for bit; what lands in
// the border is padding, dropped.
func (g *convGeom) col2imPadded(dcol []float32, ld int, dx []float32, lo, hi int) {
	var buf [convPaddedMax]float32
	ph, pw := g.p.PadH, g.p.PadW
	wp := g.w + 2*pw
	pad := buf[:(g.h+2*ph)*wp]
	plane, taps, pix := g.h*g.w, g.kh*g.kw, g.pixels()
	for c := lo; c < hi; c++ {
		clear(pad)
		for t := range taps {
			i, j := t/g.kw, t%g.kw
			addRows(pad[i*wp+j:], wp, dcol[(c*taps+t)*ld:(c*taps+t)*ld+pix], g.ow, g.oh, g.ow)
		}
		copyRows(dx[c*plane:(c+1)*plane], g.w, pad[ph*wp+pw:], wp, g.h, g.w)
	}
}
