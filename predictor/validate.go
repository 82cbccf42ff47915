package predictor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/pipecast/pipecast/profiler"
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
	// HoldoutSeq holds out each sequence length of a language model in
	// turn: its cost model, fitted on the runs of the other lengths,
	// forecasts it (see KeySize). Records of models without sequences
	// are all of one fold, which has nothing left to fit on.
	HoldoutSeq = "seq"
	// HoldoutRandom splits the records into randomFolds folds by a
	// seeded shuffle and holds out each in turn.
	HoldoutRandom = "random"
)

// ErrNoneForecast is returned by Validate and ValidateSplit when not one
// held-out configuration could be forecast: the records to fit on hold
// no run of any held-out workload, or every forecast failed.
var ErrNoneForecast = errors.New("no held-out run could be forecast")

// randomFolds is how many folds the random holdout makes.
const randomFolds = 5

// Holdouts lists the holdouts Validate knows.
func Holdouts() []string {
	return []string{HoldoutDevices, HoldoutMicrobatch, HoldoutSeq, HoldoutRandom}
}

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
	// the same key and size, K, M and batch in the same fold.
	Winners []Winner
	// Memory compares the predicted and measured peak bytes.
	Memory MemoryRow
	// Skipped says which held-out runs had no forecast, and why.
	Skipped []string
	// Interference says, per fold and cost model, the co-location
	// slowdowns the forecasts applied (none listed: none applied).
	Interference []string
	// Drift compares, per fold, the held-out runs' block times with the
	// fitted runs' at the same micro-batch sizes (see BlockDrift): what
	// no fit of the fitted runs can see.
	Drift []Drift
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
	// FloorN counts the configurations measured in at least two
	// rounds, and FloorMAPE and FloorMax are the mean and largest of
	// their noise floors (see FloorRow): the errors with which their
	// own odd rounds forecast their even rounds. NaN when FloorN is 0.
	FloorN              int
	FloorMAPE, FloorMax float64
	// Judged counts the configurations measured in at least two rounds,
	// and Outside those of them whose forecast lies outside the range
	// of their rounds' median step times (see Pair.Outside).
	Judged, Outside int
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
	// Rounds counts the rounds that measured the configuration: its
	// records' rounds (profile --rounds), or for records outside rounds
	// each run one. RoundMin and RoundMax are the smallest and largest
	// of the rounds' median step times, in nanoseconds (equal for one
	// round); Floor is the configuration's noise floor (see FloorRow),
	// NaN for one round.
	Rounds             int
	RoundMin, RoundMax float64
	Floor              float64
	// MeasuredPeakBytes and PredictedPeakBytes are each device's peak,
	// the measured ones the largest over the runs.
	MeasuredPeakBytes, PredictedPeakBytes []int64
}

// Err is the forecast's relative error.
func (p Pair) Err() float64 { return math.Abs(p.Predicted-p.Measured) / p.Measured }

// Judged says whether the configuration was measured in at least two
// rounds, so that Outside can tell a forecast off its measurements from
// one within what measuring again moves.
func (p Pair) Judged() bool { return p.Rounds >= 2 }

// Outside says whether a judged configuration's forecast lies outside
// [RoundMin, RoundMax], the range of its rounds' median step times;
// false for a configuration not judged.
func (p Pair) Outside() bool {
	return p.Judged() && (p.Predicted < p.RoundMin || p.Predicted > p.RoundMax)
}

// ErrBeyondSpread is how far the forecast lies outside the range of its
// configuration's rounds' median step times (and the measured median),
// above the slowest or below the fastest, relative to the measured
// median: 0 for a forecast between them. A configuration measured in one
// round has no spread, and its whole error counts.
func (p Pair) ErrBeyondSpread() float64 {
	lo, hi := min(p.RoundMin, p.Measured), max(p.RoundMax, p.Measured)
	return max(0, (p.Predicted-hi)/p.Measured, (lo-p.Predicted)/p.Measured)
}

// BaselineErr is the baseline's relative error.
func (p Pair) BaselineErr() float64 { return math.Abs(p.Baseline-p.Measured) / p.Measured }

// Winner is one gpipe-against-coop comparison: which the measurements
// and which the forecasts find faster. Where the forecasts are equal (on
// one device with one micro-batch both schedules run the same ops) the
// forecast picks neither: PredictedFaster is "tie", and Agree is false
// but the comparison is no disagreement either (see Tie).
type Winner struct {
	Key Key
	// Seq is a language model's sequence length, 0 (left out of JSON)
	// for any other model.
	Seq                             int `json:",omitempty"`
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
// HoldoutDevices, HoldoutMicrobatch, HoldoutSeq, HoldoutRandom; seed orders the
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
			m := r.Config.MicroBatchSize()
			return m, fmt.Sprintf("m=%d", m)
		})
	case HoldoutSeq:
		folds = foldsBy(measured, func(_ int, r *profiler.Record) (int, string) {
			return r.Config.Seq, fmt.Sprintf("S=%d", r.Config.Seq)
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
		return nil, fmt.Errorf("validate: %w: %v", ErrNoneForecast, v.Skipped)
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
		return nil, fmt.Errorf("validate %s: %w: %v", name, ErrNoneForecast, v.Skipped)
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
