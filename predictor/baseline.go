package predictor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// baselineLambda is the ridge penalty of the baseline's regression, per
// record, on standardised features. The features are collinear by
// construction (the schedule one-hots sum to one, m and 1/m and M move
// together at a fixed batch), so plain least squares has no unique
// solution; a small penalty picks the smallest-norm fit among the near
// equivalent ones without biasing the predictions noticeably.
const baselineLambda = 1e-3

// baselineFeatures names the regression's features in the order
// baselineRow computes them; the intercept is fitted apart, unpenalised.
var baselineFeatures = []string{
	"K", "M", "m", "1/m", "(K-1)/M", "B", "stage-max params", "MACs per step",
	"gpipe", "coop", "1f1b", "single", "checkpoint",
}

// Baseline is the black-box forecast the simulator must beat: per Key, a
// ridge regression of the median step time on features of the
// configuration alone (device and micro-batch counts, micro-batch size,
// the GPipe bubble term (K−1)/M, batch, the largest stage's parameters,
// the step's MACs, the schedule and checkpointing), knowing nothing of
// the schedule's dependencies or of the blocks' costs.
type Baseline struct {
	fits map[Key]*baselineFit

	mu    sync.Mutex
	costs map[string]*blockCosts // described models by name and size
}

// baselineFit is one key's regression on standardised features:
// t = Intercept + Σ Coef[i]·(x[i] − Mean[i])/Scale[i].
type baselineFit struct {
	Intercept float64
	Coef      []float64
	Mean      []float64
	Scale     []float64 // 0 for a feature constant over the records, left out
	N         int
}

// blockCosts are a described model's per-block parameters and MACs, and
// its configuration with defaults filled in.
type blockCosts struct {
	config       models.Config
	params, macs []float64
	model        *models.Model // the description they come from
}

// baselineConfig is what the features are computed from.
type baselineConfig struct {
	k, micro, batch int
	sched           string
	checkpointed    bool
	stageMaxParams  float64
	macsPerSample   float64
}

// baselineRow returns the features of c.
func baselineRow(c baselineConfig) []float64 {
	k, m, b := float64(c.k), float64(c.micro), float64(c.batch)
	samples := b / m
	onehot := func(name string) float64 {
		if c.sched == name {
			return 1
		}
		return 0
	}
	ckpt := 0.0
	if c.checkpointed {
		ckpt = 1
	}
	row := []float64{
		k, m, samples, 1 / samples, (k - 1) / m, b, c.stageMaxParams, c.macsPerSample * b,
	}
	for _, name := range baselineSchedules[:baselineCheckpointColumn] {
		row = append(row, onehot(name))
	}
	row = append(row, ckpt)
	for _, name := range baselineSchedules[baselineCheckpointColumn:] {
		row = append(row, onehot(name))
	}
	return row
}

// baselineSchedules are the schedules the baseline has an indicator
// column for, in the columns' order, with the checkpoint indicator
// after the first baselineCheckpointColumn of them: the order of the
// columns as they were added, which fixes the fitted numbers, and then
// every schedule added since, so that a new schedule gets its column
// without an edit here.
var baselineSchedules = func() []string {
	out := []string{schedule.GPipe, schedule.Coop, schedule.OneF1B, schedule.Single, schedule.Interleaved, schedule.ZBH1, schedule.ZBH2}
	for _, name := range schedule.Names() {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}()

const baselineCheckpointColumn = 4

// recordBaselineConfig reads the features' inputs from a record.
func recordBaselineConfig(r *profiler.Record) baselineConfig {
	c := baselineConfig{
		k: r.Config.Devices, micro: r.Config.Micro, batch: r.Config.Batch, sched: r.Config.Schedule,
		checkpointed: r.Config.Checkpoint != "" && recomputes(r.Config.RecordOptions),
	}
	for _, s := range r.Partition {
		c.stageMaxParams = math.Max(c.stageMaxParams, float64(s.Params))
		c.macsPerSample += float64(s.MACsPerSample)
	}
	return c
}

// FitBaseline fits the baseline to the measured records among recs,
// one regression per Key. It returns ErrNoMeasured when there is none.
func FitBaseline(recs []profiler.Record) (*Baseline, error) {
	groups := map[Key][]*profiler.Record{}
	for i := range recs {
		r := &recs[i]
		if r.Kind != profiler.KindMeasured || !r.Config.DevicesAlike() { // as Fit: such a run measures its devices
			continue
		}
		if r.Config.Batch < 1 || r.Config.Micro < 1 || r.Config.Devices < 1 {
			return nil, fmt.Errorf("fit baseline: record %s: batch %d, %d micro-batches, %d devices",
				r.ID, r.Config.Batch, r.Config.Micro, r.Config.Devices)
		}
		groups[KeyOf(r)] = append(groups[KeyOf(r)], r)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("fit baseline: %w", ErrNoMeasured)
	}
	b := &Baseline{fits: map[Key]*baselineFit{}, costs: map[string]*blockCosts{}}
	for k, rs := range groups {
		x := make([][]float64, len(rs))
		y := make([]float64, len(rs))
		for i, r := range rs {
			x[i] = baselineRow(recordBaselineConfig(r))
			y[i] = float64(r.Summary.StepNanosMedian)
		}
		f, err := fitRidge(x, y, baselineLambda)
		if err != nil {
			return nil, fmt.Errorf("fit baseline %s: %w", k, err)
		}
		b.fits[k] = f
	}
	return b, nil
}

// fitRidge solves the ridge regression of y on the rows of x with an
// unpenalised intercept: the features are centred and scaled to unit
// variance, and (ZᵀZ + λ·n·I)β = Zᵀ(y − ȳ) is solved by Cholesky.
func fitRidge(x [][]float64, y []float64, lambda float64) (*baselineFit, error) {
	n := len(y)
	if n == 0 {
		return nil, errors.New("no records")
	}
	p := len(x[0])
	f := &baselineFit{Coef: make([]float64, p), Mean: make([]float64, p), Scale: make([]float64, p), N: n}
	for _, v := range y {
		f.Intercept += v / float64(n)
	}
	for j := 0; j < p; j++ {
		for i := 0; i < n; i++ {
			f.Mean[j] += x[i][j] / float64(n)
		}
		var ss float64
		for i := 0; i < n; i++ {
			d := x[i][j] - f.Mean[j]
			ss += d * d
		}
		f.Scale[j] = math.Sqrt(ss / float64(n))
		// A feature constant up to rounding carries no information.
		if f.Scale[j] <= 1e-12*math.Max(1, math.Abs(f.Mean[j])) {
			f.Scale[j] = 0
		}
	}
	z := mat.NewDense(n, p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			if f.Scale[j] != 0 {
				z.Set(i, j, (x[i][j]-f.Mean[j])/f.Scale[j])
			}
		}
	}
	a := mat.NewSymDense(p, nil)
	a.SymOuterK(1, z.T())
	for j := 0; j < p; j++ {
		// Constant features get a unit diagonal so the system stays
		// positive definite; their zero column gives them a zero weight.
		a.SetSym(j, j, a.At(j, j)+lambda*float64(n)+boolTo(f.Scale[j] == 0))
	}
	rhs := mat.NewVecDense(p, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			rhs.SetVec(j, rhs.AtVec(j)+z.At(i, j)*(y[i]-f.Intercept))
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return nil, errors.New("ridge system is not positive definite")
	}
	var beta mat.VecDense
	if err := ch.SolveVecTo(&beta, rhs); err != nil {
		return nil, fmt.Errorf("ridge solve: %w", err)
	}
	for j := 0; j < p; j++ {
		f.Coef[j] = beta.AtVec(j)
	}
	return f, nil
}

