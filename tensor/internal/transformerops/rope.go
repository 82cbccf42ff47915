package transformerops

import "math"

// ropeChunk is how many of a head's rotation pairs RoPE takes at a time:
// their frequencies, cosines and sines sit in arrays on the stack (1.5
// KiB), computed once per chunk and token position and applied to every
// head. Heads of up to 128 values, every model of the zoo's, are one
// chunk.
const ropeChunk = 64

// RoPE rotates rows [lo, hi) of x into y (which may be x itself), a row
// being one token's Heads·HeadDim values and row r's position r mod Seq:
// the rotary position embedding of Su et al. ("RoFormer", 2021, §3.2)
// in Hugging Face Llama's rotate-half layout, where value i < HeadDim/2
// of a head pairs with value i + HeadDim/2. With a = s·θ^(−2i/HeadDim)
// (−a when p.Inverse),
//
//	y[i]        = x[i]·cos a − x[i+half]·sin a
//	y[i+half]   = x[i+half]·cos a + x[i]·sin a.
//
// Frequencies and angles are float64: at position 4096 a float32 angle
// would be off by up to 2⁻¹² rad, which torch's float32 cos and sin
// carry into Hugging Face's rotations; here each output rounds once.
func RoPE(x, y []float32, p RoPESizes, lo, hi int) {
	half, width := p.HeadDim/2, p.Heads*p.HeadDim
	sign := 1.0
	if p.Inverse {
		sign = -1
	}
	var freq, cos, sin [ropeChunk]float64
	for i0 := 0; i0 < half; i0 += ropeChunk {
		n := min(ropeChunk, half-i0)
		for i := range n {
			freq[i] = math.Pow(p.Theta, -float64(2*(i0+i))/float64(p.HeadDim))
		}
		for r := lo; r < hi; r++ {
			s := float64(r % p.Seq)
			for i := range n {
				sin[i], cos[i] = math.Sincos(s * freq[i])
				sin[i] *= sign
			}
			for h := 0; h < p.Heads; h++ {
				at := r*width + h*p.HeadDim + i0
				xa, xb := x[at:at+n], x[at+half:at+half+n]
				ya, yb := y[at:at+n], y[at+half:at+half+n]
				for i := range n {
					// Both inputs are read before either output is
					// written, so y may be x.
					a, b := float64(xa[i]), float64(xb[i])
					ya[i] = float32(a*cos[i] - b*sin[i])
					yb[i] = float32(b*cos[i] + a*sin[i])
				}
			}
		}
	}
}
