package predictor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/schedule"
)

// The holdouts Validate knows.
const (
	// HoldoutDevices holds out each device count K in turn: the
	// predictor, fitted on the other counts, forecasts it. With records
	// at K = 1 and 2 the K = 2 fold is fitting on single-device runs and
	// forecasting two devices.
	HoldoutDevices = "devices"
	// HoldoutMicrobatch holds out each micro-batch size m = B/M in turn.
	HoldoutMicrobatch = "microbatch"
	// HoldoutRandom splits the records into randomFolds folds by a
	// seeded shuffle and holds out each in turn.
	HoldoutRandom = "random"
)

// randomFolds is how many folds the random holdout makes.
const randomFolds = 5

// Holdouts lists the holdouts Validate knows.
func Holdouts() []string { return []string{HoldoutDevices, HoldoutMicrobatch, HoldoutRandom} }

// Validation is how well forecasts of held-out measured runs match them.
// Errors are fractions of the measured value (0.05 is 5 %).
type Validation struct {
	Holdout string
	Seed    uint64
	// Rows has one row per schedule, in schedule.Names order, then the
	// row "all" over every held-out run.
	Rows []ValidationRow
	// Pairs are the held-out configurations with their forecasts, for
	// plotting: one per configuration, however many runs measured it.
	Pairs []Pair
	// Winners compares gpipe with coop wherever both were held out for
	// the same key, K, M and batch in the same fold.
	Winners []Winner
	// Memory compares the predicted and measured peak bytes.
	Memory MemoryRow
	// Skipped says which held-out runs had no forecast, and why.
	Skipped []string
}

// ValidationRow aggregates the held-out configurations of one schedule,
// or of all ("all").
type ValidationRow struct {
	Schedule string
	// N counts the held-out configurations and Runs the measured runs
	// they stand for (more when a configuration was run repeatedly).
	N, Runs int
	// MAPE and MaxErr are the mean and largest relative errors of the
	// predicted median step times; KendallTau is τ-b between predicted
	// and measured step times (NaN with fewer than two distinct ones).
	MAPE, MaxErr, KendallTau float64
	// Noise is the median over the configurations of their runs' own
	// steps' spread, (max − min)/median within a run, the median over
	// the runs of a configuration; RunSpread the median over the
	// configurations measured more than once of the spread of their
	// runs' median step times, (max − min)/median (NaN when none was).
	// They say what measuring again could change: within a run, and
	// from one run to the next.
	Noise, RunSpread float64
	// BaselineMAPE and BaselineMaxErr are the black-box baseline's
	// errors on the same runs.
	BaselineMAPE, BaselineMaxErr float64
}

// Pair is one held-out configuration: its measured step time and the
// forecasts, in nanoseconds, and its peak bytes. A configuration that
// several runs measured (records alike in everything but their ID and
// measurements) is one pair, measured by the median of all their steps:
// a forecast is of the configuration, not of one run's luck.
type Pair struct {
	// ID is the first run's; Runs counts the runs that measured it.
	ID     string
	Runs   int
	Key    Key
	Config profiler.RunConfig
	// Fold names the held-out group: "K=2", "m=4", "fold 3".
	Fold                          string
	Measured, Predicted, Baseline float64
	// Noise is the median over the runs of their steps' (max −
	// min)/median; RunSpread is (max − min)/median of the runs' median
	// step times, 0 for one run.
	Noise, RunSpread float64
	// MeasuredPeakBytes and PredictedPeakBytes are each device's peak,
	// the measured ones the largest over the runs.
	MeasuredPeakBytes, PredictedPeakBytes []int64
}

// Err is the forecast's relative error.
func (p Pair) Err() float64 { return math.Abs(p.Predicted-p.Measured) / p.Measured }

// BaselineErr is the baseline's relative error.
func (p Pair) BaselineErr() float64 { return math.Abs(p.Baseline-p.Measured) / p.Measured }

