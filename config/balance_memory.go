package config

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// MemoryModel is the memory balance's model of a device's peak bytes in a
// training step when its stage s holds blocks [lo, hi):
//
//	ParamBytes·params + Live[s]·m·saved + Inputs[s]·m·input(lo) + Fixed[s]
//
// where params are the blocks' trainable scalars, saved the bytes their
// training forward keeps per sample (models.BlockCost), m the micro-batch
// size and input(lo) the bytes of one sample's stage input. It holds for
// the schedules whose every device holds one stage and nothing of another
// (single, gpipe, 1f1b, zb-h1, zb-h2): a device's peak then depends on its
// own blocks and its place in the pipeline alone, so the split that
// minimises the largest is found exactly by a dynamic program
// (models.PartitionBy). The meta replay gives the exact peaks; the model
// is what lets a balance weigh every split without replaying each, and a
// caller with replays calibrates it (Calibrate).
type MemoryModel struct {
	// ParamBytes is what one trainable parameter costs the device that
	// holds it: its value, its gradient and the optimizer's slots, 4
	// bytes each.
	ParamBytes float64
	// Live[s] is how many micro-batches' activations stage s's device
	// keeps at once: the program's MaxLive (1F1B's first stage K, its
	// last 1); Inputs[s] how many micro-batches it keeps only the stage
	// input of (gpipe's checkpointed forwards, until their recompute).
	Live, Inputs []float64
	// Fixed[s] is what the device holds beyond: nothing from the program
	// alone; the transfer buffers, the backward's scratch, a head's
	// logits and the data's inputs once calibrated.
	Fixed []float64
	// Micro is the micro-batch size m.
	Micro int

	// params, saved and macs are the blocks' prefix sums; input the bytes
	// of each block's input, per sample.
	params, saved, macs []float64
	input               []float64
}

// ErrNotSeparable is MemoryModel's error for a schedule whose devices
// hold more than one stage's memory: interleaved's several stages, coop's
// replicas of the others' weights.
var ErrNotSeparable = errors.New("a device holds more than one stage's memory")

// MemoryModel returns c's memory model for model m (see MemoryModel),
// uncalibrated; ErrNotSeparable for a schedule it does not model.
func (c Config) MemoryModel(m *models.Model) (*MemoryModel, error) {
	c = c.WithDefaults()
	p, err := schedule.Build(c.Schedule)
	if err != nil {
		return nil, err
	}
	if p.Stages != len(p.Devices) {
		return nil, fmt.Errorf("memory model of %s: %w", c.Schedule.Name, ErrNotSeparable)
	}
	opt, err := models.NewOptimizer(c.Optimizer, c.Hyper())
	if err != nil {
		return nil, err
	}
	mm := &MemoryModel{
		ParamBytes: 4 * float64(2+opt.Slots()),
		Live:       make([]float64, p.Stages), Inputs: make([]float64, p.Stages), Fixed: make([]float64, p.Stages),
		Micro:  c.MicroBatchSize(),
		params: make([]float64, len(m.Blocks)+1), saved: make([]float64, len(m.Blocks)+1), macs: make([]float64, len(m.Blocks)+1),
		input: make([]float64, len(m.Blocks)),
	}
	for d, ops := range p.Devices {
		if p.Owners[d] != d {
			return nil, fmt.Errorf("memory model of %s: %w", c.Schedule.Name, ErrNotSeparable)
		}
		for _, o := range ops {
			switch {
			case o.Kind == schedule.Predict:
				return nil, fmt.Errorf("memory model of %s: %w", c.Schedule.Name, ErrNotSeparable)
			case o.Kind == schedule.Forward && !o.Keep:
				mm.Inputs[d]++
			}
		}
		mm.Live[d] = float64(p.MaxLive[d])
	}
	for i, b := range m.Blocks {
		mm.params[i+1] = mm.params[i] + float64(b.Cost.Params)
		mm.saved[i+1] = mm.saved[i] + float64(b.Cost.SavedBytes)
		mm.macs[i+1] = mm.macs[i] + float64(b.Cost.MACs)
		mm.input[i] = 4 * float64(b.In.Numel())
	}
	return mm, nil
}

// Bytes returns the model's peak bytes of stage s's device when the stage
// holds blocks [lo, hi).
func (mm *MemoryModel) Bytes(s, lo, hi int) float64 {
	return mm.ParamBytes*(mm.params[hi]-mm.params[lo]) + mm.Live[s]*float64(mm.Micro)*(mm.saved[hi]-mm.saved[lo]) +
		mm.Inputs[s]*float64(mm.Micro)*mm.input[lo] + mm.Fixed[s]
}

