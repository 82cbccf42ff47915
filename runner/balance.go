package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

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
	byThreads := map[int]float64{cfg.Threads: 1}
	speeds = make([]float64, len(cfg.DeviceThreads))
	for k, n := range cfg.DeviceThreads {
		if _, ok := byThreads[n]; !ok {
			alone.Threads = n
			ts, err := BlockTimes(alone)
			if err != nil {
				return nil, nil, err
			}
			byThreads[n] = sumOf(ref) / sumOf(ts)
		}
		speeds[k] = byThreads[n]
	}
	return speeds, ref, nil
}

// rankSpeeds measures, in a run of one process per device, each device's
// speed on its own host, where the devices may differ (their threads
// differ, or the balance is by speed: ranks on different hosts need not
// compute alike) and the configuration holds no speeds. The ranks
// measure the model's block times (BlockTimes, with their own threads)
// one after another, so that none slows another's, and rank 0 gathers
// them: the reference is the first rank of the most threads, whose block
// times a partition by time balances where none are given, and each
// pipeline device's speed is the reference's total over its own, the
// slowest of its replicas'. Rank 0 decides, for every rank, whether to
// measure: its configuration may hold the speeds of the workload's
// earlier runs.
func (t *Trainer) rankSpeeds() error {
	ctx := context.Background()
	g, c := t.group, t.cfg
	need := []byte{0}
	if g.Rank() == 0 && c.Speeds == nil && c.JobDevices() > 1 &&
		(len(c.DeviceThreads) > 0 || c.Balance == config.BalanceSpeed) {
		need[0] = 1
	}
	need, err := g.Broadcast(ctx, 0, need)
	if err != nil || len(need) != 1 || need[0] == 0 {
		return err
	}
	var mine []byte
	for r := range g.Size() {
		if r == g.Rank() {
			alone := c
			alone.Threads, alone.DeviceThreads, alone.Speeds = c.ThreadsOf(r), nil, nil
			times, err := BlockTimes(alone)
			if err == nil {
				mine, err = json.Marshal(times)
			}
			if err != nil {
				mine = []byte("error: " + err.Error())
			}
		}
		if err := g.Barrier(ctx); err != nil {
			return err
		}
	}
	all, err := g.Gather(ctx, 0, mine)
	if err != nil || g.Rank() != 0 {
		return err
	}
	times := make([][]float64, len(all))
	ref := -1
	for r, msg := range all {
		if text, failed := strings.CutPrefix(string(msg), "error: "); failed {
			return fmt.Errorf("rank %d: %s", r, text)
		}
		if err := json.Unmarshal(msg, &times[r]); err != nil {
			return fmt.Errorf("rank %d: %w", r, err)
		}
		if ref < 0 && c.ThreadsOf(r) == c.Threads {
			ref = r
		}
	}
	k := max(c.Schedule.Devices, 1)
	speeds := make([]float64, k)
	for r, ts := range times {
		s := sumOf(times[ref]) / sumOf(ts)
		if r < k || s < speeds[r%k] {
			speeds[r%k] = s
		}
	}
	t.cfg.Speeds = speeds
	if c.Balance.Timed() && c.Bounds == nil && c.BalanceTimes == nil {
		t.cfg.BalanceTimes = times[ref]
	}
	return nil
}

// sumOf returns the sum of ts: the model's block times, summed, is the
// work a device's speed is measured on.
func sumOf(ts []float64) float64 {
	s := 0.0
	for _, t := range ts {
		s += t
	}
	return s
}
