package runner

import (
	"context"
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

// Each device runs, at each concurrency level, one untimed forward and
// then timed ones until they add up to interferenceTimed, at least
// minInterferenceReps and at most maxInterferenceReps of them: a forward
// of a small model takes a few milliseconds, and three of them left the
// factors ±8 % apart from one measurement to the next.
const (
	interferenceTimed   = 20e6 // ns per device and level
	minInterferenceReps = 3
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
// stage i on its input, all n starting at once. Level n's factor is the
// median over repetitions of the stages' summed time together over the
// median of their summed time alone; Min and Max are the extremes of the
// repetitions on that scale. The levels and the alone runs take turns,
// one repetition each, so that a change in what else the machine runs
// meets all alike.
//
// Where the machine runs one device only, the result holds level 1 alone.
// It costs about 20 ms per level, or 4 forwards where one takes longer,
// besides building a replica of the model per device.
func CalibrateInterference(ctx context.Context, cfg config.Config) (*profiler.Interference, error) {
	cfg = cfg.WithDefaults()
	threads := max(cfg.Threads, 1)
	levels := min(max(runtime.NumCPU()/threads, 1), maxInterferenceDevices)
	mb := cfg.Batch / cfg.Schedule.Micro
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
	for i := range reps {
		r, err := newReplica(cfg, i, threads, mb)
		if err != nil {
			return nil, fmt.Errorf("calibrate interference: %w", err)
		}
		reps[i] = r
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
	// The untimed whole forward sets how many to time.
	first := reps[0].forwardSpans([]int{0, len(reps[0].model.Blocks)})[0]
	count := int(min(max(interferenceTimed/max(float64(first), 1), minInterferenceReps), maxInterferenceReps))
	// Each replica's input for its stage at each level, computed once.
	inputs := make([][]*tensor.Tensor, levels+1)
	defer func() {
		for _, xs := range inputs {
			for _, x := range xs {
				x.Release()
			}
		}
	}()
	for n := 2; n <= levels; n++ {
		for i, r := range reps[:n] {
			inputs[n] = append(inputs[n], r.stageInput(bounds[n][i]))
		}
	}
	ratios := make([][]float64, levels+1)
	for rep := range 1 + count {
		for n := 2; n <= levels; n++ {
			alone := sum(reps[0].forwardSpans(bounds[n]))
			together, err := stagesTogether(ctx, reps[:n], bounds[n], inputs[n])
			if err != nil {
				return nil, fmt.Errorf("calibrate interference at %d devices: %w", n, err)
			}
			if rep > 0 && alone > 0 { // the first round faults pages in and fills caches
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

// stageInput returns the input of block lo for the replica's batch.
func (r *replica) stageInput(lo int) *tensor.Tensor {
	if lo == 0 {
		r.x.Retain()
		return r.x
	}
	return r.run(0, lo, r.x)
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
