package predictor

import (
	"context"
	"errors"
	"fmt"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
)

// Predict forecasts one training step of cfg from cost model c and
// returns it as a run record of kind predicted, which every report renders
// like a measured one.
//
// cfg's zero fields are filled as the runner fills them, except that the
// backend and the threads default to c's. The model is partitioned as the
// runner would partition it (by "time", with the fitted forward and
// backward times of each block at the micro-batch size, the costs the
// runner measures); the schedule's program is simulated with
// schedule.Simulate, every op taking its fitted time:
//
//   - Forward, Recompute, Backward: the stage's blocks' fitted times at the
//     micro-batch size (a language model's: at its tokens and sequence
//     length, any length its cost model was not measured at included)
//     plus the op's fitted overhead; Predict likewise at
//     the shard size B/K. A Recompute or Predict phase that no record
//     measured (no checkpointed gpipe run, no coop run with K ≥ 2) takes
//     the forward fit: both run the same forward kernels, and the forward
//     fit is the nearest measurement the data holds.
//   - Loss: the fitted loss time at the micro-batch size; Send: the send
//     op's fitted overhead (a send posts and returns); Update: the fitted
//     update time for the stage's parameters.
//   - Recv, AllGather, AllToAll: the fitted transfer time of the bytes the
//     device receives, which the runner itself counts: memory and
//     transfers come from one step of cfg on the meta backend (see
//     PeakMemory). AllReduce (the sum of a tied parameter's gradients):
//     the fitted point-to-point time of one member's part, once for each
//     other member (with two, one transfer each way, at once); nothing
//     for a group of one device, whose copies are summed in place.
//   - Forward, Recompute, Backward, Predict, Loss and Update are then
//     multiplied by their kind's fitted scale (CostModel.Scale), which
//     turns the typical times the lines fit into the mean time such ops
//     took in the records.
//
// The record holds one step whose wall time is the makespan, the devices'
// busy time by op, idle time, peak memory by category and transfers, and
// the simulated events, per block too: each compute op's blocks are laid
// out in the order the runner runs them, their fitted times scaled to
// fill the op. Summary.PredictedRelErr is c.RelErr().
//
// Predict fails when cfg is not c's model, size, backend or threads, when
// cfg cannot run (config.Config.Validate), when a block's forward or
// backward was never measured, and when ctx is done.
func Predict(ctx context.Context, c *CostModel, cfg config.Config) (profiler.Record, error) {
	sim, err := newSimulation(c, cfg)
	if err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	cfg = sim.cfg
	if sim.meta, err = metaRun(ctx, cfg); err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	if err := sim.price(); err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	tl, err := sim.simulate()
	if err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	// Memory depends on how the devices' ops interleave (what is in
	// flight between them): read it from a meta run in the timeline's
	// order.
	if sim.meta, err = orderedMetaRun(ctx, cfg, tl); err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	return sim.record(tl), nil
}

// newSimulation checks cfg against c and sets up its forecast: the
// configuration with its defaults filled, the model, the schedule's
// program and the partition. It runs nothing on the meta backend.
func newSimulation(c *CostModel, cfg config.Config) (*simulation, error) {
	if c == nil {
		return nil, errors.New("no cost model")
	}
	if cfg.Backend == "" {
		cfg.Backend = c.Key.Backend
	}
	if cfg.Threads == 0 {
		cfg.Threads = c.Key.Threads
	}
	if cfg.Transport == "" && c.Key.Transport != "" {
		cfg.Transport = c.Key.Transport
	}
	if cfg.Optimizer == "" {
		cfg.Optimizer = c.Key.OptimizerName() // not the model's: the records'
	}
	cfg = cfg.WithDefaults()
	if r := cfg.Schedule.Replicas; r > 1 && cfg.Straggler.Active() {
		return nil, fmt.Errorf("a forecast with a straggler is %w (R = %d)", ErrReplicas, r)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.DeviceThreads) > 0 && cfg.Speeds == nil {
		return nil, fmt.Errorf("devices of threads %s: %w (DeviceSpeeds prices them from the runs of each thread count)",
			profiler.FormatThreads(cfg.DeviceThreads), ErrNoSpeeds)
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, err
	}
	want := configKey(cfg, model.Config.Record())
	if want != c.Key {
		return nil, fmt.Errorf("%s: the cost model describes %s", want, c.Key)
	}
	if cfg, err = partition(c, cfg, model, cfg.Stages()); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	prog, err := cfg.Program(model, cfg.Bounds)
	if err != nil {
		return nil, err
	}
	return &simulation{c: c, cfg: cfg, model: model, seq: model.Config.Seq, prog: prog}, nil
}
