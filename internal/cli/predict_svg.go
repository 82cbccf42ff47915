package cli

import (
	"io"

	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// writePredictionTimeline draws the timeline of the forecast pred; when
// recs holds a measured run of exactly its configuration (see
// sameConfiguration) with events, that run's median step follows it on
// the same time axis, the bands labelled "predicted" and "measured".
func writePredictionTimeline(w io.Writer, pred profiler.Record, recs []profiler.Record) error {
	for _, r := range recs {
		if !sameConfiguration(&pred, &r) {
			continue
		}
		if step, ok := reports.MedianStep(r); ok {
			return reports.WriteTimelinesSVG(w, []reports.TimelineRun{
				{Record: pred, Step: pred.Steps[0].Step, Label: "predicted"},
				{Record: r, Step: step, Label: "measured"},
			})
		}
	}
	return reports.WriteTimelineSVG(w, pred, pred.Steps[0].Step)
}

// sameConfiguration reports whether two records ran (or forecast) one
// configuration: the same cost-model key (model, sizes, backend,
// threads, transport) and sizes (a language model's sequence length,
// which its key leaves out), the same batch, K, M, schedule and options,
// balance and straggler. Steps, seed, data and optimizer do not change
// what a step's timeline looks like, and a forecast does not set them as
// a run does.
func sameConfiguration(a, b *profiler.Record) bool {
	x, y := a.Config, b.Config
	return predictor.KeyOf(a) == predictor.KeyOf(b) && x.SizeRecord == y.SizeRecord && x.Batch == y.Batch && x.RecordOptions == y.RecordOptions &&
		x.Balance == y.Balance && x.StragglerDevice == y.StragglerDevice && x.StragglerFactor == y.StragglerFactor
}
