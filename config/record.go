package config

import (
	"fmt"
	"math"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// RecordConfig is c as a run record holds it: the model's sizes as built
// (sized, with the zoo's defaults filled in), the steps and warm-up steps
// run, and the options only the chosen schedule uses.
func (c Config) RecordConfig(sized models.Config, steps, warmup int) profiler.RunConfig {
	rc := profiler.RunConfig{
		Model: c.Model, SizeRecord: sized.Record(), Batch: c.Batch,
		RecordOptions: c.Schedule.Record(),
		Balance:       string(c.Balance), Threads: c.Threads,
		Steps: steps, Warmup: warmup, Seed: c.Seed, Dataset: c.Dataset,
		OptimizerRecord: c.Hyper().Record(c.Optimizer),
	}
	if c.Straggler.Active() {
		rc.StragglerDevice, rc.StragglerFactor = c.Straggler.Device, c.Straggler.Factor
	}
	if c.Balance.Timed() {
		rc.BalanceNanos = nanos(c.BalanceTimes)
	}
	rc.DeviceThreads = c.DeviceThreads
	rc.DeviceSpeeds = c.Speeds
	return rc
}

// FromRecord returns the configuration of a record: its model, batch,
// schedule, backend, threads, data and optimizer (the optimizers it did
// not use at DefaultHyper), and its partition as Bounds, so that a
// forecast of it prices the partition the run used rather than one
// balanced anew. Records do not hold the mlp's layer sizes: its
// configuration has the default sizes.
func FromRecord(r *profiler.Record) (Config, error) {
	c := r.Config
	opts, err := c.RecordOptions.Options()
	if err != nil {
		return Config{}, fmt.Errorf("record %s: %w", r.ID, err)
	}
	cfg := Config{
		Model:       c.Model,
		ModelConfig: c.SizeRecord.Config(),
		Batch:       c.Batch,
		Schedule:    opts,
		Balance:     Balance(c.Balance),
		Backend:     r.Env.Backend,
		Transport:   profiler.TransportOf(&r.Env),
		Threads:     c.Threads,
		Dataset:     c.Dataset,
		Seed:        c.Seed,
	}
	var h models.Hyper
	cfg.Optimizer, h = c.OptimizerRecord.Hyper(DefaultHyper())
	cfg.SGD, cfg.AdamW = h.SGD, h.AdamW
	if c.StragglerFactor > 1 {
		cfg.Straggler = Straggler{Device: c.StragglerDevice, Factor: c.StragglerFactor}
	}
	cfg.DeviceThreads, cfg.Speeds = c.DeviceThreads, c.DeviceSpeeds
	cfg.Bounds = r.Bounds()
	if cfg.Balance.Timed() {
		cfg.BalanceTimes = BalanceTimes(c)
	}
	return cfg.WithDefaults(), nil
}

// nanos rounds block times to whole nanoseconds, as records keep them.
func nanos(ts []float64) []int64 {
	if ts == nil {
		return nil
	}
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = int64(math.Round(t))
	}
	return out
}

// BalanceTimes returns the block times a record's partition by time
// balanced, in ns, or nil where the record keeps none (a single stage, a
// record older than the field, a balance by another cost).
func BalanceTimes(c profiler.RunConfig) []float64 {
	if len(c.BalanceNanos) == 0 {
		return nil
	}
	out := make([]float64, len(c.BalanceNanos))
	for i, n := range c.BalanceNanos {
		out[i] = float64(n)
	}
	return out
}

// BlockCosts returns the run record's form of m's blocks: names and
// costs per sample (nil for no model).
func BlockCosts(m *models.Model) []profiler.BlockCost {
	if m == nil {
		return nil
	}
	out := make([]profiler.BlockCost, len(m.Blocks))
	for i, b := range m.Blocks {
		out[i] = profiler.BlockCost{Name: b.Name, Params: b.Cost.Params, MACs: b.Cost.MACs,
			SavedBytes: b.Cost.SavedBytes, OutputBytes: b.Cost.OutputBytes}
	}
	return out
}
