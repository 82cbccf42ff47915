package cpu

import (
	"math"

	"github.com/pipecast/pipecast/tensor"
)

// DropoutForward sets y = x·keep/(1 − p), keep being tensor.DropoutKeep of
// each element: row i of x's outermost dimension is sample key.Sample + i.
// p = 0 copies x and p = 1 gives zeros, as torch does.
func (d *Device) DropoutForward(x, y *tensor.Tensor, p float32, key tensor.DropoutKey) {
	d.dropout("dropout forward", x, y, p, key)
}

// DropoutBackward sets dx = dy·keep/(1 − p) with the mask of the forward
// that had the same p and key.
func (d *Device) DropoutBackward(dy, dx *tensor.Tensor, p float32, key tensor.DropoutKey) {
	d.dropout("dropout backward", dy, dx, p, key)
}

// dropout applies the mask of (p, key) to in, scaled, writing out; the
// forward and the backward are the same map.
func (d *Device) dropout(op string, in, out *tensor.Tensor, p float32, key tensor.DropoutKey) {
	tensor.CheckDropout(op, in, out, p)
	src := d.data(op, in, in.Len())
	dst := d.data(op, out, in.Len())
	switch p {
	case 0:
		d.pool.parallel(len(dst), elementGrain, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
		return
	case 1:
		d.pool.parallel(len(dst), elementGrain, func(lo, hi int) { clear(dst[lo:hi]) })
		return
	}
	// torch scales by 1/(1 − p) computed once; rounding it to float32
	// first costs one ulp at most.
	scale := float32(1 / (1 - float64(p)))
	threshold := tensor.DropoutThreshold(p)
	row := in.Len() / in.Dim(0)
	// Threads split the flat elements, not the samples, so that a batch
	// of one sample is parallel too; each run within a sample hashes the
	// sample once.
	d.pool.parallel(len(dst), elementGrain, func(lo, hi int) {
		for i := lo; i < hi; {
			sample, elem := i/row, i%row
			end := min(hi, (sample+1)*row)
			h := tensor.DropoutSampleHash(key, key.Sample+sample)
			s, o := src[i:end], dst[i:end]
			s = s[:len(o)]
			for j, v := range s {
				// Which elements are kept is random: selecting the bits
				// compiles to a conditional move, where a branch would be
				// mispredicted half the time.
				b := math.Float32bits(v * scale)
				if !tensor.DropoutKeepHashed(h, elem+j, threshold) {
					b = 0
				}
				o[j] = math.Float32frombits(b)
			}
			i = end
		}
	})
}
