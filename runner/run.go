package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// RunOptions are how many steps a run takes and what it measures besides
// the steps.
type RunOptions struct {
	Warmup int // steps run first and not measured
	Steps  int // measured steps
	// BlockTiming runs every forward, recompute, backward and predict
	// block by block and records an event per block besides the op's
	// own. It adds a clock read and a record per block.
	BlockTiming bool
	// Calibrate measures the transfer path once, before the first step
	// (see Calibrate, and CalibrateGroup in a multi-process run); K = 1
	// runs calibrate too, so that their records let the predictor cost
	// transfers. Calibration, when set, is a measurement made already
	// (a K = 1 multi-process run has one process, so its caller measures
	// the path among the job's processes) and is recorded instead.
	Calibrate   bool
	Calibration *profiler.Calibration
	// Interference measures co-location interference once, before the
	// first step (see CalibrateInterference), unless the run is one of
	// several processes. Interferences, when set, is a measurement made
	// already for the same model, micro-batch size and threads (a sweep
	// measures once for its runs that share them) and is recorded
	// instead.
	Interference  bool
	Interferences *profiler.Interference
	// Group, when set, makes the run one of several processes: this
	// process runs device Group.Rank() of Group.Size() = K, every rank
	// calls Run with the same configuration and options, and rank 0's
	// Result holds every device's steps on its clock (the others' hold
	// their own device's). Clock offsets between the ranks are estimated
	// by ping-pong before and after the run.
	Group comm.Group
	// Gate, when set, is called by device d's worker before the i-th op
	// of its program in every step and returns when that op may start
	// (or an error, which fails the step). It lets a simulation replay
	// the order of a predicted timeline, e.g. on the meta backend to read
	// the memory that order implies.
	Gate func(ctx context.Context, device, op int) error
	// Weights keeps the trained parameters of this process's devices in
	// Result.Weights, by state_dict name, to compare runs by.
	Weights bool
	// Timeout, when positive, is the watchdog's: a run in which no local
	// device starts an op (or passes a step's barrier, the clock
	// ping-pong or the calibration) for that long stops with ErrStalled
	// and every local device's position in its program. It catches a
	// peer process that stopped; a run that merely takes long keeps
	// moving.
	Timeout time.Duration

	// fault, when set (by tests), runs before every op of every local
	// device and fails it with the error it returns.
	fault func(device int, op schedule.Op) error
}

// Result is a run: its configuration with defaults filled in, the
// partition, and every measured step.
type Result struct {
	Config config.Config
	// Options are the run's options.
	Options RunOptions
	// Model is the description of the model trained: its blocks, their
	// shapes and costs.
	Model *models.Model
	// Partition holds the stage bounds over the model's blocks; Owners[s]
	// is the device that holds stage s (the schedule program's).
	Partition []int
	Owners    []int
	// DeviceNames names the devices in device order; GPUs describes the
	// GPU behind each (nil entries, or nil, for devices that are not).
	DeviceNames []string
	GPUs        []*profiler.GPUInfo
	// HugePages is what the first device says of huge pages (see
	// profiler.Environment), or "" if its backend does not say.
	HugePages string
	// Cores is the machine's CPU count; Oversubscribed is set when the
	// devices' threads together exceed it.
	Cores          int
	Oversubscribed bool
	// Transport is profiler.TransportMPI for a multi-process run (""
	// in one process) and TransportVersion its library's version; Ranks
	// describes every process (rank 0 only) and ClockResidualNanos how
	// far the clock offsets moved during the run.
	Transport, TransportVersion string
	Ranks                       []profiler.RankInfo
	ClockResidualNanos          int64
	// Calibration is the transfer path's measurement, nil unless the
	// options asked for it.
	Calibration *profiler.Calibration
	// Interference is the co-location interference measurement, nil
	// unless the options asked for it.
	Interference *profiler.Interference
	// Warmup holds the warm-up steps (their losses matter for
	// convergence; their times do not), Steps the measured ones.
	Warmup []StepResult
	Steps  []StepResult
	// ProbeNanos holds, for each measured step, the time of the probe
	// this process ran just before it (see probe): how disturbed the
	// machine was. Nil for a run on symbolic devices, which take no time.
	ProbeNanos []int64
	// Weights are the trained parameters of this process's devices, with
	// RunOptions.Weights.
	Weights map[string][]float32
}