// Winner is one gpipe-against-coop comparison: which the measurements
// and which the forecasts find faster. Where the forecasts are equal (on
// one device with one micro-batch both schedules run the same ops) the
// forecast picks neither: PredictedFaster is "tie", and Agree is false
// but the comparison is no disagreement either (see Tie).
type Winner struct {
	Key                             Key
	Devices, Micro, Batch           int
	MeasuredGPipe, MeasuredCoop     float64 // ns
	PredictedGPipe, PredictedCoop   float64 // ns
	MeasuredFaster, PredictedFaster string  // "gpipe" or "coop"; PredictedFaster may be "tie"
	Agree                           bool
}

// Tie says the forecasts found both schedules equally fast.
func (w Winner) Tie() bool { return w.PredictedFaster == Tie }

// Tie is a Winner's PredictedFaster where the forecasts are equal.
const Tie = "tie"

// MemoryRow compares predicted with measured peak bytes: MAPE and MaxErr
// of the largest device's peak per run, and DeviceMaxErr the largest
// error over every device of every run.
type MemoryRow struct {
	N            int
	MAPE, MaxErr float64
	DeviceMaxErr float64
}

// fold is one held-out group and the records it is fitted on.
type fold struct {
	name        string
	train, test []profiler.Record
}

// Validate forecasts every measured record of recs from a predictor and a
// baseline fitted without it, holding records out by holdout (see
// HoldoutDevices, HoldoutMicrobatch, HoldoutRandom; seed orders the
// random folds), and compares the forecasts with the measurements.
// Predicted records are ignored.
func Validate(ctx context.Context, recs []profiler.Record, holdout string, seed uint64) (*Validation, error) {
	var measured []profiler.Record
	for _, r := range recs {
		if r.Kind == profiler.KindMeasured {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		return nil, fmt.Errorf("validate: %w", ErrNoMeasured)
	}
	var folds []fold
	switch holdout {
	case HoldoutDevices:
		folds = foldsBy(measured, func(_ int, r *profiler.Record) (int, string) {
			return r.Config.Devices, fmt.Sprintf("K=%d", r.Config.Devices)
		})
	case HoldoutMicrobatch:
		folds = foldsBy(measured, func(_ int, r *profiler.Record) (int, string) {
			m := r.Config.Batch / r.Config.Micro
			return m, fmt.Sprintf("m=%d", m)
		})
	case HoldoutRandom:
		// Folds are drawn over configurations, so that the repeated
		// runs of one are held out together rather than fitted on.
		groups := groupRuns(measured)
		order := rand.New(rand.NewPCG(seed, 0x666f6c6473)).Perm(len(groups))
		foldOf := make(map[string]int, len(groups))
		for pos, g := range order {
			foldOf[runKey(&groups[g][0])] = pos % randomFolds
		}
		folds = foldsBy(measured, func(_ int, r *profiler.Record) (int, string) {
			f := foldOf[runKey(r)]
			return f, fmt.Sprintf("fold %d", f+1)
		})
	default:
		return nil, fmt.Errorf("validate: unknown holdout %q (want %v)", holdout, Holdouts())
	}
	v := &Validation{Holdout: holdout, Seed: seed}
	for _, f := range folds {
		if len(f.train) == 0 {
			v.Skipped = append(v.Skipped, fmt.Sprintf("%s: no records left to fit on", f.name))
			continue
		}
		if err := v.add(ctx, f); err != nil {
			return nil, err
		}
	}
	if len(v.Pairs) == 0 {
		return nil, fmt.Errorf("validate: no held-out run could be forecast: %v", v.Skipped)
	}
	v.summarise()
	return v, nil
}

// ValidateSplit fits on train and forecasts every measured record of
// test, as one fold named name: the scenario of fitting on single-device
// runs and forecasting two devices, for example.
func ValidateSplit(ctx context.Context, train, test []profiler.Record, name string) (*Validation, error) {
	v := &Validation{Holdout: name}
	var t []profiler.Record
	for _, r := range test {
		if r.Kind == profiler.KindMeasured {
			t = append(t, r)
		}
	}
	if err := v.add(ctx, fold{name: name, train: train, test: t}); err != nil {
		return nil, err
	}
	if len(v.Pairs) == 0 {
		return nil, fmt.Errorf("validate %s: no held-out run could be forecast: %v", name, v.Skipped)
	}
	v.summarise()
	return v, nil
}

// foldsBy groups records by the value group returns for each (with its
// index), in ascending order,
// each fold fitted on the records of every other group.
func foldsBy(recs []profiler.Record, group func(i int, r *profiler.Record) (int, string)) []fold {
	byValue := map[int]*fold{}
	var values []int
	for i := range recs {
		v, name := group(i, &recs[i])
		if _, ok := byValue[v]; !ok {
			byValue[v] = &fold{name: name}
			values = append(values, v)
		}
	}
	sort.Ints(values)
	for i := range recs {
		v, _ := group(i, &recs[i])
		for _, w := range values {
			if w == v {
				byValue[w].test = append(byValue[w].test, recs[i])
			} else {
				byValue[w].train = append(byValue[w].train, recs[i])
			}
		}
	}
	out := make([]fold, len(values))
	for i, v := range values {
		out[i] = *byValue[v]
	}
	return out
}

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
		p := Pair{
			ID: r.ID, Runs: len(runs), Key: KeyOf(r), Config: r.Config, Fold: f.name,
			Measured: measured, Predicted: float64(pred.Summary.StepNanosMedian),
			Baseline: bt, Noise: noise, RunSpread: spread,
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
	bounds := make([]int, 0, len(r.Partition)+1)
	for i, s := range r.Partition {
		if i == 0 {
			bounds = append(bounds, s.FirstBlock)
		}
		bounds = append(bounds, s.EndBlock)
	}
	return fmt.Sprintf("%v|%+v|%s|%v", KeyOf(r), r.Config, r.Env.Backend, bounds)
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

// measuredSteps returns the median step time of the runs, over every
// measured step of every run; the median over the runs of their steps'
// (max − min)/median; and (max − min)/median of the runs' median step
// times. Runs that list no steps count their summary's median, minimum
// and maximum.
func measuredSteps(runs []profiler.Record) (med, noise, spread float64) {
	var all, noises, medians []float64
	for _, r := range runs {
		steps := []float64{float64(r.Summary.StepNanosMedian), float64(r.Summary.StepNanosMin), float64(r.Summary.StepNanosMax)}
		if len(r.Steps) > 0 {
			steps = steps[:0]
			for _, s := range r.Steps {
				steps = append(steps, float64(s.WallNanos))
			}
		}
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

// summarise fills the rows, the winner checks and the memory row from the
// pairs.
func (v *Validation) summarise() {
	v.Rows = nil
	for _, s := range schedule.Names() {
		var ps []Pair
		for _, p := range v.Pairs {
			if p.Config.Schedule == s {
				ps = append(ps, p)
			}
		}
		if len(ps) > 0 {
			v.Rows = append(v.Rows, rowOf(s, ps))
		}
	}
	v.Rows = append(v.Rows, rowOf("all", v.Pairs))
	v.Winners = winners(v.Pairs)
	v.Memory = memoryRow(v.Pairs)
}

// rowOf aggregates pairs.
func rowOf(name string, ps []Pair) ValidationRow {
	row := ValidationRow{Schedule: name, N: len(ps)}
	for _, p := range ps {
		row.Runs += max(p.Runs, 1)
	}
	meas, pred, noise := make([]float64, len(ps)), make([]float64, len(ps)), make([]float64, len(ps))
	var spreads []float64
	for i, p := range ps {
		e, be := p.Err(), p.BaselineErr()
		row.MAPE += e / float64(len(ps))
		row.BaselineMAPE += be / float64(len(ps))
		row.MaxErr = math.Max(row.MaxErr, e)
		row.BaselineMaxErr = math.Max(row.BaselineMaxErr, be)
		meas[i], pred[i], noise[i] = p.Measured, p.Predicted, p.Noise
		if p.Runs > 1 {
			spreads = append(spreads, p.RunSpread)
		}
	}
	row.KendallTau = KendallTau(pred, meas)
	sort.Float64s(noise)
	if n := len(noise); n > 0 {
		row.Noise = (noise[(n-1)/2] + noise[n/2]) / 2
	}
	row.RunSpread = math.NaN()
	if len(spreads) > 0 {
		row.RunSpread = profiler.Median(spreads)
	}
	return row
}

// winners pairs every held-out gpipe run with every held-out coop run of
// the same key, K, M and batch held out in the same fold: forecasts from
// different fits would differ by the fits as well as by the schedules.
func winners(ps []Pair) []Winner {
	var out []Winner
	for _, g := range ps {
		if g.Config.Schedule != schedule.GPipe {
			continue
		}
		for _, c := range ps {
			if c.Config.Schedule != schedule.Coop || c.Key != g.Key || c.Config.Devices != g.Config.Devices ||
				c.Config.Micro != g.Config.Micro || c.Config.Batch != g.Config.Batch || c.Fold != g.Fold {
				continue
			}
			w := Winner{
				Key: g.Key, Devices: g.Config.Devices, Micro: g.Config.Micro, Batch: g.Config.Batch,
				MeasuredGPipe: g.Measured, MeasuredCoop: c.Measured,
				PredictedGPipe: g.Predicted, PredictedCoop: c.Predicted,
				MeasuredFaster: faster(g.Measured, c.Measured), PredictedFaster: faster(g.Predicted, c.Predicted),
			}
			if g.Predicted == c.Predicted {
				w.PredictedFaster = Tie
			}
			w.Agree = w.MeasuredFaster == w.PredictedFaster
			out = append(out, w)
		}
	}
	return out
}

// faster names the faster of gpipe's and coop's times; a tie goes to
// gpipe, the simpler schedule.
func faster(gpipe, coop float64) string {
	if coop < gpipe {
		return schedule.Coop
	}
	return schedule.GPipe
}

// memoryRow compares peak bytes: the largest device's per run, and every
// device's.
func memoryRow(ps []Pair) MemoryRow {
	var row MemoryRow
	for _, p := range ps {
		mx, px := slices.Max(append([]int64{0}, p.MeasuredPeakBytes...)), slices.Max(append([]int64{0}, p.PredictedPeakBytes...))
		if mx <= 0 {
			continue
		}
		e := math.Abs(float64(px-mx)) / float64(mx)
		row.N++
		row.MAPE += e
		row.MaxErr = math.Max(row.MaxErr, e)
		row.DeviceMaxErr = math.Max(row.DeviceMaxErr, e)
		for d, m := range p.MeasuredPeakBytes {
			if m <= 0 {
				continue
			}
			if d >= len(p.PredictedPeakBytes) {
				row.DeviceMaxErr = math.Max(row.DeviceMaxErr, 1)
				continue
			}
			row.DeviceMaxErr = math.Max(row.DeviceMaxErr, math.Abs(float64(p.PredictedPeakBytes[d]-m))/float64(m))
		}
	}
	if row.N > 0 {
		row.MAPE /= float64(row.N)
	}
	return row
}

// KendallTau returns Kendall's τ-b between x and y, which corrects τ for
// ties in either: (concordant − discordant)/√((n₀ − n₁)(n₀ − n₂)) with
// n₀ = n(n−1)/2 pairs and n₁, n₂ the pairs tied in x and in y. A pair
// tied in both counts in n₁ and n₂ but in neither sum. It returns NaN
// when τ is undefined: fewer than two values, or every pair tied in x or
// in every pair tied in y. It panics when x and y differ in length.
func KendallTau(x, y []float64) float64 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("predictor: kendall tau: %d x values and %d y values", len(x), len(y)))
	}
	n := len(x)
	var conc, disc, tiesX, tiesY float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			dx, dy := x[i]-x[j], y[i]-y[j]
			switch {
			case dx == 0 && dy == 0:
				tiesX++
				tiesY++
			case dx == 0:
				tiesX++
			case dy == 0:
				tiesY++
			case (dx > 0) == (dy > 0):
				conc++
			default:
				disc++
			}
		}
	}
	n0 := float64(n) * float64(n-1) / 2
	den := math.Sqrt((n0 - tiesX) * (n0 - tiesY))
	if den == 0 {
		return math.NaN()
	}
	return (conc - disc) / den
}
