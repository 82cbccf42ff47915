package cli

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// predictTable is the runs table of the forecasts, titled and footnoted
// as predicted.
func predictTable(fc *forecasts) *reports.Table {
	return reports.RunsTable(fc.preds, reports.RunsTableOptions{
		Title:     predictTitle(fc.preds, fc.keys, fc.recs),
		Footnotes: append(predictFootnotes(fc.preds, fc.keys, fc.recs), fc.notes...),
	})
}

// predictTitle says that the rows are forecasts and what they rest on.
func predictTitle(preds []profiler.Record, keys []predictor.Key, recs []profiler.Record) string {
	return fmt.Sprintf("pipecast predict: %d predicted runs from %d measured runs", len(preds), fittedOfKeys(recs, keys))
}

// predictFootnotes name the cost models behind the forecasts, and say
// where a forecast needs more cores than the runs were measured on.
func predictFootnotes(preds []profiler.Record, keys []predictor.Key, recs []profiler.Record) []string {
	notes := []string{"Predicted, not measured: each run's schedule simulated with per-block, transfer and update costs " +
		"fitted to the measured runs, so step, min and max are the one simulated step; peak memory from an exact " +
		"replay of the runner's memory accounting."}
	for _, k := range keys {
		notes = append(notes, fmt.Sprintf("Fitted to %d measured runs of %s.", fittedOfKeys(recs, []predictor.Key{k}), k))
	}
	var over []string
	cores := 0
	for _, p := range preds {
		c := p.Config
		if n := p.Env.Cores; n > 0 && c.TotalThreads() > n {
			cores = n
			if s := c.ThreadsSpec(); !slices.Contains(over, s) {
				over = append(over, s)
			}
		}
	}
	if len(over) > 0 {
		notes = append(notes, fmt.Sprintf("Forecasts give every device cores of its own: %s threads exceed the %d cores "+
			"the runs were measured on, where such a run would share cores and take longer.", strings.Join(over, ", "), cores))
	}
	return notes
}

// fittedOfKeys counts the records of the keys that the fit used
// (predictor.Fitted).
func fittedOfKeys(recs []profiler.Record, keys []predictor.Key) int {
	n := 0
	for i := range recs {
		if predictor.Fitted(&recs[i]) && slices.Contains(keys, predictor.KeyOf(&recs[i])) {
			n++
		}
	}
	return n
}

// countOfKeys counts the records of the keys.
func countOfKeys(recs []profiler.Record, keys []predictor.Key) int {
	n := 0
	for i := range recs {
		if slices.Contains(keys, predictor.KeyOf(&recs[i])) {
			n++
		}
	}
	return n
}

// dataKeys returns the distinct keys of the records, sorted.
func dataKeys(recs []profiler.Record) []predictor.Key {
	var keys []predictor.Key
	for i := range recs {
		if k := predictor.KeyOf(&recs[i]); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
