// Package cli holds pipecast's command line: one cobra command per file,
// each an options struct filled from flags and a run function that does
// the work, so that flag parsing and running are tested apart. What a
// library user would need is not here: list flags become a config.Sweep,
// whose Check and Expand say what can run; runs, forecasts and records
// are the runner's, the predictor's and the profiler's. The command line
// maps their errors onto flags and exit codes.
//
// Data goes to standard output, messages to standard error. Exit codes:
// 0 on success, 1 when a command fails, 2 for a usage error or bad input.
package cli
