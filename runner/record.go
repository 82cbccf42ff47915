package runner

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipecast/pipecast/internal/buildinfo"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// Record returns the run as a measured run record: the environment, the
// configuration, the partition, every measured step, the aggregates over
// them, per-block times (with per-block timing) and every event. A
// device's busy time sums its whole-op events; per-block events refine
// them and are not counted again.
func (r *Result) Record() profiler.Record {
	now := time.Now().UTC()
	rec := profiler.Record{
		Schema:         profiler.SchemaVersion,
		Kind:           profiler.KindMeasured,
		ID:             fmt.Sprintf("%s-%08x", now.Format("20060102T150405.000Z"), rand.Uint32()),
		CreatedUTC:     now.Format(time.RFC3339),
		Env:            r.environment(),
		Config:         r.runConfig(),
		Partition:      r.stages(),
		Oversubscribed: r.Oversubscribed,
		Steps:          make([]profiler.Step, len(r.Steps)),
		Devices:        r.devices(),
		Blocks:         r.blockTimings(),
		Events:         r.events(),
	}
	for i, s := range r.Steps {
		rec.Steps[i] = profiler.Step{Step: s.Step, WallNanos: s.Nanos, Loss: s.Loss}
	}
	for _, s := range r.Warmup {
		rec.WarmupLosses = append(rec.WarmupLosses, s.Loss)
	}
	rec.Summary = r.summary(rec.Devices)
	return rec
}

// environment describes the machine, the build and the devices.
func (r *Result) environment() profiler.Environment {
	host, _ := os.Hostname()
	env := profiler.Environment{
		Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUModel: cpuModel(),
		Cores: r.Cores, GoVersion: runtime.Version(),
		Version: buildinfo.Version(), Revision: buildinfo.Revision(),
		Backend: r.Config.Backend, HugePages: r.HugePages, PeakRSSBytes: profiler.PeakRSSBytes(),
		Calibration: r.Calibration,
	}
	for _, n := range r.DeviceNames {
		env.Devices = append(env.Devices, profiler.DeviceInfo{Name: n, Threads: r.Config.Threads})
	}
	return env
}

// cpuModel returns the processor's name from /proc/cpuinfo, or "" where
// there is none (other systems, or architectures whose cpuinfo names no
// model).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return parseCPUModel(b)
}

// parseCPUModel returns the first "model name" in cpuinfo's text.
func parseCPUModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(val)
		}
	}
	return ""
}

// runConfig is the configuration as the record holds it: the model's
// sizes with defaults filled in, and the options only the chosen schedule
// uses.
func (r *Result) runConfig() profiler.RunConfig {
	c := r.Config
	rc := profiler.RunConfig{
		Model: c.Model, Batch: c.Batch,
		Devices: c.Schedule.Devices, Micro: c.Schedule.Micro, Schedule: c.Schedule.Name,
		Balance: c.Balance, Threads: c.Threads,
		Steps: len(r.Steps), Warmup: len(r.Warmup), Seed: c.Seed, Dataset: c.Dataset,
		LR: decimal(c.SGD.LR), Momentum: decimal(c.SGD.Momentum), WeightDecay: decimal(c.SGD.WeightDecay),
	}
	if r.Model != nil {
		rc.Image, rc.Classes, rc.Width = r.Model.Config.Image, r.Model.Config.Classes, r.Model.Config.Width
	}
	switch c.Schedule.Name {
	case schedule.GPipe:
		rc.Checkpoint = c.Schedule.Checkpoint.String()
	case schedule.Coop:
		rc.Prefetch = c.Schedule.Prefetch
	}
	return rc
}

// decimal widens x to the float64 nearest its shortest decimal form, so
// that a learning rate of 0.01 is recorded as 0.01 and not as float32's
// 0.009999999776.
func decimal(x float32) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	if err != nil {
		return float64(x) // unreachable: FormatFloat's output parses
	}
	return v
}

