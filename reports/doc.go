// Package reports owns the rendering of measured and predicted run
// records: tables, CSV, JSON, Markdown, pprof profiles, Chrome trace JSON
// and SVG charts. It computes no statistics of its own; those belong to
// packages profiler and predictor.
package reports
