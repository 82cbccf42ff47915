// adamw.cu: one step of torch.optim.AdamW, with the float32 operations of
// tensor.AdamWStepIn (torch 1.13's _single_tensor_adamw) in their order.
//
// The contract is the CPU's values bit for bit, so every multiply, add
// and divide is an explicit round-to-nearest intrinsic: nvcc would
// otherwise fuse m·beta1 + keep1·g into one FMA (-fmad=true), which
// rounds once where the CPU rounds twice. sqrtf is IEEE (no fast math),
// and float32(math.Sqrt(float64(v))) on the CPU is the same correctly
// rounded root.

extern "C" __global__ void pc_adamw(float* w, float* g, float* m, float* v, long long n, float decay, float beta1,
                                    float beta2, float keep1, float keep2, float negStepSize, float bc2Sqrt,
                                    float eps, int zeroGrad) {
	PC_FOR_EACH(i, n) {
		float gi = g[i];
		float wi = __fmul_rn(w[i], decay);
		float mi = __fadd_rn(__fmul_rn(m[i], beta1), __fmul_rn(keep1, gi));
		float vi = __fadd_rn(__fmul_rn(v[i], beta2), __fmul_rn(__fmul_rn(keep2, gi), gi));
		m[i] = mi;
		v[i] = vi;
		float denom = __fadd_rn(__fdiv_rn(sqrtf(vi), bc2Sqrt), eps);
		// addcdiv: the product first, then the quotient, as ATen's kernel.
		w[i] = __fadd_rn(wi, __fdiv_rn(__fmul_rn(negStepSize, mi), denom));
		if (zeroGrad) g[i] = 0.0f;
	}
}
