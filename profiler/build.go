package profiler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Run is what Build turns into a record: a run's configuration,
// partition and environment, and what every device did in every
// measured step. The runner fills it from a training run, the predictor
// from a simulated one.
type Run struct {
	// Kind is KindMeasured or KindPredicted.
	Kind string
	// Env is where the run ran; Env.Devices names the devices in device
	// order.
	Env    Environment
	Config RunConfig
	// Blocks are the model's blocks in order and Bounds the partition:
	// stage s holds blocks [Bounds[s], Bounds[s+1]).
	Blocks []BlockCost
	Bounds []int
	// Owners[s] is the device that holds stage s (schedule.Program's
	// Owners); nil means stage s is on device s.
	Owners []int
	// Oversubscribed is set when devices × threads exceeds the cores.
	Oversubscribed bool
	// Steps are the measured steps; WarmupLosses the warm-up steps'
	// losses.
	Steps        []RunStep
	WarmupLosses []float64
	// SentBytes[d] and ReceivedBytes[d] are what device d sent and
	// received during all the measured steps together.
	SentBytes, ReceivedBytes []int64
	// PredictedRelErr is a forecast's relative 1-σ uncertainty of its
	// step time (0 for a measured run).
	PredictedRelErr float64
}

// BlockCost is one block of the model: its name and its costs per sample.
type BlockCost struct {
	Name   string
	Params int64
	// MACs is the forward's multiply-accumulates; SavedBytes what the
	// block keeps for its backward; OutputBytes its output's size.
	MACs, SavedBytes, OutputBytes int64
}

// RunStep is one measured step of a run.
type RunStep struct {
	Step      int
	WallNanos int64
	Loss      float64
	// Devices holds what each device did, in device order.
	Devices []DeviceActivity
}

// DeviceActivity is what one device did and held in one step, as Build
// takes it (the runner's DeviceStep is its raw form): its events (times
// from the step's start; a compute op's per-block events before the op's
// own event) and its memory peaks during the step. MemoryTrack, when set, is
// the device's live memory over the step (see MemoryTrackOf); the record
// keeps the first measured step's.
type DeviceActivity struct {
	Events              []Event
	PeakBytes           int64
	PeakBytesByCategory map[string]int64
	MemoryTrack         *MemoryTrack
}

// Build returns the run as a record: identified and dated now, with the
// partition's stages, every step, each device's aggregates, per-block
// times (where there are per-block events), every event and the summary.
// A device's busy time sums its whole-op events; per-block events refine
// them and are not counted again.
func Build(run Run) Record {
	now := time.Now().UTC()
	id := fmt.Sprintf("%s-%08x", now.Format("20060102T150405.000Z"), rand.Uint32())
	if run.Kind == KindPredicted {
		id = "pred-" + id
	}
	rec := Record{
		Schema:         SchemaVersion,
		Kind:           run.Kind,
		ID:             id,
		CreatedUTC:     now.Format(time.RFC3339),
		Env:            run.Env,
		Config:         run.Config,
		Partition:      run.stages(),
		Oversubscribed: run.Oversubscribed,
		Steps:          make([]Step, len(run.Steps)),
		WarmupLosses:   slices.Clone(run.WarmupLosses),
		Devices:        run.devices(),
		Blocks:         run.blockTimings(),
		Events:         run.events(),
	}
	for i, s := range run.Steps {
		rec.Steps[i] = Step{Step: s.Step, WallNanos: s.WallNanos, Loss: s.Loss}
	}
	rec.Summary = run.summary(rec.Devices)
	return rec
}

// stages describes the partition: each stage's device, blocks and their
// costs.
func (r *Run) stages() []Stage {
	var out []Stage
	for s := 0; s+1 < len(r.Bounds); s++ {
		st := Stage{Device: r.owner(s), FirstBlock: r.Bounds[s], EndBlock: r.Bounds[s+1]}
		if st.EndBlock <= len(r.Blocks) {
			for _, b := range r.Blocks[st.FirstBlock:st.EndBlock] {
				st.Blocks = append(st.Blocks, b.Name)
				st.Params += b.Params
				st.MACsPerSample += b.MACs
				st.ActivationBytesPerSample += b.SavedBytes
			}
			if st.EndBlock > st.FirstBlock {
				st.ActivationBytesPerSample += r.Blocks[st.EndBlock-1].OutputBytes
			}
		}
		out = append(out, st)
	}
	return out
}

