// Package profiler owns the record of a run: the recorder of events and
// memory on every device, the versioned run-record schema that measured
// and predicted runs share, the one builder of records (Build: a run's
// configuration, partition, environment and each device's events, memory
// and losses → the record with its summary, used by the runner for
// measured runs and by the predictor for forecasts), the statistics
// records report (Median), and reading and writing datasets of run
// records as JSON Lines, one complete record per line. It renders
// nothing; package reports does.
package profiler
