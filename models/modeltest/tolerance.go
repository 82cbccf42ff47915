package modeltest

// Tolerances, in Compare's form: |got − want| ≤ rtol·|want| + atol·scale,
// where scale is the largest expected value (for gradients, the largest
// gradient of the layer or model; see CompareScaled).
const (
	// LayerRTol and LayerATol bound a float32 layer against its float64
	// reference. Outputs and gradients here are sums of at most a few
	// hundred products of values in [−1, 1]; recursive summation errs by
	// about √k·u relative to the terms' magnitude (Higham, "Accuracy and
	// Stability of Numerical Algorithms", §4.2; u = 2^-24 ≈ 6e-8), so a
	// little over 1e-7 of the largest value. The worst error measured over
	// the leaf tests is 6e-8 of it (a few ulps); 1e-6 leaves a margin of
	// more than ten and still fails a gradient that misses one term.
	LayerRTol = 1e-5
	LayerATol = 1e-6

	// BlockRTol and BlockATol bound composed blocks and whole networks,
	// where three to nine layers' rounding errors add up and each batch
	// norm rescales its input's error by γ/σ of the batch: ten times the
	// single-layer bounds. The worst error measured over the container
	// tests is 7e-8 of the largest value; those of whole networks are
	// quoted where their Cases are.
	BlockRTol = 1e-4
	BlockATol = 1e-5

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
)

// Tolerances of the train step, in CompareScaled's form with rtol 0:
// |got − want| ≤ tol·scale. A training forward of a whole network runs
// up to sixteen training-mode batch norms in series, each dividing by
// the standard deviation of as few as eight values, which amplifies the
// rounding of the layers before it, by how much depends on the draw:
// over 24 runs of a tiny resnet50 (8 seeds each at width 1/64 with
// images 33 and 65 and at width 1/32 with image 33) the worst errors
// were 17 to 64 times those of a typical seed.
const (
	// StepOutTol bounds the float32 logits and loss (scale: the largest
	// logit, at least 1) and running statistics (scale: 1, the order of
	// a batch norm's input, a normalised activation or a sum of a few)
	// after a training forward against the float64 mirror. The worst
	// errors measured over the runs above were 2.5e-4 of the largest
	// logit and 2.1e-4 in a running statistic.
	StepOutTol = 1e-3
	// StepGradTol bounds dx and the parameter gradients, scale the
	// largest gradient of the model. The gradients of the first layers
	// are sums over every position of the batch of terms that cancel
	// after the batch norms' backwards subtract their means: the worst
	// errors measured over the runs above were 7.7e-4 of the largest
	// gradient in dx and 3.4e-3 in conv1.weight's gradient. An error of
	// structure, a missing shortcut or batch-norm term, is of the order
	// of the gradient itself.
	StepGradTol = 1e-2
)
