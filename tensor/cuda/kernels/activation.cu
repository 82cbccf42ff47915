// activation.cu: the activations of decoder transformers' MLPs, GPT-2's
// GELU in its tanh form and Llama's SwiGLU, elementwise. As on the CPU
// (package transformerops), each value is computed in double, where tanh
// and exp are accurate to an ulp of double, and rounded once: float32
// tanhf and expf would cost little less on the GPU, whose double units
// these memory-bound loops leave idle, and would differ from the CPU by
// a few ulps. Each thread reads an element before writing it, so an
// output may alias an input.

// √(2/π) and the cubic term's weight of Hendrycks and Gimpel's tanh
// approximation ("Gaussian Error Linear Units", 2016, §2), as GPT-2 and
// Hugging Face's "gelu_new" write it.
#define PC_GELU_SCALE 0.7978845608028654
#define PC_GELU_CUBIC 0.044715

// pc_sigmoid is 1/(1 + e^(−g)): exactly 0 far below 0, 1 far above, never
// NaN for a finite g.
static __device__ __forceinline__ double pc_sigmoid(double g) { return 1 / (1 + exp(-g)); }

extern "C" __global__ void pc_gelu_tanh_fwd(const float* x, float* y, long long n) {
	PC_FOR_EACH(i, n) {
		double u = x[i];
		double t = tanh(PC_GELU_SCALE * (u + PC_GELU_CUBIC * u * u * u));
		y[i] = (float)(0.5 * u * (1 + t));
	}
}

// gelu′(x) = ½(1 + t) + ½x(1 − t²)·√(2/π)(1 + 3·0.044715x²), t the
// forward's tanh.
extern "C" __global__ void pc_gelu_tanh_bwd(const float* x, const float* dy, float* dx, long long n) {
	PC_FOR_EACH(i, n) {
		double u = x[i];
		double t = tanh(PC_GELU_SCALE * (u + PC_GELU_CUBIC * u * u * u));
		double grad = 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * PC_GELU_SCALE * (1 + 3 * PC_GELU_CUBIC * u * u);
		dx[i] = (float)((double)dy[i] * grad);
	}
}

// silu(g) = g·σ(g) (Shazeer, "GLU Variants Improve Transformer", 2020, §2).
extern "C" __global__ void pc_swiglu_fwd(const float* gate, const float* up, float* y, long long n) {
	PC_FOR_EACH(i, n) {
		double g = gate[i];
		y[i] = (float)(g * pc_sigmoid(g) * (double)up[i]);
	}
}

// silu′(g) = σ(g)(1 + g(1 − σ(g))).
extern "C" __global__ void pc_swiglu_bwd(const float* gate, const float* up, const float* dy, float* dgate,
                                         float* dup, long long n) {
	PC_FOR_EACH(i, n) {
		double g = gate[i], d = dy[i];
		double s = pc_sigmoid(g);
		double u = up[i];
		if (dgate != 0) dgate[i] = (float)(d * u * s * (1 + g * (1 - s)));
		if (dup != 0) dup[i] = (float)(d * g * s);
	}
}
