package predictor

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/pipecast/pipecast/internal/buildinfo"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/runner/schedule"
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
//     micro-batch size plus the op's fitted overhead; Predict likewise at
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
//     PeakMemory).
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
// cfg cannot run, and when a block's forward or backward was never
// measured.
func Predict(c *CostModel, cfg runner.Config) (profiler.Record, error) {
	sim, err := newSimulation(c, cfg)
	if err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	cfg = sim.cfg
	if sim.meta, err = metaRun(cfg); err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	if err := sim.price(); err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	tl, err := schedule.Simulate(sim.prog, sim.cost)
	if err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	// Memory depends on how the devices' ops interleave (what is in
	// flight between them): read it from a meta run in the timeline's
	// order.
	if sim.meta, err = orderedMetaRun(cfg, tl); err != nil {
		return profiler.Record{}, fmt.Errorf("predict: %w", err)
	}
	return sim.record(tl), nil
}

// newSimulation checks cfg against c and sets up its forecast: the
// configuration with its defaults filled, the model, the schedule's
// program and the partition. It runs nothing on the meta backend.
func newSimulation(c *CostModel, cfg runner.Config) (*simulation, error) {
	if c == nil {
		return nil, errors.New("no cost model")
	}
	if cfg.Backend == "" {
		cfg.Backend = c.Key.Backend
	}
	if cfg.Threads == 0 {
		cfg.Threads = c.Key.Threads
	}
	cfg = cfg.WithDefaults()
	if err := checkRunnable(cfg); err != nil {
		return nil, err
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, err
	}
	want := Key{Model: cfg.Model, Image: model.Config.Image, Classes: model.Config.Classes,
		Width: model.Config.Width, Backend: cfg.Backend, Threads: cfg.Threads}
	if want != c.Key {
		return nil, fmt.Errorf("%s: the cost model describes %s", want, c.Key)
	}
	prog, err := schedule.Build(cfg.Schedule)
	if err != nil {
		return nil, err
	}
	if err := schedule.Check(prog); err != nil {
		return nil, fmt.Errorf("schedule %s: %w", cfg.Schedule.Name, err)
	}
	if cfg.Bounds, err = partition(c, cfg, model, prog.Stages); err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	return &simulation{c: c, cfg: cfg, model: model, prog: prog}, nil
}

// checkRunnable reports configurations no schedule can run, as the
// runner does, so that a forecast never describes an impossible run.
func checkRunnable(cfg runner.Config) error {
	k, m := cfg.Schedule.Devices, cfg.Schedule.Micro
	switch {
	case cfg.Batch < 1:
		return fmt.Errorf("batch %d: need at least 1 sample", cfg.Batch)
	case m < 1 || cfg.Batch%m != 0:
		return fmt.Errorf("batch %d does not split into %d micro-batches of equal size", cfg.Batch, m)
	case cfg.Schedule.Name == schedule.Coop && cfg.Batch%k != 0:
		return fmt.Errorf("coop: batch %d does not split into %d equal shards, one per device", cfg.Batch, k)
	}
	return nil
}

// partition returns the stage bounds the runner would use: cfg.Bounds if
// set, else models.Partition of the balance's block costs, with "time"
// costing each block by its fitted forward and backward at the
// micro-batch size.
func partition(c *CostModel, cfg runner.Config, model *models.Model, stages int) ([]int, error) {
	n := len(model.Blocks)
	if cfg.Bounds != nil {
		return slices.Clone(cfg.Bounds), nil // the meta run checks them
	}
	if cfg.Balance == "time" && stages == 1 {
		return []int{0, n}, nil
	}
	mb := cfg.Batch / cfg.Schedule.Micro
	costs := make([]float64, n)
	for i, b := range model.Blocks {
		switch cfg.Balance {
		case "params":
			costs[i] = float64(b.Cost.Params)
		case "macs":
			costs[i] = float64(b.Cost.MACs)
		case "time":
			f, err := c.Block(i, PhaseForward, mb)
			if err != nil {
				return nil, err
			}
			bw, err := c.Block(i, PhaseBackward, mb)
			if err != nil {
				return nil, err
			}
			costs[i] = f + bw
		default:
			return nil, fmt.Errorf("balance %q: want params, macs or time", cfg.Balance)
		}
	}
	return models.Partition(costs, stages)
}

