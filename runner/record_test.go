package runner

import (
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// blockConfig is a small mlp of 6 blocks, two per stage at K = 3.
func blockConfig(o schedule.Options) config.Config {
	return config.Config{
		Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 32, 32, 32, 32, 32, 5}},
		Batch: 12, Seed: 5, Threads: 1, Schedule: o,
	}
}

// blockSchedules cover every compute op: forward, recompute (gpipe's
// checkpoints), backward, predict (coop), the split backward's halves
// (zb-h1) and devices holding several stages (interleaved, on two
// devices and, handing over in place, on one).
var blockSchedules = []schedule.Options{
	{Name: schedule.Single, Devices: 1, Micro: 2},
	{Name: schedule.GPipe, Devices: 3, Micro: 3, Checkpoint: schedule.ExceptLast},
	{Name: schedule.OneF1B, Devices: 3, Micro: 3},
	{Name: schedule.Coop, Devices: 3, Micro: 3, Prefetch: 1},
	{Name: schedule.ZBH1, Devices: 3, Micro: 3},
	{Name: schedule.Interleaved, Devices: 2, Micro: 3, Virtual: 2},
	{Name: schedule.Interleaved, Devices: 1, Micro: 2, Virtual: 3},
}

func isCompute(k schedule.OpKind) bool {
	switch k {
	case schedule.Forward, schedule.Recompute, schedule.Backward, schedule.Predict, schedule.BackwardInput, schedule.BackwardWeight:
		return true
	}
	return false
}

