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
// until device 0's whole training passes (forward and backward) add up
// to interferenceTimed, at least minInterferenceReps and at most
// maxInterferenceReps of them. The default sweep's passes take about
// 12 ms and its steps about 25 ms, so two rounds keep the measurement
// near 4 % of its wall time. One measurement's factor is noisy
// (successive ones of resnet50 at width 0.25 spread 0.97–1.33 on a
// 2-core machine, with five rounds as with two); the predictor takes the
// median over its records.
const (
	interferenceTimed   = 24e6 // ns per device and level
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
// training-mode forward keeping what the backward needs and then the
// backward, each device with a replica of the model. For n from 2 to the
// devices the machine runs without oversubscription (its cores over the
// run's threads, at most 8), the model is split into n stages by MACs;
// alone, device 0 runs the whole forward and backward and times each
// stage's span of them; together, device i runs stage i's forward and
// backward on its input, all n starting at once. Each round times the
// whole pass alone and then the stages together; level n's factor is the
// median over rounds of the stages' summed forward time together over
// their summed forward time alone, its backward factor the same of the
// backward times, and Min and Max are the extremes of those ratios. The
// two differ: a backward reads the forward's saved activations and
// writes a gradient of every weight, so holding half the model spares it
// more of the cache misses a whole model has. The levels and the alone
// runs take turns, one round each, so that a change in what else the
// machine runs meets all alike.
//
// Where the machine runs one device only, the result holds level 1 alone.
// It costs, per level, an untimed round and then 24 ms of whole passes
// or two of them where one takes longer (each with its stages together),
// besides building a replica of the model per device.
func CalibrateInterference(ctx context.Context, cfg config.Config) (*profiler.Interference, error) {
	cfg = cfg.WithDefaults()
	threads := max(cfg.Threads, 1)
	levels := min(max(runtime.NumCPU()/threads, 1), maxInterferenceDevices)
	mb := cfg.MicroBatchSize()
	out := &profiler.Interference{
		Work: fmt.Sprintf("training-mode forwards and backwards of %s's stages at %d samples, together against inside a whole pass alone", cfg.Model, mb),
		Levels: []profiler.InterferenceLevel{{Devices: 1, Factor: 1, Min: 1, Max: 1,
			BackwardFactor: 1, BackwardMin: 1, BackwardMax: 1}},
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
	fwd, bwd := make([][]float64, levels+1), make([][]float64, levels+1)
	for range count {
		for n := 2; n <= levels; n++ {
			aloneF, aloneB := reps[0].passSpans(bounds[n])
			togetherF, togetherB, err := stagesTogether(ctx, reps[:n], bounds[n], inputs[n])
			if err != nil {
				return nil, fmt.Errorf("calibrate interference at %d devices: %w", n, err)
			}
			if a := sum(aloneF); a > 0 {
				fwd[n] = append(fwd[n], togetherF/a)
			}
			if a := sum(aloneB); a > 0 {
				bwd[n] = append(bwd[n], togetherB/a)
			}
		}
	}
	for n := 2; n <= levels; n++ {
		l := profiler.InterferenceLevel{Devices: n, Factor: profiler.Median(fwd[n]), Min: slices.Min(fwd[n]), Max: slices.Max(fwd[n])}
		if b := bwd[n]; len(b) > 0 {
			l.BackwardFactor, l.BackwardMin, l.BackwardMax = profiler.Median(b), slices.Min(b), slices.Max(b)
		}
		out.Levels = append(out.Levels, l)
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
	// noise fills the output gradients the backwards start from: the
	// replica's weights are zeros, so its outputs are too, and a
	// gradient of zeros could let a kernel that skips zero multipliers
	// look fast.
	noise []float32
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
	in := m.RandomInput(rng, mb)
	dev.Upload(x, in)
	return &replica{dev: dev, model: m, x: x, noise: in}, nil
}

// passSpans runs one training-mode forward of blocks [bounds[0],
// bounds[len-1]) on the replica's batch, stage by stage, keeping what the
// backward needs, then the backward stage by stage in reverse, and
// returns each stage's forward and backward time.
func (r *replica) passSpans(bounds []int) (fwd, bwd []int64) {
	n := len(bounds) - 1
	fwd, bwd = make([]int64, n), make([]int64, n)
	ctxs := make([]models.Context, n)
	p := r.pass()
	x := r.x
	x.Retain()
	for s := range n {
		start := r.dev.Now()
		y, c := r.model.Stage(bounds[s], bounds[s+1]).Forward(p, x)
		fwd[s] = r.dev.Now() - start
		ctxs[s] = c
		x.Release()
		x = y
	}
	dy := r.gradientLike(x)
	x.Release()
	for s := n - 1; s >= 0; s-- {
		start := r.dev.Now()
		dx := r.model.Stage(bounds[s], bounds[s+1]).Backward(p, ctxs[s], dy)
		bwd[s] = r.dev.Now() - start
		dy.Release()
		dy = dx
	}
	if dy != nil {
		dy.Release()
	}
	return fwd, bwd
}

// pass is a training pass that keeps what the backward needs and leaves
// batch norm's running statistics alone.
func (r *replica) pass() *models.Pass {
	return &models.Pass{Dev: r.dev, Train: true, Grad: true, FreezeStats: true}
}

// gradientLike returns a tensor of y's shape holding the replica's noise
// (repeated where y is larger): an output gradient to start a backward.
func (r *replica) gradientLike(y *tensor.Tensor) *tensor.Tensor {
	dy := r.dev.Alloc(tensor.Boundary, y.Shape()...)
	host := make([]float32, dy.Len())
	for i := range host {
		host[i] = r.noise[i%len(r.noise)]
	}
	r.dev.Upload(dy, host)
	return dy
}

// stagePass runs the forward and then the backward of blocks [lo, hi) on
// x and returns how long each took.
func (r *replica) stagePass(lo, hi int, x *tensor.Tensor) (fwd, bwd int64) {
	stage, p := r.model.Stage(lo, hi), r.pass()
	start := r.dev.Now()
	y, c := stage.Forward(p, x)
	fwd = r.dev.Now() - start
	dy := r.gradientLike(y)
	y.Release()
	start = r.dev.Now()
	dx := stage.Backward(p, c, dy)
	bwd = r.dev.Now() - start
	dy.Release()
	if dx != nil {
		dx.Release()
	}
	return fwd, bwd
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

// warmUp runs, untimed and all at once, the whole pass on replica 0
// and on replica i > 0 the blocks up to the start of stage i of bounds
// and then that stage's pass, which faults their pages in and fills
// their caches before anything is timed. It returns each replica's input
// for its stage, and how long replica 0's pass took.
func warmUp(reps []*replica, bounds []int) ([]*tensor.Tensor, int64) {
	inputs := make([]*tensor.Tensor, len(reps))
	var whole int64
	var wg sync.WaitGroup
	for i, r := range reps {
		wg.Go(func() {
			if i == 0 {
				f, b := r.passSpans([]int{0, len(r.model.Blocks)})
				whole = sum64(f) + sum64(b)
				r.x.Retain()
				inputs[0] = r.x
				return
			}
			inputs[i] = r.run(0, bounds[i], r.x)
			r.stagePass(bounds[i], bounds[i+1], inputs[i])
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
// at once, starting together, each its forward and then its backward,
// and returns the stages' summed forward and backward nanoseconds.
func stagesTogether(ctx context.Context, reps []*replica, bounds []int, inputs []*tensor.Tensor) (fwd, bwd float64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	tookF, tookB := make([]int64, len(reps)), make([]int64, len(reps))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			tookF[i], tookB[i] = r.stagePass(bounds[i], bounds[i+1], inputs[i])
		}()
	}
	close(start)
	wg.Wait()
	return sum(tookF), sum(tookB), nil
}
