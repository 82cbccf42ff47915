package models

// Tolerances of the layer tests, in compare's form: |got − want| ≤
// rtol·|want| + atol·scale, where scale is the largest expected value
// (for gradients, the largest gradient of the layer; see compareScaled).
const (
	// layerRTol and layerATol bound a float32 layer against its float64
	// reference. Outputs and gradients here are sums of at most a few
	// hundred products of values in [−1, 1]; recursive summation errs by
	// about √k·u relative to the terms' magnitude (Higham, "Accuracy and
	// Stability of Numerical Algorithms", §4.2; u = 2^-24 ≈ 6e-8), so a
	// little over 1e-7 of the largest value. The worst error measured over
	// the leaf tests is 6e-8 of it (a few ulps); 1e-6 leaves a margin of
	// more than ten and still fails a gradient that misses one term.
	layerRTol = 1e-5
	layerATol = 1e-6

	// blockRTol and blockATol bound composed blocks, where three to nine
	// layers' rounding errors add up and each batch norm rescales its
	// input's error by γ/σ of the batch: ten times the single-layer
	// bounds. The worst error measured over the container tests is 7e-8
	// of the largest value.
	blockRTol = 1e-4
	blockATol = 1e-5

	// fdStep is the central-difference step for the float64 reference
	// models. Truncation errs by O(h²) ≈ 1e-12 and round-off by
	// O(ε·|f|/h) ≈ 2e-9 for the test scalars |f| ≲ 10; the step is small
	// so that a perturbation rarely moves a ReLU or max-pool input across
	// a kink (with inputs spread over [−1, 1], a chance of about h per
	// unit).
	fdStep = 1e-6
	// fdTol bounds the reference models' backwards against central
	// differences, relative to the largest gradient element (of order
	// 1): fifty times the round-off above. The worst error measured is
	// 1.2e-9.
	fdTol = 1e-7

	// sgdTol bounds weights and momentum buffers after a few float32 SGD
	// steps, relative to the largest value (≈ 2): each step rounds a few
	// operations on values below 2, whose ulp is 2.4e-7, so the error
	// stays under 1e-6 (the worst measured is a quarter of the bound);
	// 1e-6 of 2 still catches a weight decay of 1e-4 misapplied at
	// learning rate 0.1, which moves a weight by 1e-5.
	sgdTol = 1e-6
)
