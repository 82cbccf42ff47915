package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/datasets"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Trainer trains one configuration on K devices, a step at a time.
type Trainer struct {
	cfg    config.Config
	model  *models.Model // the description: blocks, shapes, costs
	bounds []int         // stage s holds blocks [bounds[s], bounds[s+1])
	// ties are the model's tied parameters, whose copies the program's
	// AllReduce ops sum the gradients of (see worker.allReduce).
	ties    []models.Tie
	program *schedule.Program
	loader  *datasets.Loader
	workers []*worker
	devs    []tensor.Device
	// transports are the in-process transports, nil in a multi-process
	// run: one per replica's pipeline, and one per pipeline device
	// joining its replicas.
	transports []*comm.InProcess
	// subgroups are the groups a multi-process run split from its own
	// (replicaGroup), closed with it.
	subgroups []comm.Group
	// group, when set, is the processes of a multi-process run: this
	// process runs device group.Rank() alone (see RunOptions.Group).
	group comm.Group
	steps int
	// measureSteps is how many steps run first at full speed: in them a
	// straggler measures its ops' unslowed durations (see straggle).
	measureSteps int
	// fault, when set (by tests), runs before every op and fails it with
	// the error it returns.
	fault func(device int, op schedule.Op) error
	// gate, when set, runs before every op (RunOptions.Gate).
	gate func(ctx context.Context, device, op int) error
	// memTrackAt is 1 + the step whose memory every device tracks (see
	// trackMemory), 0 for none.
	memTrackAt int
}

// NewTrainer opens the devices, partitions the model, places each stage's
// weights (initialised from cfg.Seed exactly as a single-device model
// would be) on its device, and builds the schedule's program.
func NewTrainer(cfg config.Config) (*Trainer, error) { return newTrainer(cfg, nil) }

// newTrainer is NewTrainer for the devices of this process: all of them,
// or with group set only device group.Rank().
func newTrainer(cfg config.Config, group comm.Group) (*Trainer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	model, err := models.Describe(cfg.Model, cfg.ModelConfig)
	if err != nil {
		return nil, err
	}
	if n := cfg.JobDevices(); group != nil && group.Size() != n {
		return nil, fmt.Errorf("a run of %d devices in a group of %d processes: want one process per device", n, group.Size())
	}
	t := &Trainer{cfg: cfg, model: model, group: group, ties: model.Ties()}
	if t.bounds, err = t.sharedPartition(cfg.Stages()); err != nil {
		return nil, err
	}
	// The program depends on the partition where the model ties
	// parameters: their uses' stages sum their gradients.
	if t.program, err = t.cfg.Program(model, t.bounds); err != nil {
		return nil, err
	}
	ds, err := datasets.Open(cfg.Dataset, DataInput(model), cfg.Seed)
	if err != nil {
		return nil, err
	}
	if t.loader, err = datasets.NewLoader(ds, cfg.StepSamples(), cfg.Seed); err != nil {
		return nil, err
	}
	if err := t.place(); err != nil {
		t.Close()
		return nil, err
	}
	t.setRecording(true, false)
	return t, nil
}

// DataInput is what model m takes, for datasets.Open to check data
// against: its sample shape, its classes (a language model's vocabulary)
// and whether its samples are token sequences.
func DataInput(m *models.Model) datasets.Input {
	return datasets.Input{Shape: m.Input, Classes: m.Config.Classes, Tokens: m.Arch.Tokens != nil}
}

// setRecording turns event recording on or off for the following steps,
// and per-block timing with it (blocks needs record). Each device's
// recorder holds a step's events without growing: its capacity is the
// device's op count, plus the blocks of every compute op when blocks is
// set.
func (t *Trainer) setRecording(record, blocks bool) {
	for _, w := range t.workers {
		w.rec, w.blocks = nil, false
		if !record {
			continue
		}
		w.blocks = blocks
		w.rec = profiler.NewRecorder(t.eventsPerStep(w.k, blocks))
	}
}

// eventsPerStep returns how many events device d records in a step.
func (t *Trainer) eventsPerStep(d int, blocks bool) int {
	n := 0
	for _, op := range t.program.Devices[d] {
		n++
		if blocks && op.Kind.RunsBlocks() {
			n += t.bounds[op.Stage+1] - t.bounds[op.Stage]
		}
	}
	return n
}

