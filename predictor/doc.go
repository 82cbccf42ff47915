// Package predictor owns the forecasts: fitting cost models of blocks,
// transfers, updates and memory to recorded runs (least squares with
// gonum), simulating schedule programs with those costs into predicted run
// records, a black-box regression baseline beside the simulator, and the
// validation metrics (MAPE, maximum error, Kendall's τ) that say how far a
// forecast can be trusted. It runs no training.
package predictor
