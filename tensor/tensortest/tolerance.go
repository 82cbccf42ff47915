package tensortest

// Tolerances, relative to the float64 reference (|got − want| ≤ atol +
// rtol·|want|).
const (
	// elementwiseRTol bounds kernels that round once per element (copy,
	// add, relu, dropout, pooling's max): float32 has a unit round-off of
	// 2^-24 ≈ 6e-8, so a few ulps suffice.
	elementwiseRTol = 1e-6
	elementwiseATol = 1e-7

	// reductionRTol bounds kernels that sum k float32 terms (GEMM, conv,
	// linear, pooling means, batch-norm statistics): the worst-case error
	// of recursive summation grows as k·u (Higham, "Accuracy and
	// Stability of Numerical Algorithms", §4.2), and with k up to a few
	// thousand in these tests and random signs it stays near sqrt(k)·u;
	// 1e-4 leaves an order of magnitude of room.
	reductionRTol = 1e-4
	// reductionATol covers sums that cancel to near zero, where the
	// relative error is meaningless: inputs lie in [−1, 1), so absolute
	// errors of k·u ≈ 1e-5 are float32's own limit.
	reductionATol = 1e-5

	// refGradRTol bounds the float64 reference backwards against float64
	// central differences with step refGradStep: truncation error is
	// O(h²) ≈ 1e-8 and round-off O(ε/h) ≈ 1e-10, so 1e-6 is ample for
	// smooth functions.
	refGradRTol = 1e-6
	refGradATol = 1e-7
	refGradStep = 1e-4
)
