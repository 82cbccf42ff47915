// Package runner owns the executor of pipeline-parallel training: one
// worker per device interprets that device's list of operations from a
// schedule program, runs them on tensor backends, feeds the data, and
// applies the optimizer step. It never decides the order of work; the
// program, built by package schedule, does, and what a run is (its
// config.Config, checked by Config.Validate and partitioned by
// Config.Partition) is package config's.
//
// Run trains a configuration and returns every step and device;
// Result.Record hands them to profiler.Build for the run record. MetaStep
// runs one steady-state step on the meta backend, which is how the
// predictor reads a configuration's exact memory without training.
package runner
