package predictor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
)

// add fits on f's training records and forecasts its held-out
// configurations.
func (v *Validation) add(ctx context.Context, f fold) error {
	fits, err := Fit(f.train)
	if err != nil {
		return fmt.Errorf("validate %s: %w", f.name, err)
	}
	base, err := FitBaseline(f.train)
	if err != nil {
		return fmt.Errorf("validate %s: %w", f.name, err)
	}
	for _, k := range sortedFitKeys(fits) {
		if lv := fits[k].Interference(); len(lv) > 1 {
			var parts []string
			for _, l := range lv[1:] {
				parts = append(parts, fmt.Sprintf("×%.3f at %d devices", l.Factor, l.Devices))
			}
			v.Interference = append(v.Interference, fmt.Sprintf("%s, %s: interference %s", f.name, k, strings.Join(parts, ", ")))
		}
	}
	for _, d := range BlockDrift(f.train, f.test) {
		d.Fold = f.name
		v.Drift = append(v.Drift, d)
	}
	for _, runs := range groupRuns(f.test) {
		r := &runs[0]
		skip := func(err error) {
			v.Skipped = append(v.Skipped, fmt.Sprintf("%s: run %s (%s K=%d M=%d): %v",
				f.name, r.ID, r.Config.Schedule, r.Config.Devices, r.Config.Micro, err))
		}
		c, ok := fits[KeyOf(r)]
		if !ok {
			skip(fmt.Errorf("no records of %s to fit on", KeyOf(r)))
			continue
		}
		cfg, err := config.FromRecord(r)
		if err != nil {
			return fmt.Errorf("validate %s: %w", f.name, err)
		}
		pred, err := Predict(ctx, c, cfg)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			skip(err)
			continue
		}
		bt, err := base.Predict(cfg)
		if err != nil {
			skip(err)
			continue
		}
		measured, noise, spread := measuredSteps(runs)
		rs := roundsOf(runs)
		p := Pair{
			ID: r.ID, Runs: len(runs), Key: KeyOf(r), Config: r.Config, Fold: f.name,
			Measured: measured, Predicted: float64(pred.Summary.StepNanosMedian),
			Baseline: bt, Noise: noise, RunSpread: spread,
			Rounds: rs.n, RoundMin: rs.lo, RoundMax: rs.hi, Floor: rs.floor,
		}
		for _, run := range runs {
			for d, dev := range run.Devices {
				if d == len(p.MeasuredPeakBytes) {
					p.MeasuredPeakBytes = append(p.MeasuredPeakBytes, 0)
				}
				p.MeasuredPeakBytes[d] = max(p.MeasuredPeakBytes[d], dev.PeakBytes)
			}
		}
		for _, d := range pred.Devices {
			p.PredictedPeakBytes = append(p.PredictedPeakBytes, d.PeakBytes)
		}
		if p.Measured <= 0 {
			skip(errors.New("measured median step time is not positive"))
			continue
		}
		v.Pairs = append(v.Pairs, p)
	}
	return nil
}

// runKey identifies a record's configuration: the workload, the run
// configuration (model, sizes, schedule and options, threads, steps, seed,
// optimizer) and the partition. Records alike in it are repeated runs of
// one configuration.
func runKey(r *profiler.Record) string {
	c := r.Config
	c.BalanceNanos = nil // the partition, not the times that chose it
	return fmt.Sprintf("%v|%+v|%s|%v", KeyOf(r), c, r.Env.Backend, r.Bounds())
}

// groupRuns groups records by runKey, in the order of each group's first
// record.
func groupRuns(recs []profiler.Record) [][]profiler.Record {
	index := map[string]int{}
	var out [][]profiler.Record
	for _, r := range recs {
		k := runKey(&r)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// MeasuredStepNanos returns the median step time of runs, over every
// measured step of every run, as validation compares a forecast with
// it; 0 for no runs.
func MeasuredStepNanos(runs []profiler.Record) int64 {
	if len(runs) == 0 {
		return 0
	}
	med, _, _ := measuredSteps(runs)
	return int64(math.Round(med))
}

// measuredSteps returns the median step time of the runs, over every
// measured step of every run; the median over the runs of their steps'
// (max − min)/median; and (max − min)/median of the runs' median step
// times. Runs that list no steps count their summary's median, minimum
// and maximum.
func measuredSteps(runs []profiler.Record) (med, noise, spread float64) {
	var all, noises, medians []float64
	for _, r := range runs {
		steps := stepTimes(&r)
		all = append(all, steps...)
		lo, hi, m := slices.Min(steps), slices.Max(steps), profiler.Median(steps)
		if m > 0 {
			noises = append(noises, (hi-lo)/m)
			medians = append(medians, m)
		}
	}
	med = profiler.Median(all)
	if len(medians) > 1 {
		spread = (slices.Max(medians) - slices.Min(medians)) / profiler.Median(medians)
	}
	return med, profiler.Median(noises), spread
}

// sortedFitKeys returns fits' keys in a fixed order.
func sortedFitKeys(fits map[Key]*CostModel) []Key {
	keys := make([]Key, 0, len(fits))
	for k := range fits {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