// boolTo returns 1 for true and 0 for false.
func boolTo(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// at evaluates the fit at a feature row.
func (f *baselineFit) at(row []float64) float64 {
	t := f.Intercept
	for j, v := range row {
		if f.Scale[j] != 0 {
			t += f.Coef[j] * (v - f.Mean[j]) / f.Scale[j]
		}
	}
	return t
}

// Keys returns the keys the baseline was fitted for.
func (b *Baseline) Keys() []Key {
	out := make([]Key, 0, len(b.fits))
	for k := range b.fits {
		out = append(out, k)
	}
	return out
}

// Predict returns the baseline's forecast of cfg's median step time in
// nanoseconds. cfg's key must be one the baseline was fitted for. The
// largest stage's parameters come from cfg.Bounds when set, else from the
// partition cfg's balance computes from the blocks' parameters or MACs;
// balance "time" uses the MACs partition, as the baseline knows no block
// times.
func (b *Baseline) Predict(cfg config.Config) (float64, error) {
	cfg = cfg.WithDefaults()
	costs, err := b.describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return 0, fmt.Errorf("baseline: %w", err)
	}
	k := configKey(cfg, costs.config.Record())
	f, ok := b.fits[k]
	if !ok {
		return 0, fmt.Errorf("baseline: no records of %s", k)
	}
	s := cfg.Schedule
	byCost := cfg
	if byCost.Balance == config.BalanceTime {
		byCost.Balance = config.BalanceMACs // the baseline knows no block times
	}
	bounds, err := byCost.Partition(costs.model, cfg.Stages(), nil)
	if err != nil {
		return 0, fmt.Errorf("baseline: %w", err)
	}
	c := baselineConfig{
		k: s.Devices, micro: s.Micro, batch: cfg.Batch, sched: s.Name,
		checkpointed: s.Recomputes(),
	}
	for st := 0; st+1 < len(bounds); st++ {
		var p float64
		for i := bounds[st]; i < bounds[st+1]; i++ {
			p += costs.params[i]
		}
		c.stageMaxParams = math.Max(c.stageMaxParams, p)
	}
	for _, v := range costs.macs {
		c.macsPerSample += v
	}
	if c.micro < 1 || c.batch < c.micro {
		return 0, fmt.Errorf("baseline: batch %d in %d micro-batches", c.batch, c.micro)
	}
	return f.at(baselineRow(c)), nil
}

// describe returns the per-block costs of a model, described once per
// model and size: describing builds the model's layers, which would
// dominate the time of a forecast.
func (b *Baseline) describe(name string, mc models.Config) (*blockCosts, error) {
	id := fmt.Sprintf("%s|%+v|%v", name, mc.Record(), mc.Sizes)
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.costs[id]; ok {
		return c, nil
	}
	desc, err := models.Describe(name, mc)
	if err != nil {
		return nil, err
	}
	c := &blockCosts{config: desc.Config, model: desc}
	for _, blk := range desc.Blocks {
		c.params = append(c.params, float64(blk.Cost.Params))
		c.macs = append(c.macs, float64(blk.Cost.MACs))
	}
	b.costs[id] = c
	return c, nil
}

// recomputes reports whether the recorded schedule recomputes
// checkpointed forwards (schedule.Options.Recomputes).
func recomputes(r schedule.RecordOptions) bool {
	o, err := r.Options()
	return err == nil && o.Recomputes()
}