// opKey identifies an op within one device's program: no program has two
// ops of a device that agree on all of these.
type opKey struct {
	kind                      schedule.OpKind
	stage, micro, shard, peer int
	what                      schedule.Payload
}

func keyOf(o schedule.Op) opKey {
	return opKey{kind: o.Kind, stage: o.Stage, micro: o.Micro, shard: o.Shard, peer: o.Peer, what: o.What}
}

// pricedOp is an op's forecast: its duration, the bytes it moves and, for
// a compute op, its blocks' fitted times in the order they run.
type pricedOp struct {
	nanos  float64
	bytes  int64
	blocks []int
	times  []float64
}

// simulation is one forecast under way.
type simulation struct {
	c     *CostModel
	cfg   runner.Config
	model *models.Model
	prog  *schedule.Program
	meta  *metaStep
	// unscaled prices ops without the fitted scales, as fitScales needs.
	unscaled bool
	ops      []map[opKey]*pricedOp // ops[d] prices device d's ops
}

// cost is Simulate's cost function: the price of every op, set by price.
func (s *simulation) cost(d int, o schedule.Op) float64 {
	if p, ok := s.ops[d][keyOf(o)]; ok {
		return p.nanos
	}
	return math.NaN() // Simulate reports it; price covers every op
}

// price forecasts every op of every device.
func (s *simulation) price() error {
	bytes := make([]map[opKey]int64, len(s.prog.Devices))
	for d := range bytes {
		bytes[d] = map[opKey]int64{}
		if d < len(s.meta.devices) {
			for _, e := range s.meta.devices[d].Events {
				if e.Block < 0 {
					bytes[d][keyOf(e.Op)] = e.Bytes
				}
			}
		}
	}
	s.ops = make([]map[opKey]*pricedOp, len(s.prog.Devices))
	for d, ops := range s.prog.Devices {
		s.ops[d] = map[opKey]*pricedOp{}
		for _, o := range ops {
			p, err := s.priceOp(o, bytes[d][keyOf(o)])
			if err != nil {
				return fmt.Errorf("device %d: %v: %w", d, o, err)
			}
			s.ops[d][keyOf(o)] = p
		}
	}
	return nil
}

// priceOp forecasts one op that moves bytes between devices.
func (s *simulation) priceOp(o schedule.Op, bytes int64) (*pricedOp, error) {
	mb := s.cfg.Batch / s.cfg.Schedule.Micro
	p := &pricedOp{bytes: bytes}
	var err error
	switch o.Kind {
	case schedule.Forward:
		err = s.priceBlocks(p, o, PhaseForward, mb)
	case schedule.Recompute:
		err = s.priceBlocks(p, o, PhaseRecompute, mb)
	case schedule.Backward:
		err = s.priceBlocks(p, o, PhaseBackward, mb)
	case schedule.Predict:
		err = s.priceBlocks(p, o, PhasePredict, s.cfg.Batch/s.cfg.Schedule.Devices)
	case schedule.Loss:
		p.nanos = s.c.Loss(mb)
	case schedule.Send:
		p.nanos = s.c.OpOverhead(o.Kind.String())
	case schedule.Recv:
		p.nanos = s.c.Transfer("p2p", bytes)
	case schedule.AllGather, schedule.AllToAll:
		p.nanos = s.c.Transfer(o.Kind.String(), bytes)
	case schedule.Update:
		lo, hi := s.cfg.Bounds[o.Stage], s.cfg.Bounds[o.Stage+1]
		var params int64
		for _, b := range s.model.Blocks[lo:hi] {
			params += b.Cost.Params
		}
		p.nanos = s.c.Update(params)
	default:
		return nil, fmt.Errorf("no cost for op kind %v", o.Kind)
	}
	if err != nil {
		return nil, err
	}
	p.nanos = max(p.nanos, 0) // a fitted line may dip below zero off its data
	if !s.unscaled {
		p.nanos *= s.c.Scale(o.Kind.String(), s.cfg.Schedule.Devices, mb)
	}
	return p, nil
}

