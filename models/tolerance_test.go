package models

// Tolerances of the package's own tests, in compare's form: |got − want|
// ≤ rtol·|want| + atol·scale, where scale is the largest expected value.
// The suite's, and those of the layer and container checks, are in
// modeltest/tolerance.go.
const (
	// layerRTol and layerATol bound a float32 layer against its float64
	// reference: they are modeltest.LayerRTol and LayerATol, whose
	// comment says where they come from, for the tests here that cannot
	// import modeltest.
	layerRTol = 1e-5
	layerATol = 1e-6

	// sgdTol bounds weights and momentum buffers after a few float32 SGD
	// steps, relative to the largest value (≈ 2): each step rounds a few
	// operations on values below 2, whose ulp is 2.4e-7, so the error
	// stays under 1e-6 (the worst measured is a quarter of the bound);
	// 1e-6 of 2 still catches a weight decay of 1e-4 misapplied at
	// learning rate 0.1, which moves a weight by 1e-5.
	sgdTol = 1e-6

	// adamwTol bounds weights and moments after a few float32 AdamW
	// steps: each step rounds a handful of operations on values below
	// 1.5, and the shared suite measured at most 4e-7 absolute on the
	// weights and 3e-7 relative on exp_avg_sq (tensortest's
	// tolerance_misc.go); 1e-6 of the largest weight still catches a
	// weight decay of 0.1 misapplied at learning rate 0.01, which moves a
	// weight by 1e-3 of itself.
	adamwTol = 1e-6
)

// momentSE is how many standard errors a sample statistic may lie from
// its expected value, as in modeltest.MomentErr: a correct sampler fails
// a 5-SE check with probability about 6e-7.
const momentSE = 5