// stages describes the partition: each stage's blocks and their costs.
func (r *Result) stages() []profiler.Stage {
	var out []profiler.Stage
	for s := 0; s+1 < len(r.Partition); s++ {
		st := profiler.Stage{Device: s, FirstBlock: r.Partition[s], EndBlock: r.Partition[s+1]}
		if r.Model != nil {
			for _, b := range r.Model.Blocks[st.FirstBlock:st.EndBlock] {
				st.Blocks = append(st.Blocks, b.Name)
				st.Params += b.Cost.Params
				st.MACsPerSample += b.Cost.MACs
				st.ActivationBytesPerSample += b.Cost.SavedBytes
			}
			if st.EndBlock > st.FirstBlock {
				st.ActivationBytesPerSample += r.Model.Blocks[st.EndBlock-1].Cost.OutputBytes
			}
		}
		out = append(out, st)
	}
	return out
}

// devices aggregates each device over the measured steps: busy time by
// op and idle time as means per step, peaks as maxima, transfers as means
// of the per-step differences of the cumulative counters.
func (r *Result) devices() []profiler.Device {
	k := r.Config.Schedule.Devices
	n := int64(len(r.Steps))
	out := make([]profiler.Device, k)
	for d := range k {
		dev := profiler.Device{Index: d, Stage: d, BusyNanosByOp: map[string]int64{}, PeakBytesByCategory: map[string]int64{}}
		if d < len(r.DeviceNames) {
			dev.Name = r.DeviceNames[d]
		}
		var busy, idle int64
		for _, s := range r.Steps {
			ds := s.Devices[d]
			b := wholeOpBusy(ds.Events, dev.BusyNanosByOp)
			busy += b
			idle += max(s.Nanos-b, 0)
			for c := range tensor.NumCategories {
				name := tensor.Category(c).String()
				dev.PeakBytesByCategory[name] = max(dev.PeakBytesByCategory[name], ds.Memory.PeakBytes[c])
			}
			dev.PeakBytes = max(dev.PeakBytes, ds.Memory.PeakTotalBytes)
		}
		if n > 0 {
			for op, v := range dev.BusyNanosByOp {
				dev.BusyNanosByOp[op] = v / n
			}
			dev.BusyNanos, dev.IdleNanos = busy/n, idle/n
			sent, received := r.commSince(d)
			dev.SentBytesPerStep, dev.ReceivedBytesPerStep = sent/n, received/n
		}
		out[d] = dev
	}
	return out
}

// wholeOpBusy adds the durations of the whole-op events to byOp, by op
// kind, and returns their sum.
func wholeOpBusy(events []Event, byOp map[string]int64) int64 {
	var busy int64
	for _, e := range events {
		if e.Block != wholeOp {
			continue
		}
		dt := e.EndNanos - e.StartNanos
		byOp[e.Op.Kind.String()] += dt
		busy += dt
	}
	return busy
}

// commSince returns the bytes device d sent and received during the
// measured steps: the counters are cumulative since the trainer started,
// so the last warm-up step's counts (zero without warm-up) are subtracted.
func (r *Result) commSince(d int) (sent, received int64) {
	if len(r.Steps) == 0 {
		return 0, 0
	}
	last := r.Steps[len(r.Steps)-1].Devices[d].Comm
	sent, received = last.SentBytes, last.ReceivedBytes
	if len(r.Warmup) > 0 {
		before := r.Warmup[len(r.Warmup)-1].Devices[d].Comm
		sent -= before.SentBytes
		received -= before.ReceivedBytes
	}
	return sent, received
}