// priceBlocks prices a compute op of stage o.Stage: its blocks at the
// given samples (in reverse for a backward, as the runner runs them) plus
// the op's overhead. Recompute and predict fall back to the forward fit
// where they were never measured.
func (s *simulation) priceBlocks(p *pricedOp, o schedule.Op, phase Phase, samples int) error {
	lo, hi := s.cfg.Bounds[o.Stage], s.cfg.Bounds[o.Stage+1]
	for b := lo; b < hi; b++ {
		p.blocks = append(p.blocks, b)
	}
	if phase == PhaseBackward {
		slices.Reverse(p.blocks)
	}
	for _, b := range p.blocks {
		t, err := s.c.Block(b, phase, samples)
		if err != nil && (phase == PhaseRecompute || phase == PhasePredict) {
			t, err = s.c.Block(b, PhaseForward, samples)
		}
		if err != nil {
			return err
		}
		t = max(t, 0)
		p.times = append(p.times, t)
		p.nanos += t
	}
	p.nanos += max(s.c.OpOverhead(o.Kind.String()), 0)
	return nil
}

// record returns the forecast as a predicted run record of one step.
func (s *simulation) record(tl *schedule.Timeline) profiler.Record {
	k := len(s.prog.Devices)
	step := runner.StepResult{Step: 0, Nanos: nanos(tl.Makespan), Devices: make([]runner.DeviceStep, k)}
	for d, ops := range s.prog.Devices {
		var ds runner.DeviceStep
		if d < len(s.meta.devices) {
			ds.Memory, ds.Comm = s.meta.devices[d].Memory, s.meta.devices[d].Comm
		}
		for i, o := range ops {
			p := s.ops[d][keyOf(o)]
			start, end := tl.Start[d][i], tl.End[d][i]
			ds.Events = appendBlockEvents(ds.Events, o, p, start, end)
			ds.Events = append(ds.Events, runner.Event{Op: o, Block: -1, StartNanos: nanos(start), EndNanos: nanos(end), Bytes: p.bytes})
		}
		step.Devices[d] = ds
	}
	env := s.environment()
	res := &runner.Result{
		Config:      s.cfg,
		Options:     runner.RunOptions{Steps: 1, BlockTiming: true},
		Model:       s.model,
		Partition:   s.cfg.Bounds,
		Cores:       env.Cores,
		Steps:       []runner.StepResult{step},
		Calibration: env.Calibration,
	}
	// A forecast models K devices that each have their own T threads'
	// cores, whatever the machine the data came from: it is never
	// oversubscribed, even where a real run on that machine would be.
	res.Oversubscribed = false
	for _, dev := range env.Devices {
		res.DeviceNames = append(res.DeviceNames, dev.Name)
	}
	rec := res.Record()
	now := time.Now().UTC()
	rec.Kind = profiler.KindPredicted
	rec.ID = fmt.Sprintf("pred-%s-%08x", now.Format("20060102T150405.000Z"), rand.Uint32())
	rec.CreatedUTC = now.Format(time.RFC3339)
	rec.Env = env
	rec.Summary.PredictedRelErr = s.c.RelErr()
	return rec
}

// appendBlockEvents appends the per-block events of a compute op that
// ran from start to end: its blocks in run order, each taking its fitted
// share of the op (the op's overhead spread over them in proportion).
func appendBlockEvents(evs []runner.Event, o schedule.Op, p *pricedOp, start, end float64) []runner.Event {
	if len(p.blocks) == 0 {
		return evs
	}
	var sum float64
	for _, t := range p.times {
		sum += t
	}
	t := start
	for j, b := range p.blocks {
		// Blocks fitted at zero share the op evenly.
		dt := (end - start) / float64(len(p.blocks))
		if sum > 0 {
			dt = (end - start) * p.times[j] / sum
		}
		if j == len(p.blocks)-1 {
			dt = end - t // no round-off gap before the op's end
		}
		evs = append(evs, runner.Event{Op: o, Block: b, StartNanos: nanos(t), EndNanos: nanos(t + dt)})
		t += dt
	}
	return evs
}

// environment is the data's environment with this build's version, and
// the forecast's devices.
func (s *simulation) environment() profiler.Environment {
	env := sourceEnv(s.c)
	env.Version, env.Revision = buildinfo.Version(), buildinfo.Revision()
	env.Backend = s.c.Key.Backend
	// A forecast does not run: no process to measure.
	env.PeakRSSBytes = 0
	env.Devices = nil
	for d := range s.prog.Devices {
		env.Devices = append(env.Devices, profiler.DeviceInfo{Name: fmt.Sprintf("%s:%d", env.Backend, d), Threads: s.cfg.Threads})
	}
	return env
}