// sharedPartition is partition on every device of the run: in a
// multi-process run rank 0 partitions (a partition by measured time
// would differ from rank to rank) and every rank takes its bounds and
// the times that chose them.
func (t *Trainer) sharedPartition(stages int) ([]int, error) {
	if t.group == nil {
		return t.partition(stages)
	}
	// Rank 0 tells the others what failed, in place of a partition, so
	// that none waits for one.
	speedsErr := t.rankSpeeds()
	if speedsErr != nil && t.group.Rank() != 0 {
		return nil, fmt.Errorf("device speeds: %w", speedsErr)
	}
	type decided struct {
		Bounds []int     `json:"bounds"`
		Times  []float64 `json:"times,omitempty"`
		Speeds []float64 `json:"speeds,omitempty"`
	}
	var msg []byte
	if t.group.Rank() == 0 {
		var bounds []int
		err := speedsErr
		if err != nil {
			err = fmt.Errorf("device speeds: %w", err)
		} else {
			bounds, err = t.partition(stages)
		}
		if err != nil {
			msg = []byte("error: " + err.Error())
		} else if msg, err = json.Marshal(decided{Bounds: bounds, Times: t.cfg.BalanceTimes, Speeds: t.cfg.Speeds}); err != nil {
			return nil, err
		}
	}
	msg, err := t.group.Broadcast(context.Background(), 0, msg)
	if err != nil {
		return nil, fmt.Errorf("partition: %w", err)
	}
	if text, failed := strings.CutPrefix(string(msg), "error: "); failed {
		return nil, fmt.Errorf("partition on rank 0: %s", text)
	}
	var d decided
	if err := json.Unmarshal(msg, &d); err != nil {
		return nil, fmt.Errorf("partition from rank 0: %w", err)
	}
	if t.cfg.Bounds == nil && t.cfg.Balance.Timed() {
		t.cfg.BalanceTimes = d.Times
	}
	t.cfg.Speeds = d.Speeds
	return d.Bounds, nil
}

// partition splits the model's blocks into stages: the configured
// bounds, or the configured balance's costs. By time or speed, those are
// the configuration's BalanceTimes, or else measured on one device
// (BlockTimes) and kept in the configuration, so that the run's record
// names the times that chose its partition. Devices whose threads differ
// have their speeds measured first (DeviceSpeeds), unless the
// configuration holds them, and kept likewise.
func (t *Trainer) partition(stages int) ([]int, error) {
	if len(t.cfg.DeviceThreads) > 0 && t.cfg.Speeds == nil {
		var ref []float64
		if t.cfg.Balance.Timed() && t.cfg.Bounds == nil {
			ref = t.cfg.BalanceTimes
		}
		speeds, ref, err := DeviceSpeeds(t.cfg, ref)
		if err != nil {
			return nil, fmt.Errorf("device speeds: %w", err)
		}
		t.cfg.Speeds = speeds
		if t.cfg.Balance.Timed() && t.cfg.Bounds == nil {
			t.cfg.BalanceTimes = ref
		}
	}
	return t.cfg.Partition(t.model, stages, func() ([]float64, error) {
		costs, err := BlockTimes(t.cfg)
		if err != nil {
			return nil, fmt.Errorf("balance by time: %w", err)
		}
		t.cfg.BalanceTimes = costs
		return costs, nil
	})
}

// Step trains one mini-batch and returns its loss (the mean over the
// batch) and what each device did. In a multi-process run it is this
// process's device alone, and its loss that device's part; every process
// starts the step together, after a barrier.
func (t *Trainer) Step(ctx context.Context) (StepResult, error) {
	step := t.steps
	var batch *datasets.Batch
	var err error
	if len(t.devs) > 0 && tensor.IsSymbolic(t.devs[0]) {
		batch = datasets.ShapeBatch(step, t.cfg.StepSamples(), t.model.Input, t.loader.Dataset().LabelsPerSample())
	} else if batch, err = t.loader.Batch(step); err != nil {
		return StepResult{}, err
	}
	n := len(t.workers)
	states := make([]*stepState, n)
	for i, w := range t.workers {
		w.dev.ResetPeak()
		t.startMemTrack(w, step)
		s := newStepState(step, batch)
		t.load(w, s)
		states[i] = s
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.group != nil {
		if err := t.group.Barrier(ctx); err != nil {
			t.releaseStates(states)
			return StepResult{}, fmt.Errorf("step %d: start: %w", step, err)
		}
	}
	errs := make([]error, n)
	start := tensor.Nanotime()
	var wg sync.WaitGroup
	for i, w := range t.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.runStep(ctx, states[i]); err != nil {
				errs[i] = err
				cancel() // the others stop at their next op or wait
			}
		}()
	}
	wg.Wait()
	end := tensor.Nanotime()
	if err := firstCause(errs); err != nil {
		for _, w := range t.workers {
			if w.rec != nil {
				w.rec.Reset() // a failed step's events describe nothing
			}
			stopMemTrack(w, start)
		}
		if f := (*Fault)(nil); errors.As(err, &f) {
			return StepResult{}, err // it names its step
		}
		return StepResult{}, fmt.Errorf("step %d: %w", step, err)
	}
	if t.group != nil {
		// The step ends when every device has: only then have peers
		// received everything this device sent, which the transfer
		// counters count.
		if err := t.group.Barrier(ctx); err != nil {
			return StepResult{}, fmt.Errorf("step %d: end: %w", step, err)
		}
	}
	t.steps++
	res := StepResult{Step: step, Nanos: end - start, Devices: make([]DeviceStep, n), startNanos: start, endNanos: end}
	for i, w := range t.workers {
		res.Loss += states[i].loss
		res.Devices[i] = DeviceStep{Memory: w.dev.Memory(), Comm: w.commStats(), Events: w.takeEvents(start)}
		res.Devices[i].MemTrack = stopMemTrack(w, start)
	}
	return res, nil
}

