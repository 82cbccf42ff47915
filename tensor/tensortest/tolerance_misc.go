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

	// adamwRTol, adamwWeightATol and adamwMomentATol bound weights and
	// moments after adamwSteps float32 steps against float64 ones, with
	// |w|, |g| < 1. Each step rounds a handful of operations per value;
	// over 2·10⁵ values of each of the test's cases the worst errors were
	// 4.0e-7 absolute on w (|w| up to 1.5, whose ulp is 1.2e-7), 5.4e-8
	// absolute on exp_avg and 2.9e-7 relative on exp_avg_sq, a sum of
	// non-negative terms that cannot cancel, so it needs no absolute
	// part. Each bound leaves a factor of 2.5 to 4; that on w still
	// catches the default weight decay misapplied, which moves w by
	// lr·wd·|w| = 1e-5·|w| a step. exp_avg can cancel towards 0, where
	// only the absolute part holds.
	adamwRTol       = 1e-6
	adamwWeightATol = 1e-6
	adamwMomentATol = 2e-7
)