// summary aggregates the measured steps and the devices' aggregates.
func (r *Result) summary(devs []profiler.Device) profiler.Summary {
	var sum profiler.Summary
	if len(r.Steps) == 0 {
		return sum
	}
	walls := make([]int64, len(r.Steps))
	var bubble float64
	for i, s := range r.Steps {
		walls[i] = s.Nanos
		if s.Nanos <= 0 || len(s.Devices) == 0 {
			continue
		}
		var frac float64
		for _, ds := range s.Devices {
			busy := wholeOpBusy(ds.Events, map[string]int64{})
			frac += float64(max(s.Nanos-busy, 0)) / float64(s.Nanos)
		}
		bubble += frac / float64(len(s.Devices))
	}
	sum.StepNanosMin, sum.StepNanosMax = slices.Min(walls), slices.Max(walls)
	sum.StepNanosMedian = profiler.Median(walls)
	if sum.StepNanosMedian > 0 {
		sum.SamplesPerSecond = float64(r.Config.Batch) / (float64(sum.StepNanosMedian) / 1e9)
	}
	sum.BubbleFraction = bubble / float64(len(r.Steps))
	for _, d := range devs {
		sum.PeakBytesMax = max(sum.PeakBytesMax, d.PeakBytes)
		sum.MovedBytesPerStep += d.ReceivedBytesPerStep
	}
	return sum
}

// blockOps are the compute ops timed per block, in BlockTiming's field
// order.
var blockOps = [...]schedule.OpKind{schedule.Forward, schedule.Backward, schedule.Recompute, schedule.Predict}

// blockTimings returns each block's per-call times, the median over the
// measured steps of each step's mean per call, or nil without per-block
// events. Samples is a forward call's (a micro-batch); a predict call
// processes a shard, B/K samples.
func (r *Result) blockTimings() []profiler.BlockTiming {
	if r.Model == nil || !r.hasBlockEvents() {
		return nil
	}
	nb := len(r.Model.Blocks)
	// perStep[b][o] are block b's per-call means of op blockOps[o], one
	// per step in which it ran.
	perStep := make([][len(blockOps)][]int64, nb)
	type acc struct{ sum, calls int64 }
	for _, s := range r.Steps {
		cur := make([][len(blockOps)]acc, nb)
		for _, ds := range s.Devices {
			for _, e := range ds.Events {
				if e.Block < 0 || e.Block >= nb {
					continue
				}
				if o := slices.Index(blockOps[:], e.Op.Kind); o >= 0 {
					cur[e.Block][o].sum += e.EndNanos - e.StartNanos
					cur[e.Block][o].calls++
				}
			}
		}
		for b := range cur {
			for o, a := range cur[b] {
				if a.calls > 0 {
					perStep[b][o] = append(perStep[b][o], a.sum/a.calls)
				}
			}
		}
	}
	out := make([]profiler.BlockTiming, nb)
	for b := range nb {
		bt := profiler.BlockTiming{Block: b, Name: r.Model.Blocks[b].Name, Stage: r.stageOf(b), Samples: r.Config.Batch / r.Config.Schedule.Micro}
		bt.ForwardNanos = profiler.Median(perStep[b][0])
		bt.BackwardNanos = profiler.Median(perStep[b][1])
		bt.RecomputeNanos = profiler.Median(perStep[b][2])
		bt.PredictNanos = profiler.Median(perStep[b][3])
		out[b] = bt
	}
	return out
}

// hasBlockEvents reports whether any measured step holds per-block
// events.
func (r *Result) hasBlockEvents() bool {
	for _, s := range r.Steps {
		for _, ds := range s.Devices {
			for _, e := range ds.Events {
				if e.Block != wholeOp {
					return true
				}
			}
		}
	}
	return false
}

// stageOf returns the stage that owns block b.
func (r *Result) stageOf(b int) int {
	for s := 0; s+1 < len(r.Partition); s++ {
		if b < r.Partition[s+1] {
			return s
		}
	}
	return len(r.Partition) - 2
}

// events returns every event of every measured step in the record's form.
func (r *Result) events() []profiler.Event {
	n := 0
	for _, s := range r.Steps {
		for _, ds := range s.Devices {
			n += len(ds.Events)
		}
	}
	out := make([]profiler.Event, 0, n)
	for _, s := range r.Steps {
		for d, ds := range s.Devices {
			for _, e := range ds.Events {
				out = append(out, recordEvent(s.Step, d, e.Op, e.Block, e.StartNanos, e.EndNanos, e.Bytes))
			}
		}
	}
	return out
}