// load reads what the program says device w.k loads at the start of a
// step (schedule.Program.Loads) into its step state: inputs are uploaded
// to the device, labels stay in host memory, where the loss reads them.
// A load's range is within the worker's replica's B samples.
func (t *Trainer) load(w *worker, s *stepState) {
	for _, l := range t.program.Loads[w.k] {
		lo, hi := l.Range(t.cfg.Batch)
		lo, hi = lo+w.base, hi+w.base
		switch {
		case l.What == schedule.Inputs && l.For == schedule.Forward:
			s.raw, s.rawLo = s.batch.Upload(w.dev, tensor.Boundary, lo, hi), lo
		case l.What == schedule.Inputs && l.For == schedule.Predict:
			s.shard = s.batch.Upload(w.dev, tensor.Boundary, lo, hi)
		case l.What == schedule.Labels && l.For == schedule.Loss:
			s.labelsLo, s.labelsHi = lo, hi
		default:
			// The checker refuses any other load before the trainer starts.
			panic(fmt.Sprintf("runner: device %d: load %v unknown", w.k, l))
		}
	}
}

// firstCause returns the error that started a failure: one that is not
// merely a cancellation caused by another device's error.
func firstCause(errs []error) error {
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// Params returns the trained parameters by state_dict name, copied to the
// host, gathered from every device's own stages (in a job of replicas,
// from the devices that hold them first).
func (t *Trainer) Params() map[string][]float32 {
	out := map[string][]float32{}
	seen := map[int]bool{}
	for _, w := range t.workers {
		for _, s := range w.owned {
			if seen[s] {
				continue // another replica's copy of the stage
			}
			seen[s] = true
			for _, p := range models.Params(w.stages[s]) {
				out[p.Name] = tensor.ToHost(p.Param.Value)
			}
		}
	}
	return out
}

// Buffers returns the tensor buffers (running statistics) by state_dict
// name, copied to the host; in a job of replicas, the first replica's
// that this process runs (each replica keeps statistics of its own
// samples, as PyTorch's DistributedDataParallel does without
// broadcast_buffers).
func (t *Trainer) Buffers() map[string][]float32 {
	out := map[string][]float32{}
	seen := map[int]bool{}
	for _, w := range t.workers {
		for _, s := range w.owned {
			if seen[s] {
				continue // another replica's copy of the stage
			}
			seen[s] = true
			for _, b := range models.Buffers(w.stages[s]) {
				if b.Buffer.Value != nil {
					out[b.Name] = tensor.ToHost(b.Buffer.Value)
				}
			}
		}
	}
	return out
}

// Partition returns the stage bounds: stage s holds blocks [b[s], b[s+1]).
func (t *Trainer) Partition() []int { return append([]int(nil), t.bounds...) }

// Model returns the description of the model being trained.
func (t *Trainer) Model() *models.Model { return t.model }

// Program returns the schedule program the devices run.
func (t *Trainer) Program() *schedule.Program { return t.program }

// Devices returns the devices this process runs, in device order.
func (t *Trainer) Devices() []tensor.Device { return t.devs }

// Close frees every tensor and stops the devices' threads.
func (t *Trainer) Close() {
	t.release()
	for _, d := range t.devs {
		d.Close()
	}
	t.devs = nil
}

// release frees every tensor the trainer holds, leaving the devices open
// (so that their memory can still be read).
func (t *Trainer) release() {
	for _, tr := range t.transports {
		// A failed step may leave messages nobody received; Close frees
		// them (its report of them matters only after a failure).
		tr.Close()
	}
	for _, g := range t.subgroups {
		_ = g.Close() // as the transports: what a failed step left
	}
	t.subgroups = nil
	for _, w := range t.workers {
		for _, p := range w.params {
			p.Param.Release()
		}
		for _, s := range w.owned {
			models.ReleaseLayer(w.stages[s]) // its buffers; the parameters are released
		}
		w.flat.Release()
		for s, r := range w.replicas {
			if r != nil {
				models.ReleaseLayer(r)
				w.replicaFlats[s].Release()
			}
		}
	}
	t.workers, t.transports = nil, nil
}

// releaseStates frees the step states of a step that never started.
func (t *Trainer) releaseStates(states []*stepState) {
	for i, w := range t.workers {
		w.step = states[i]
		w.releaseStep()
		w.step = nil
	}
}
