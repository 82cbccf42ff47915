// Package config owns what a run is before it runs: one run's
// configuration (Config) with the defaults the runner fills, Validate with
// every rule of what can run and the reason when something cannot, the
// typed balance and the one function that turns it into block costs and
// stage bounds (with the memory model the memory balance minimises, and
// splits given whole), sweeps (lists of values → configurations, Sweep.Expand),
// and the configuration's form in a run record (RecordConfig,
// FromRecord).
//
// The runner, the predictor and the command line all import config; it
// imports neither the runner nor the predictor, and no compute backend:
// models are described on the meta backend, which counts shapes and
// costs without holding values.
package config
