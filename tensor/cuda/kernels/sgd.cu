// sgd.cu: one step of torch.optim.SGD, with the CPU backend's float32
// operations in the same order (torch 1.13's _single_tensor_sgd).

extern "C" __global__ void pc_sgd(float* w, const float* g, float* buf, long long n, float lr, float momentum,
                                  float dampening, float wd, int nesterov, int first) {
	// Without momentum the buffer is neither needed nor touched.
	if (buf == 0 || momentum == 0.0f) {
		PC_FOR_EACH(i, n) {
			float wi = w[i];
			w[i] = wi - lr * (g[i] + wd * wi);
		}
		return;
	}
	float keep = 1.0f - dampening;
	PC_FOR_EACH(i, n) {
		float wi = w[i];
		float d = g[i] + wd * wi;
		// torch clones d into the buffer on the first step, undamped.
		float b = first ? d : momentum * buf[i] + keep * d;
		buf[i] = b;
		w[i] = wi - lr * (nesterov ? d + momentum * b : b);
	}
}
