package runner

import (
	"math/rand/v2"
	"sort"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// blockTimeReps is how many times BlockTimes measures each block; it
// takes the median, after one warm-up pass.
const blockTimeReps = 9

// BlockTimes measures each block of cfg's model: the time of a training
// forward and backward at the micro-batch size (B/M samples) on one device
// of cfg's backend with cfg's threads, the median of a few repetitions
// after a warm-up — the costs torchgpipe's balance_by_time partitions by.
func BlockTimes(cfg config.Config) ([]float64, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dev, err := tensor.Open(cfg.Backend, tensor.Options{Index: 0, Threads: cfg.Threads})
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x74696d65))
	m, err := models.Build(dev, cfg.Model, cfg.ModelConfig, rng)
	if err != nil {
		return nil, err
	}
	defer m.Release()
	mb := cfg.MicroBatchSize()
	input := m.RandomInput(rng, mb)
	samples := make([][]float64, len(m.Blocks))
	for rep := 0; rep <= blockTimeReps; rep++ {
		x := tensor.FromHost(dev, tensor.Boundary, append(tensor.Shape{mb}, m.Input...), input)
		for i, b := range m.Blocks {
			p := &models.Pass{Dev: dev, Train: true, Grad: true, Seed: cfg.Seed}
			start := dev.Now()
			y, ctx := b.Layer.Forward(p, x)
			// The output's own values stand in for its gradient: zeros
			// would let kernels that skip zero multipliers look fast.
			dy := dev.Alloc(tensor.Boundary, y.Shape()...)
			dev.Copy(dy, y)
			dx := b.Layer.Backward(p, ctx, dy)
			end := dev.Now()
			dx.Release()
			dy.Release()
			x.Release()
			x = y
			if rep > 0 {
				samples[i] = append(samples[i], float64(end-start))
			}
		}
		x.Release()
	}
	costs := make([]float64, len(samples))
	for i, s := range samples {
		sort.Float64s(s)
		costs[i] = s[len(s)/2]
	}
	return costs, nil
}

// DeviceSpeeds measures the speeds of cfg's pipeline devices where their
// threads differ (Config.DeviceThreads): each device's speed is the sum
// of the model's block times (BlockTimes) on a device of cfg.Threads
// threads, the reference, over their sum on a device of its own threads.
// ref, when given, are the reference's block times (a partition by
// time's, measured already); it returns them, measured when not given.
// Devices alike have no speeds to measure: nil, ref.
func DeviceSpeeds(cfg config.Config, ref []float64) (speeds, refTimes []float64, err error) {
	cfg = cfg.WithDefaults()
	if len(cfg.DeviceThreads) == 0 {
		return nil, ref, nil
	}
	alone := cfg
	alone.DeviceThreads, alone.Speeds = nil, nil
	if ref == nil {
		if ref, err = BlockTimes(alone); err != nil {
			return nil, nil, err
		}
	}
	total := func(ts []float64) float64 {
		s := 0.0
		for _, t := range ts {
			s += t
		}
		return s
	}
	byThreads := map[int]float64{cfg.Threads: 1}
	speeds = make([]float64, len(cfg.DeviceThreads))
	for k, n := range cfg.DeviceThreads {
		if _, ok := byThreads[n]; !ok {
			alone.Threads = n
			ts, err := BlockTimes(alone)
			if err != nil {
				return nil, nil, err
			}
			byThreads[n] = total(ref) / total(ts)
		}
		speeds[k] = byThreads[n]
	}
	return speeds, ref, nil
}
