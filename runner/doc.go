// Package runner owns the executor of pipeline-parallel training: one
// worker per device interprets that device's list of operations from a
// schedule program, runs them on tensor backends, feeds the data, and
// applies the optimizer step. It never decides the order of work; the
// program, built by package schedule, does.
package runner
