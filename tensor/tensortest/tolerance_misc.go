package tensortest

// Tolerances of the loss and optimizer kernels, in the same form as those
// in tolerance.go.
const (
	// softmaxLossRTol bounds the cross-entropy loss, which backends
	// compute in float64 from the same float32 logits as the reference:
	// the two differ only in the order of float64 sums of up to
	// N·classes ≈ 1e4 terms and in exp/log's last bits, about 1e4·2^-53
	// ≈ 1e-12 relative; 1e-10 leaves room for a backend whose
	// exponential is a little less accurate than Go's.
	softmaxLossRTol = 1e-10
	// softmaxGradRTol and softmaxGradATol bound dlogits, each rounded once
	// from float64 to float32 (relative 2^-24 ≈ 6e-8); the absolute part
	// covers the label's entry, softmax − 1, which cancels towards 0.
	softmaxGradRTol = elementwiseRTol
	softmaxGradATol = elementwiseATol

	// sgdRTol and sgdATol bound weights and momentum buffers after
	// sgdSteps float32 steps against float64 ones. With |g| < 1 and
	// momentum 0.9 the buffer stays below Σ_{k<5} 0.9^k ≈ 4.1, whose ulp
	// is 4.8e-7; each step rounds a handful of operations, and the worst
	// error measured over the test's cases is 5.1e-7. 2e-6 absolute
	// leaves a factor four and still catches a weight decay of 1e-4
	// misapplied at learning rate 0.1, which moves w by 1e-5 per step.
	sgdRTol = 1e-6
	sgdATol = 2e-6
)