// Run trains cfg for opts.Warmup warm-up and opts.Steps measured steps
// and returns what every step and device did. It is the library entry
// point of the profile command.
func Run(ctx context.Context, cfg config.Config, opts RunOptions) (*Result, error) {
	if opts.Warmup < 0 || opts.Steps < 1 {
		return nil, fmt.Errorf("run %d warm-up and %d measured steps: need warm-up ≥ 0 and steps ≥ 1", opts.Warmup, opts.Steps)
	}
	t, err := newTrainer(cfg, opts.Group)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	t.fault = opts.fault
	ctx, stop := t.watchdog(ctx, opts.Timeout)
	defer stop()
	res, err := run(ctx, t, opts)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrStalled) {
		return nil, fmt.Errorf("%v: %w", t.cfg, cause)
	}
	return res, err
}

// run is Run's work on an open trainer, under the watchdog's context.
func run(ctx context.Context, t *Trainer, opts RunOptions) (*Result, error) {
	var err error
	t.setRecording(true, opts.BlockTiming)
	t.gate = opts.Gate
	res := &Result{
		Config:         t.cfg,
		Options:        opts,
		Model:          t.model,
		Partition:      t.Partition(),
		Owners:         slices.Clone(t.program.Owners),
		Cores:          runtime.NumCPU(),
		Oversubscribed: t.cfg.Oversubscribed(),
	}
	for _, d := range t.devs {
		res.DeviceNames = append(res.DeviceNames, d.Name())
		res.GPUs = append(res.GPUs, gpuInfo(d))
	}
	if hp, ok := t.devs[0].(interface{ HugePages() string }); ok {
		res.HugePages = hp.HugePages()
	}
	g := opts.Group
	var before []int64
	if g != nil {
		res.Transport = profiler.TransportMPI
		if l, ok := g.(interface{ Library() string }); ok {
			res.TransportVersion = l.Library()
		}
		if before, err = clockOffsets(ctx, g); err != nil {
			return nil, err
		}
		t.alive()
	}
	switch {
	case opts.Calibration != nil:
		res.Calibration = opts.Calibration
	case opts.Calibrate && g != nil && g.Size() > 1:
		if res.Calibration, err = CalibrateGroup(ctx, g, t.cfg.Backend, t.cfg.Threads); err != nil {
			return nil, err
		}
	case opts.Calibrate && g == nil:
		if res.Calibration, err = Calibrate(ctx, t.cfg.Backend, t.cfg.Threads, t.cfg.JobDevices()); err != nil {
			return nil, err
		}
	}
	if opts.Interference && g == nil {
		if res.Interference = opts.Interferences; res.Interference == nil {
			if res.Interference, err = CalibrateInterference(ctx, t.cfg); err != nil {
				return nil, err
			}
		}
	}
	t.alive()
	if t.cfg.JobDevices() == 1 {
		release := reserveProcs(max(t.cfg.Threads, 1))
		defer release()
	}
	t.measureSteps = opts.Warmup
	t.trackMemory(t.steps + opts.Warmup) // the first measured step
	// The machine is probed before every step, warm-up included so that
	// each measured step follows the same work, on this goroutine while
	// every worker waits; the probes of the measured steps are kept.
	var p *probe
	if !tensor.IsSymbolic(t.devs[0]) {
		p = newProbe()
	}
	for i := 0; i < opts.Warmup+opts.Steps; i++ {
		if p != nil {
			if n := p.time(); i >= opts.Warmup {
				res.ProbeNanos = append(res.ProbeNanos, n)
			}
		}
		s, err := t.Step(ctx)
		if err != nil {
			return nil, err
		}
		if i < opts.Warmup {
			res.Warmup = append(res.Warmup, s)
		} else {
			res.Steps = append(res.Steps, s)
		}
	}
	t.alive()
	if opts.Weights {
		res.Weights = t.Params()
	}
	if g != nil {
		after, err := clockOffsets(ctx, g)
		if err != nil {
			return nil, err
		}
		var offsets []int64
		if g.Rank() == 0 {
			offsets, res.ClockResidualNanos = meanOffsets(before, after)
		}
		if err := gatherRun(ctx, g, res, offsets); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// gpuInfo describes the GPU behind d, or returns nil for a device that is
// not one.
func gpuInfo(d tensor.Device) *profiler.GPUInfo {
	a, ok := d.(tensor.Accelerator)
	if !ok {
		return nil
	}
	i := a.AcceleratorInfo()
	return &profiler.GPUInfo{
		Model: i.Model, Ordinal: i.Ordinal, Share: i.Share, Driver: i.Driver, Libraries: i.Libraries,
		MemoryFreeBytes: i.FreeBytes, MemoryTotalBytes: i.TotalBytes,
	}
}