// sourceEnv returns the environment of the records c was fitted to, when
// the cost model keeps it (an Env method), else this machine's: a
// forecast is for the machine that measured its data, which is usually
// the one that forecasts.
func sourceEnv(c *CostModel) profiler.Environment {
	if src, ok := any(c).(interface{ Env() profiler.Environment }); ok {
		env := src.Env()
		if env.Calibration != nil {
			cal := *env.Calibration
			cal.Samples = slices.Clone(cal.Samples)
			env.Calibration = &cal
		}
		return env
	}
	host, _ := os.Hostname()
	return profiler.Environment{
		Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU(), GoVersion: runtime.Version(),
	}
}

// nanos rounds a simulated time to whole nanoseconds.
func nanos(t float64) int64 { return int64(math.Round(t)) }

// Replay re-times a measured record's own program with its own op
// durations: every step's whole-op events give each op its measured
// duration (a collective the time from the last device's arrival to its
// end, since the simulator, like the transport, starts a collective when
// every device has reached it), schedule.Simulate replays the step, and
// Replay returns the median of the steps' makespans. Comparing it with the
// measured median step time isolates what the simulator's logic adds or
// misses from what the fitted costs do.
func Replay(rec profiler.Record) (makespanNanos float64, err error) {
	o := schedule.Options{Name: rec.Config.Schedule, Devices: rec.Config.Devices, Micro: rec.Config.Micro, Prefetch: rec.Config.Prefetch}
	if rec.Config.Checkpoint != "" {
		if o.Checkpoint, err = schedule.ParseCheckpoint(rec.Config.Checkpoint); err != nil {
			return 0, fmt.Errorf("replay %s: %w", rec.ID, err)
		}
	}
	prog, err := schedule.Build(o)
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", rec.ID, err)
	}
	// events[step][device] are the whole-op events, in program order.
	events := map[int][][]profiler.Event{}
	for _, e := range rec.Events {
		if e.Block != -1 {
			continue
		}
		if e.Device < 0 || e.Device >= len(prog.Devices) {
			return 0, fmt.Errorf("replay %s: event of device %d in a run of %d devices", rec.ID, e.Device, len(prog.Devices))
		}
		if events[e.Step] == nil {
			events[e.Step] = make([][]profiler.Event, len(prog.Devices))
		}
		events[e.Step][e.Device] = append(events[e.Step][e.Device], e)
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("replay %s: the record holds no events", rec.ID)
	}
	var spans []float64
	for step, devs := range events {
		costs, err := replayCosts(prog, devs)
		if err != nil {
			return 0, fmt.Errorf("replay %s: step %d: %w", rec.ID, step, err)
		}
		tl, err := schedule.Simulate(prog, func(d int, o schedule.Op) float64 { return costs[d][keyOf(o)] })
		if err != nil {
			return 0, fmt.Errorf("replay %s: step %d: %w", rec.ID, step, err)
		}
		spans = append(spans, tl.Makespan)
	}
	return profiler.Median(spans), nil
}

// replayCosts returns each op's measured duration in one step, checking
// that the events are the program's ops in order.
func replayCosts(prog *schedule.Program, devs [][]profiler.Event) ([]map[opKey]float64, error) {
	// lastArrival[i] is when the last device reached the i-th collective.
	var lastArrival []int64
	for d, ops := range prog.Devices {
		if len(devs[d]) != len(ops) {
			return nil, fmt.Errorf("device %d: %d events for %d ops", d, len(devs[d]), len(ops))
		}
		n := 0
		for i, o := range ops {
			if e := devs[d][i]; e.Op != o.Kind.String() {
				return nil, fmt.Errorf("device %d: event %d is %s, the program's op %v", d, i, e.Op, o)
			}
			if o.Kind == schedule.AllGather || o.Kind == schedule.AllToAll {
				if n == len(lastArrival) {
					lastArrival = append(lastArrival, 0)
				}
				lastArrival[n] = max(lastArrival[n], devs[d][i].StartNanos)
				n++
			}
		}
	}
	costs := make([]map[opKey]float64, len(prog.Devices))
	for d, ops := range prog.Devices {
		costs[d] = map[opKey]float64{}
		n := 0
		for i, o := range ops {
			e := devs[d][i]
			start := e.StartNanos
			if o.Kind == schedule.AllGather || o.Kind == schedule.AllToAll {
				start = lastArrival[n]
				n++
			}
			costs[d][keyOf(o)] = float64(max(e.EndNanos-start, 0))
		}
	}
	return costs, nil
}
