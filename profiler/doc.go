// Package profiler owns the record of a run: the recorder of events and
// memory on every device, the versioned run-record schema that measured
// and predicted runs share, and reading and writing datasets of run
// records as JSON Lines, one complete record per line. It renders
// nothing; package reports does.
package profiler