// Peaks returns the model's peak bytes of every stage's device at bounds.
func (mm *MemoryModel) Peaks(bounds []int) []float64 {
	out := make([]float64, len(bounds)-1)
	for s := range out {
		out[s] = mm.Bytes(s, bounds[s], bounds[s+1])
	}
	return out
}

// Lightest returns the split whose largest device peak the model puts
// lowest, and among those the one of most even multiply-accumulates:
// models.PartitionBy, the linear partition's dynamic program with a
// stage's cost its device's modelled bytes.
func (mm *MemoryModel) Lightest() ([]int, error) {
	return models.PartitionBy(len(mm.input), len(mm.Live), mm.Bytes, mm.sum(mm.macs))
}

// Within returns the split whose largest stage compute (compute: a cost
// per block, MACs or times) is lowest among those whose every device the
// model keeps within limit bytes, the most even compute among them;
// models.ErrNoPartition when the model fits no split within limit.
func (mm *MemoryModel) Within(limit float64, compute []float64) ([]int, error) {
	if len(compute) != len(mm.input) {
		return nil, fmt.Errorf("memory model: %d block costs for %d blocks", len(compute), len(mm.input))
	}
	prefix := make([]float64, len(compute)+1)
	for i, c := range compute {
		prefix[i+1] = prefix[i] + c
	}
	sum := mm.sum(prefix)
	return models.PartitionBy(len(mm.input), len(mm.Live), func(s, lo, hi int) float64 {
		if mm.Bytes(s, lo, hi) > limit {
			return math.Inf(1)
		}
		return sum(lo, hi)
	}, sum)
}

// sum returns the cost of blocks [lo, hi) from prefix sums.
func (mm *MemoryModel) sum(prefix []float64) func(lo, hi int) float64 {
	return func(lo, hi int) float64 { return prefix[hi] - prefix[lo] }
}

// MemoryObservation is a split and its devices' exact peak bytes (a meta
// replay's), stage by stage.
type MemoryObservation struct {
	Bounds []int
	Peaks  []int64
}

// Calibrate fits each stage's Fixed, and its Live where the observations
// tell it, to exact peaks: what a stage's device holds beyond its
// weights, gradients, optimizer state and stage inputs is Live·m·saved +
// Fixed, so one observation gives Fixed at the program's Live, and two or
// more at which the stage kept different bytes fit both by least squares
// (a zero-bubble schedule's devices keep less of a micro-batch once its
// input gradient is done than MaxLive counts, a checkpointed one more).
// Live stays at least 0.
func (mm *MemoryModel) Calibrate(obs []MemoryObservation) {
	if len(obs) == 0 {
		return
	}
	m := float64(mm.Micro)
	for s := range mm.Live {
		var xs, ys []float64
		for _, o := range obs {
			lo, hi := o.Bounds[s], o.Bounds[s+1]
			xs = append(xs, m*(mm.saved[hi]-mm.saved[lo]))
			ys = append(ys, float64(o.Peaks[s])-mm.ParamBytes*(mm.params[hi]-mm.params[lo])-mm.Inputs[s]*m*mm.input[lo])
		}
		var mx, my float64
		for i := range xs {
			mx += xs[i]
			my += ys[i]
		}
		mx, my = mx/float64(len(xs)), my/float64(len(xs))
		var sxx, sxy float64
		for i := range xs {
			sxx += (xs[i] - mx) * (xs[i] - mx)
			sxy += (xs[i] - mx) * (ys[i] - my)
		}
		// Splits whose stage keeps the same bytes (the same count of
		// alike layers) tell nothing of Live; their prefix sums differ
		// by round-off alone.
		if lo, hi := slices.Min(xs), slices.Max(xs); hi-lo > 1e-9*hi {
			mm.Live[s] = max(0, sxy/sxx)
		}
		mm.Fixed[s] = my - mm.Live[s]*mx
	}
}

// memoryPartition is Partition by memory: the model's lightest split
// where c's schedule is modelled, else the split of most even
// multiply-accumulates.
func (c Config) memoryPartition(m *models.Model, stages int) ([]int, error) {
	mm, err := c.MemoryModel(m)
	switch {
	case errors.Is(err, ErrNotSeparable):
		costs, err := BalanceMACs.BlockCosts(m.Blocks, nil)
		if err != nil {
			return nil, err
		}
		return models.Partition(costs, stages)
	case err != nil:
		return nil, err
	case len(mm.Live) != stages:
		return nil, fmt.Errorf("balance %q: %d stages, the schedule has %d", c.Balance, stages, len(mm.Live))
	}
	return mm.Lightest()
}