// TestBlockTimingEvents checks that with per-block timing every compute
// op is preceded by one event per block of its stage, in execution order
// (reverse for the backward), inside the op's interval and summing to no
// more than it; that other ops have none; and that running block by block
// changes neither the losses nor what is left allocated.
func TestBlockTimingEvents(t *testing.T) {
	ctx := watch(t, time.Minute)
	for _, o := range blockSchedules {
		cfg := blockConfig(o)
		name := describe(cfg)
		on, err := Run(ctx, cfg, RunOptions{Warmup: 1, Steps: 2, BlockTiming: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		off, err := Run(ctx, cfg, RunOptions{Warmup: 1, Steps: 2})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range on.Steps {
			if on.Steps[i].Loss != off.Steps[i].Loss {
				t.Errorf("%s: step %d loss %v with per-block timing, %v without", name, i, on.Steps[i].Loss, off.Steps[i].Loss)
			}
		}
		bounds := on.Partition
		prog, err := schedule.Build(cfg.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		for s, st := range on.Record().Partition {
			if st.Device != prog.Owners[s] {
				t.Errorf("%s: the record puts stage %d on device %d, the program on device %d", name, s, st.Device, prog.Owners[s])
			}
		}
		var blockEvents int
		for _, s := range on.Steps {
			for d, ds := range s.Devices {
				var pending []profiler.Event // block events since the last whole op
				for _, e := range ds.Events {
					if e.Block != wholeOp {
						pending = append(pending, e)
						blockEvents++
						continue
					}
					checkBlocks(t, name, d, e, pending, bounds)
					pending = pending[:0]
				}
				if len(pending) > 0 {
					t.Errorf("%s: device %d: %d block events after the last op", name, d, len(pending))
				}
			}
		}
		if blockEvents == 0 {
			t.Errorf("%s: no per-block events", name)
		}
		for _, s := range off.Steps {
			for d, ds := range s.Devices {
				for _, e := range ds.Events {
					if e.Block != wholeOp {
						t.Errorf("%s: device %d: block event %v of block %d without per-block timing", name, d, e.Op, e.Block)
					}
				}
			}
		}
		if rec := off.Record(); rec.Blocks != nil {
			t.Errorf("%s: %d block timings without per-block timing", name, len(rec.Blocks))
		}

		// Block by block leaves nothing allocated after a step.
		tr := testTrainer(t, cfg)
		tr.setRecording(true, true)
		for range 2 {
			if _, err := tr.Step(ctx); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		checkReleased(t, tr)
	}
}

// checkBlocks checks the block events recorded during op event e.
func checkBlocks(t *testing.T, name string, d int, e profiler.Event, blocks []profiler.Event, bounds []int) {
	t.Helper()
	kind, err := schedule.ParseOpKind(e.Op)
	if err != nil {
		t.Fatalf("%s: device %d: %v", name, d, err)
	}
	if !isCompute(kind) {
		if len(blocks) > 0 {
			t.Errorf("%s: device %d: %v has %d block events", name, d, e.Op, len(blocks))
		}
		return
	}
	lo, hi := bounds[e.Stage], bounds[e.Stage+1]
	if len(blocks) != hi-lo {
		t.Errorf("%s: device %d: %v has %d block events for blocks [%d, %d)", name, d, e.Op, len(blocks), lo, hi)
		return
	}
	var sum int64
	for i, b := range blocks {
		want := lo + i
		if kind == schedule.Backward || kind == schedule.BackwardInput || kind == schedule.BackwardWeight {
			want = hi - 1 - i
		}
		if b.Block != want || b.Op != e.Op || b.Stage != e.Stage || b.Micro != e.Micro || b.Shard != e.Shard {
			t.Errorf("%s: device %d: %v event %d is block %d of %v, want block %d", name, d, e.Op, i, b.Block, b.Op, want)
		}
		if b.StartNanos < e.StartNanos || b.EndNanos > e.EndNanos || b.StartNanos > b.EndNanos {
			t.Errorf("%s: device %d: %v block %d [%d, %d] outside the op's [%d, %d]", name, d, e.Op, b.Block, b.StartNanos, b.EndNanos, e.StartNanos, e.EndNanos)
		}
		sum += b.EndNanos - b.StartNanos
	}
	if sum > e.EndNanos-e.StartNanos {
		t.Errorf("%s: device %d: %v blocks sum to %d ns, the op took %d", name, d, e.Op, sum, e.EndNanos-e.StartNanos)
	}
}

// TestRecordingAllocatesNothingPerOp compares a step's allocations with
// recording off, on, and on with per-block timing, at two micro-batch
// counts: recording may cost one copy of the events per device and step,
// but nothing per op, per-block timing nothing per block, and the
// recorders never grow.
func TestRecordingAllocatesNothingPerOp(t *testing.T) {
	ctx := watch(t, time.Minute)
	for _, m := range []int{1, 4} {
		cfg := blockConfig(schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: m})
		tr := testTrainer(t, cfg)
		step := func() {
			if _, err := tr.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		step() // first-use allocations: gradients, optimizer state
		tr.setRecording(false, false)
		off := testing.AllocsPerRun(5, step)
		tr.setRecording(true, false)
		on := testing.AllocsPerRun(5, step)
		tr.setRecording(true, true)
		blocks := testing.AllocsPerRun(5, step)
		ops := 0
		for d, w := range tr.workers {
			ops += len(tr.program.Devices[d])
			if g := w.rec.Growths(); g != 0 {
				t.Errorf("M=%d: device %d: recorder grew %d times", m, d, g)
			}
		}
		t.Logf("M=%d (%d ops): %.0f allocations per step not recording, %.0f recording, %.0f per block", m, ops, off, on, blocks)
		if on-off > float64(len(tr.workers)) {
			t.Errorf("M=%d: recording costs %.0f allocations per step over %d ops, want at most %d (one event copy per device)", m, on-off, ops, len(tr.workers))
		}
		// Running block by block allocates what models.Sequential does,
		// less its up-front shape check.
		if blocks > on {
			t.Errorf("M=%d: per-block timing costs %.0f allocations per step over whole-op recording", m, blocks-on)
		}
	}
}

// TestRecordConsistent checks a record's fields against each other and
// against the program: step counts, busy + idle = step time, a bubble in
// [0, 1), transfers per step equal to what the program moves, costs that
// add up to the model's, and a valid record.
func TestRecordConsistent(t *testing.T) {
	ctx := watch(t, time.Minute)
	for _, o := range []schedule.Options{
		{Name: schedule.Single, Devices: 1, Micro: 2},
		{Name: schedule.GPipe, Devices: 2, Micro: 2},
		{Name: schedule.Coop, Devices: 3, Micro: 3, Prefetch: 1},
	} {
		cfg := blockConfig(o)
		name := describe(cfg)
		res, err := Run(ctx, cfg, RunOptions{Warmup: 1, Steps: 3, BlockTiming: true, Calibrate: o.Devices == 1})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rec := res.Record()
		if err := rec.Validate(); err != nil {
			t.Errorf("%s: invalid record: %v", name, err)
		}
		checkRecordCounts(t, name, res, rec)
		checkRecordDevices(t, name, res, rec, testTrainer(t, cfg))
		if o.Devices == 1 && (rec.Env.Calibration == nil || len(rec.Env.Calibration.Samples) == 0) {
			t.Errorf("%s: calibrated run records no calibration", name)
		}
		if again := res.Record(); again.ID == rec.ID {
			t.Errorf("%s: two records share the ID %q", name, rec.ID)
		}
	}
}

func checkRecordCounts(t *testing.T, name string, res *Result, rec profiler.Record) {
	t.Helper()
	k := res.Config.Schedule.Devices
	if rec.Schema != profiler.SchemaVersion || rec.Kind != profiler.KindMeasured || rec.ID == "" || rec.CreatedUTC == "" {
		t.Errorf("%s: header %d %q %q %q", name, rec.Schema, rec.Kind, rec.ID, rec.CreatedUTC)
	}
	if len(rec.Steps) != 3 || rec.Config.Steps != 3 || len(rec.WarmupLosses) != 1 || rec.Config.Warmup != 1 {
		t.Errorf("%s: %d steps (config %d), %d warm-up losses (config %d), want 3 and 1", name, len(rec.Steps), rec.Config.Steps, len(rec.WarmupLosses), rec.Config.Warmup)
	}
	c := rec.Config
	if c.Model != "mlp" || c.Batch != 12 || c.Devices != k || c.Classes != 5 || c.Threads != 1 || c.LR != 0.01 || c.Balance != "macs" {
		t.Errorf("%s: config %+v", name, c)
	}
	if (c.Checkpoint != "") != (c.Schedule == schedule.GPipe) || (c.Prefetch != 0) != (c.Schedule == schedule.Coop) {
		t.Errorf("%s: checkpoint %q, prefetch %d for schedule %s", name, c.Checkpoint, c.Prefetch, c.Schedule)
	}
	if len(rec.Env.Devices) != k || rec.Env.Cores < 1 || rec.Env.GoVersion == "" || rec.Env.Version == "" || rec.Env.Backend != "cpu" {
		t.Errorf("%s: environment %+v", name, rec.Env)
	}
	if hp := rec.Env.HugePages; hp != "advised" && hp != "off" && hp != "unavailable" {
		t.Errorf("%s: environment huge_pages %q, want advised, off or unavailable from the CPU backend", name, hp)
	}
	if len(rec.Partition) != k {
		t.Fatalf("%s: %d stages, want %d", name, len(rec.Partition), k)
	}
	var params, macs int64
	next := 0
	for s, st := range rec.Partition {
		if st.FirstBlock != next || len(st.Blocks) != st.EndBlock-st.FirstBlock || st.ActivationBytesPerSample <= 0 {
			t.Errorf("%s: stage %d: %+v after block %d", name, s, st, next)
		}
		next = st.EndBlock
		params += st.Params
		macs += st.MACsPerSample
	}
	if next != len(res.Model.Blocks) || params != res.Model.Params() || macs != res.Model.MACs() {
		t.Errorf("%s: stages cover %d blocks, %d params, %d MACs; the model has %d, %d, %d", name, next, params, macs, len(res.Model.Blocks), res.Model.Params(), res.Model.MACs())
	}
	var events int
	for _, s := range res.Steps {
		for _, ds := range s.Devices {
			events += len(ds.Events)
		}
	}
	if len(rec.Events) != events {
		t.Errorf("%s: %d record events for %d run events", name, len(rec.Events), events)
	}
	for _, e := range rec.Events {
		if _, err := schedule.ParseOpKind(e.Op); err != nil || e.Stage < 0 || e.Device < 0 || e.Device >= k || e.Block < wholeOp {
			t.Errorf("%s: event %+v", name, e)
			break
		}
	}
	if len(rec.Blocks) != len(res.Model.Blocks) {
		t.Fatalf("%s: %d block timings for %d blocks", name, len(rec.Blocks), len(res.Model.Blocks))
	}
	for _, b := range rec.Blocks {
		if b.ForwardNanos <= 0 || b.BackwardNanos <= 0 || b.Samples != 12/c.Micro || b.Name != res.Model.Blocks[b.Block].Name {
			t.Errorf("%s: block timing %+v", name, b)
		}
		if (b.PredictNanos > 0) != (c.Schedule == schedule.Coop && b.Stage < k-1) {
			t.Errorf("%s: block %d of stage %d: predict %d ns", name, b.Block, b.Stage, b.PredictNanos)
		}
	}
}

func checkRecordDevices(t *testing.T, name string, res *Result, rec profiler.Record, tr *Trainer) {
	t.Helper()
	var meanStep int64
	for _, s := range rec.Steps {
		meanStep += s.WallNanos
	}
	meanStep /= int64(len(rec.Steps))
	var moved int64
	for d, dev := range rec.Devices {
		var byOp int64
		for _, v := range dev.BusyNanosByOp {
			byOp += v
		}
		// Each mean is rounded down on its own: allow one nanosecond per
		// term.
		if dev.BusyNanos <= 0 || dev.BusyNanos > rec.Summary.StepNanosMax || byOp > dev.BusyNanos || dev.BusyNanos-byOp > int64(len(dev.BusyNanosByOp)) {
			t.Errorf("%s: device %d busy %d ns (by op %d) with steps up to %d", name, d, dev.BusyNanos, byOp, rec.Summary.StepNanosMax)
		}
		if diff := dev.BusyNanos + dev.IdleNanos - meanStep; diff < -2 || diff > 2 {
			t.Errorf("%s: device %d busy %d + idle %d ns, mean step %d", name, d, dev.BusyNanos, dev.IdleNanos, meanStep)
		}
		if dev.PeakBytes <= 0 || dev.PeakBytesByCategory["weights"] <= 0 || dev.PeakBytes > rec.Summary.PeakBytesMax {
			t.Errorf("%s: device %d peak %d bytes, by category %v", name, d, dev.PeakBytes, dev.PeakBytesByCategory)
		}
		var want int64
		for _, op := range tr.Program().Devices[d] {
			if op.Kind == schedule.Recv || op.Kind == schedule.AllGather || op.Kind == schedule.AllToAll {
				want += transferBytes(tr, op, d)
			}
		}
		if dev.ReceivedBytesPerStep != want {
			t.Errorf("%s: device %d received %d bytes per step, the program moves %d", name, d, dev.ReceivedBytesPerStep, want)
		}
		moved += want
	}
	if rec.Summary.MovedBytesPerStep != moved {
		t.Errorf("%s: %d bytes moved per step, the program moves %d", name, rec.Summary.MovedBytesPerStep, moved)
	}
	var sent int64
	for _, dev := range rec.Devices {
		sent += dev.SentBytesPerStep
	}
	if sent != moved {
		t.Errorf("%s: %d bytes sent per step, %d received", name, sent, moved)
	}
	sm := rec.Summary
	if sm.BubbleFraction < 0 || sm.BubbleFraction >= 1 || sm.StepNanosMin > sm.StepNanosMedian || sm.StepNanosMedian > sm.StepNanosMax || sm.SamplesPerSecond <= 0 {
		t.Errorf("%s: summary %+v", name, sm)
	}
	if want := float64(res.Config.Batch) / (float64(sm.StepNanosMedian) / 1e9); sm.SamplesPerSecond != want {
		t.Errorf("%s: %g samples/s, want %g", name, sm.SamplesPerSecond, want)
	}
}

// TestRunCalibrates checks that a K = 1 run with Calibrate records a
// calibration and that a run without it records none.
func TestRunCalibrates(t *testing.T) {
	ctx := watch(t, time.Minute)
	cfg := blockConfig(schedule.Options{Name: schedule.Single, Devices: 1, Micro: 1})
	for _, cal := range []bool{false, true} {
		res, err := Run(ctx, cfg, RunOptions{Steps: 1, Calibrate: cal})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Record().Env.Calibration != nil; got != cal {
			t.Errorf("Calibrate %v: calibration recorded %v", cal, got)
		}
	}
}
