package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
)

// After one untimed round, each concurrency level is timed in rounds
// until device 0's whole forwards add up to interferenceTimed, at least
// minInterferenceReps and at most maxInterferenceReps of them. The
// default sweep's forwards take about 4 ms and its steps about 25 ms, so
// two rounds keep the measurement near 4 % of its wall time. One
// measurement's factor is noisy (successive ones of resnet50 at width
// 0.25 spread 0.97–1.33 on a 2-core machine, with five rounds as with
// two); the predictor takes the median over its records.
const (
	interferenceTimed   = 8e6 // ns per device and level
	minInterferenceReps = 2
	maxInterferenceReps = 40
)

// maxInterferenceDevices bounds the concurrency levels measured.
const maxInterferenceDevices = 8

// CalibrateInterference measures what a forecast of n devices from
// records of one needs: how much longer the model's blocks take when n
// devices each compute a stage of them at once than they take inside a
// forward of the whole model on one device alone. Two effects meet in
// it: devices on one machine share its last-level cache and memory
// bandwidth (on one GPU, its multiprocessors), which slows them; and a
// device that holds a stage touches less memory than one that holds the
// whole model, which speeds its blocks up (fewer cache and TLB misses).
// A record of one busy device shows neither.
//
// The work is the run's own model at its micro-batch size, a
// training-mode forward with no gradient kept, each device with a replica
// of the model. For n from 2 to the devices the machine runs without
// oversubscription (its cores over the run's threads, at most 8), the
// model is split into n stages by MACs; alone, device 0 runs the whole
// forward and times each stage's span of it; together, device i runs
// stage i on its input, all n starting at once. Each round times the
// whole forward alone and then the stages together; level n's factor is
// the median over rounds of the stages' summed time together over their
// summed time alone, and Min and Max are the extremes of those ratios.
// The levels and the alone runs take turns, one round each, so that a
// change in what else the machine runs meets all alike.
//
// Where the machine runs one device only, the result holds level 1 alone.
// It costs, per level, an untimed round and then 8 ms of whole forwards
// or two of them where one takes longer (each with its stages together),
// besides building a replica of the model per device.
func CalibrateInterference(ctx context.Context, cfg config.Config) (*profiler.Interference, error) {
	cfg = cfg.WithDefaults()
	threads := max(cfg.Threads, 1)
	levels := min(max(runtime.NumCPU()/threads, 1), maxInterferenceDevices)
	mb := cfg.MicroBatchSize()
	out := &profiler.Interference{
		Work:   fmt.Sprintf("training-mode forwards of %s's stages at %d samples, together against inside a whole forward alone", cfg.Model, mb),
		Levels: []profiler.InterferenceLevel{{Devices: 1, Factor: 1, Min: 1, Max: 1}},
	}
	if levels < 2 {
		return out, nil
	}
	reps := make([]*replica, levels)
	defer func() {
		for _, r := range reps {
			if r != nil {
				r.close()
			}
		}
	}()
	// The replicas are built at once, one per device the machine runs.
	errs := make([]error, levels)
	var wg sync.WaitGroup
	for i := range reps {
		wg.Go(func() { reps[i], errs[i] = newReplica(cfg, i, threads, mb) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("calibrate interference: %w", err)
	}
	split := cfg
	split.Balance, split.Bounds = config.BalanceMACs, nil
	bounds := make([][]int, levels+1)
	for n := 2; n <= levels; n++ {
		b, err := split.Partition(reps[0].model, n, nil)
		if err != nil {
			return nil, fmt.Errorf("calibrate interference: %w", err)
		}
		bounds[n] = b
	}
	// Each replica's input for its stage at each level.
	inputs := make([][]*tensor.Tensor, levels+1)
	defer func() {
		for _, xs := range inputs {
			for _, x := range xs {
				x.Release()
			}
		}
	}()
	count := 0
	for n := 2; n <= levels; n++ {
		var whole int64
		if inputs[n], whole = warmUp(reps[:n], bounds[n]); n == 2 {
			count = int(min(max(interferenceTimed/max(float64(whole), 1), minInterferenceReps), maxInterferenceReps))
		}
	}
	ratios := make([][]float64, levels+1)
	for range count {
		for n := 2; n <= levels; n++ {
			alone := sum(reps[0].forwardSpans(bounds[n]))
			together, err := stagesTogether(ctx, reps[:n], bounds[n], inputs[n])
			if err != nil {
				return nil, fmt.Errorf("calibrate interference at %d devices: %w", n, err)
			}
			if alone > 0 {
				ratios[n] = append(ratios[n], together/alone)
			}
		}
	}
	for n := 2; n <= levels; n++ {
		r := ratios[n]
		out.Levels = append(out.Levels, profiler.InterferenceLevel{
			Devices: n, Factor: profiler.Median(r), Min: slices.Min(r), Max: slices.Max(r),
		})
	}
	return out, nil
}

func sum64(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

func sum(xs []int64) float64 {
	var s float64
	for _, x := range xs {
		s += float64(x)
	}
	return s
}

// replica is one device with a copy of the model and an input batch.
type replica struct {
	dev   tensor.Device
	model *models.Model
	x     *tensor.Tensor
}

func newReplica(cfg config.Config, index, threads, mb int) (*replica, error) {
	dev, err := tensor.Open(cfg.Backend, tensor.Options{Index: index, Threads: threads})
	if err != nil {
		return nil, err
	}
	// The weights stay as allocated (zeros): drawing them would cost more
	// than the measurement, and the kernels' time does not depend on
	// their values.
	m, err := models.Build(dev, cfg.Model, cfg.ModelConfig, nil)
	if err != nil {
		dev.Close()
		return nil, err
	}
	shape := append(tensor.Shape{mb}, m.Input...)
	x := dev.Alloc(tensor.Boundary, shape...)
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(index)))
	in := make([]float32, x.Len())
	for i := range in {
		in[i] = float32(rng.NormFloat64())
	}
	dev.Upload(x, in)
	return &replica{dev: dev, model: m, x: x}, nil
}

// forwardSpans runs one no-grad training-mode forward of blocks
// [bounds[0], bounds[len-1]) on the replica's batch, stage by stage, and
// returns each stage's time.
func (r *replica) forwardSpans(bounds []int) []int64 {
	x := r.x
	x.Retain()
	out := make([]int64, len(bounds)-1)
	for s := range out {
		start := r.dev.Now()
		y := r.run(bounds[s], bounds[s+1], x)
		out[s] = r.dev.Now() - start
		x.Release()
		x = y
	}
	x.Release()
	return out
}

// run runs blocks [lo, hi) on x, a no-grad training-mode forward that
// leaves the running statistics alone, and returns the output.
func (r *replica) run(lo, hi int, x *tensor.Tensor) *tensor.Tensor {
	y, c := r.model.Stage(lo, hi).Forward(&models.Pass{Dev: r.dev, Train: true, FreezeStats: true}, x)
	if c != nil {
		c.Release()
	}
	return y
}

// warmUp runs, untimed and all at once, the whole forward on replica 0
// and on replica i > 0 the blocks up to the end of stage i of bounds,
// which faults their pages in and fills their caches before anything is
// timed. It returns each replica's input for its stage, and how long
// replica 0's forward took.
func warmUp(reps []*replica, bounds []int) ([]*tensor.Tensor, int64) {
	inputs := make([]*tensor.Tensor, len(reps))
	var whole int64
	var wg sync.WaitGroup
	for i, r := range reps {
		wg.Go(func() {
			if i == 0 {
				whole = sum64(r.forwardSpans([]int{0, len(r.model.Blocks)}))
				r.x.Retain()
				inputs[0] = r.x
				return
			}
			inputs[i] = r.run(0, bounds[i], r.x)
			r.run(bounds[i], bounds[i+1], inputs[i]).Release()
		})
	}
	wg.Wait()
	return inputs, whole
}

func (r *replica) close() {
	r.x.Release()
	r.model.Release()
	r.dev.Close()
}

// stagesTogether runs stage i of bounds on replica i, on inputs[i], all
// at once, starting together, and returns the stages' summed
// nanoseconds.
func stagesTogether(ctx context.Context, reps []*replica, bounds []int, inputs []*tensor.Tensor) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	took := make([]int64, len(reps))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := r.dev.Now()
			y := r.run(bounds[i], bounds[i+1], inputs[i])
			took[i] = r.dev.Now() - t0
			y.Release()
		}()
	}
	close(start)
	wg.Wait()
	return sum(took), nil
}
