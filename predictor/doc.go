// Package predictor owns the forecasts: fitting cost models of blocks,
// transfers and updates to recorded runs (least squares with gonum),
// simulating schedule programs with those costs into predicted run
// records (built by profiler.Build like measured ones), a black-box
// regression baseline beside the simulator, and the validation metrics
// (MAPE, maximum error, Kendall's τ) that say how far a forecast can be
// trusted. It runs no training.
//
// Memory is not fitted: a forecast's peak memory per device and category
// comes from running the configuration's program for one step on the
// meta backend, in the order of the simulated timeline (runner.MetaStep,
// the package's one call into the runner), so it is the runner's own
// accounting of that configuration.
package predictor