// owner returns the device that holds stage s.
func (r *Run) owner(s int) int {
	if s < len(r.Owners) {
		return r.Owners[s]
	}
	return s
}

// firstStage returns the first stage job device d holds: d itself unless
// Owners says otherwise; in a job of replicas, device d runs device
// d mod K of the pipeline.
func (r *Run) firstStage(d int) int {
	if k := r.Config.Devices; k > 0 {
		d %= k
	}
	for s, o := range r.Owners {
		if o == d {
			return s
		}
	}
	return d
}

// devices aggregates each device over the measured steps: busy time by
// op and idle time as means per step, peaks as maxima, transfers as
// means per step.
func (r *Run) devices() []Device {
	k := r.Config.JobDevices()
	n := int64(len(r.Steps))
	out := make([]Device, k)
	for d := range k {
		dev := Device{Index: d, Stage: r.firstStage(d), BusyNanosByOp: map[string]int64{}, PeakBytesByCategory: map[string]int64{}}
		if d < len(r.Env.Devices) {
			dev.Name = r.Env.Devices[d].Name
		}
		var busy, idle int64
		for _, s := range r.Steps {
			ds := s.Devices[d]
			b := wholeOpBusy(ds.Events, dev.BusyNanosByOp)
			busy += b
			idle += max(s.WallNanos-b, 0)
			for c, v := range ds.PeakBytesByCategory {
				dev.PeakBytesByCategory[c] = max(dev.PeakBytesByCategory[c], v)
			}
			dev.PeakBytes = max(dev.PeakBytes, ds.PeakBytes)
		}
		if n > 0 {
			for op, v := range dev.BusyNanosByOp {
				dev.BusyNanosByOp[op] = v / n
			}
			dev.BusyNanos, dev.IdleNanos = busy/n, idle/n
			if d < len(r.SentBytes) && d < len(r.ReceivedBytes) {
				dev.SentBytesPerStep, dev.ReceivedBytesPerStep = r.SentBytes[d]/n, r.ReceivedBytes[d]/n
			}
		}
		dev.MemoryTrack = r.memoryTrack(d)
		out[d] = dev
	}
	return out
}

// wholeOpBusy adds the durations of the whole-op events to byOp, by op
// kind, and returns their sum.
func wholeOpBusy(events []Event, byOp map[string]int64) int64 {
	var busy int64
	for _, e := range events {
		if e.Block != WholeOp {
			continue
		}
		dt := e.EndNanos - e.StartNanos
		if byOp != nil {
			byOp[e.Op] += dt
		}
		busy += dt
	}
	return busy
}

// summary aggregates the measured steps and the devices' aggregates.
func (r *Run) summary(devs []Device) Summary {
	sum := Summary{PredictedRelErr: r.PredictedRelErr}
	if len(r.Steps) == 0 {
		return sum
	}
	walls := make([]int64, len(r.Steps))
	var bubble float64
	for i, s := range r.Steps {
		walls[i] = s.WallNanos
		if s.WallNanos <= 0 || len(s.Devices) == 0 {
			continue
		}
		var frac float64
		for _, ds := range s.Devices {
			busy := wholeOpBusy(ds.Events, nil)
			frac += float64(max(s.WallNanos-busy, 0)) / float64(s.WallNanos)
		}
		bubble += frac / float64(len(s.Devices))
	}
	sum.StepNanosMin, sum.StepNanosMax = slices.Min(walls), slices.Max(walls)
	sum.StepNanosMedian = Median(walls)
	if sum.StepNanosMedian > 0 {
		sum.SamplesPerSecond = float64(max(r.Config.Replicas, 1)*r.Config.Batch) / (float64(sum.StepNanosMedian) / 1e9)
	}
	sum.BubbleFraction = bubble / float64(len(r.Steps))
	for _, d := range devs {
		sum.PeakBytesMax = max(sum.PeakBytesMax, d.PeakBytes)
		sum.MovedBytesPerStep += d.ReceivedBytesPerStep
	}
	return sum
}

// events returns every event of every measured step, each naming its
// step and device.
func (r *Run) events() []Event {
	n := 0
	for _, s := range r.Steps {
		for _, ds := range s.Devices {
			n += len(ds.Events)
		}
	}
	out := make([]Event, 0, n)
	for _, s := range r.Steps {
		for d, ds := range s.Devices {
			for _, e := range ds.Events {
				e.Step, e.Device = s.Step, d
				out = append(out, e)
			}
		}
	}
	return out
}
