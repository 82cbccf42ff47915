// rope.cu: the rotary position embedding of Su et al. ("RoFormer", 2021,
// §3.2) in Hugging Face Llama's rotate-half layout, where value i <
// headDim/2 of a head pairs with value i + headDim/2.
//
// The angles are double, from theta passed as a double: at position 4096
// a float32 angle would be off by up to 2⁻¹² rad, and float32 sines and
// cosines add their own error; in double each output rounds once, as on
// the CPU (package transformerops). One thread per pair: it reads both
// values before writing either, so y may alias x.

extern "C" __global__ void pc_rope(const float* x, float* y, long long rows, int seq, int heads, int headDim,
                                   double theta, int inverse) {
	int half = headDim / 2;
	long long total = rows * heads * half;
	if (half <= 0 || seq <= 0) return;
	PC_FOR_EACH(p, total) {
		int i, h, s;
		long long rh = pc_divmod(p, half, &i);
		long long r = pc_divmod(rh, heads, &h);
		pc_divmod(r, seq, &s);
		double a = (double)s * pow(theta, -(double)(2 * i) / (double)headDim);
		double sn = sin(a), cs = cos(a);
		if (inverse) sn = -sn;
		long long at = rh * headDim + i;
		double xa = x[at], xb = x[at + half];
		y[at] = (float)(xa * cs - xb * sn);
		y[at + half] = (float)(xb * cs + xa * sn);
	}
}
