package runner

import (
	"runtime"
	"testing"
	"time"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// TestRunCountsAndEvents checks Run's bookkeeping: warm-up and measured
// steps, oversubscription, per-device events and transfer byte counts.
func TestRunCountsAndEvents(t *testing.T) {
	ctx := watch(t, time.Minute)
	for _, o := range []schedule.Options{
		{Name: schedule.Single, Devices: 1, Micro: 2},
		{Name: schedule.GPipe, Devices: 3, Micro: 3},
		{Name: schedule.OneF1B, Devices: 3, Micro: 3},
		{Name: schedule.Coop, Devices: 3, Micro: 3, Prefetch: 1},
	} {
		cfg := faultConfig(o)
		name := describe(cfg)
		res, err := Run(ctx, cfg, RunOptions{Warmup: 2, Steps: 3})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Warmup) != 2 || len(res.Steps) != 3 {
			t.Errorf("%s: %d warm-up and %d measured steps, want 2 and 3", name, len(res.Warmup), len(res.Steps))
		}
		for i, s := range append(append([]StepResult(nil), res.Warmup...), res.Steps...) {
			if s.Step != i {
				t.Errorf("%s: result %d is step %d", name, i, s.Step)
			}
		}
		if want := o.Devices*cfg.Threads > runtime.NumCPU(); res.Oversubscribed != want || res.Cores != runtime.NumCPU() {
			t.Errorf("%s: Oversubscribed %v on %d cores, want %v on %d", name, res.Oversubscribed, res.Cores, want, runtime.NumCPU())
		}
		tr := testTrainer(t, cfg)
		prog := tr.Program()
		var sent, received int64
		for _, s := range res.Steps {
			if len(s.Devices) != o.Devices {
				t.Fatalf("%s: %d devices in a step, want %d", name, len(s.Devices), o.Devices)
			}
			for d, ds := range s.Devices {
				if len(ds.Events) != len(prog.Devices[d]) {
					t.Errorf("%s: device %d: %d events for %d ops", name, d, len(ds.Events), len(prog.Devices[d]))
					continue
				}
				var prevEnd int64
				for i, e := range ds.Events {
					op := prog.Devices[d][i]
					if !isEventOf(e, op, d) {
						t.Errorf("%s: device %d event %d is %+v, program op %v", name, d, i, e, op)
					}
					if e.StartNanos > e.EndNanos || e.StartNanos < prevEnd || e.EndNanos > s.Nanos {
						t.Errorf("%s: device %d event %v: [%d, %d] after %d in a %d ns step", name, d, e.Op, e.StartNanos, e.EndNanos, prevEnd, s.Nanos)
					}
					prevEnd = e.EndNanos
					if want := transferBytes(tr, op, d); e.Bytes != want {
						t.Errorf("%s: device %d %v moved %d bytes, want %d", name, d, e.Op, e.Bytes, want)
					}
				}
			}
		}
		last := res.Steps[len(res.Steps)-1]
		for _, ds := range last.Devices {
			sent += ds.Comm.SentBytes
			received += ds.Comm.ReceivedBytes
		}
		if sent != received {
			t.Errorf("%s: devices sent %d bytes and received %d", name, sent, received)
		}
		if o.Devices > 1 && sent == 0 {
			t.Errorf("%s: no bytes moved between %d devices", name, o.Devices)
		}
		t.Logf("%s: %d+%d steps, %d bytes sent = received over the run, oversubscribed %v (%d cores)", name, len(res.Warmup), len(res.Steps), sent, res.Oversubscribed, res.Cores)
	}
}

// transferBytes is what op should report moving on device d of tr: the
// tensor sent or received, the replicas gathered, the boundaries received
// from the other devices; zero for compute.
func transferBytes(tr *Trainer, op schedule.Op, d int) int64 {
	const f32 = 4
	cfg := tr.cfg
	k := cfg.Schedule.Devices
	m := cfg.MicroBatchSize()
	switch op.Kind {
	case schedule.Send, schedule.Recv:
		// The payload is stage op.Stage's output or its input gradient.
		if op.What == schedule.Activation {
			return int64(tr.shapeOut(op.Stage, m).Numel()) * f32
		}
		return int64(tr.shapeIn(op.Stage, m).Numel()) * f32
	case schedule.AllGather:
		var n int64
		for _, s := range op.Stages {
			if s != d {
				n += int64(tr.workers[d].replicaFlats[s].Len()) * f32
			}
		}
		return n
	case schedule.AllToAll:
		if d == 0 {
			return 0
		}
		return int64(tr.shapeIn(d, cfg.Batch/k*(k-1)).Numel()) * f32
	}
	return 0
}

// isEventOf reports whether e is device d's event of op: its kind, stage
// (the device's own for a collective, which belongs to no stage),
// micro-batch, shard and peer.
func isEventOf(e profiler.Event, op schedule.Op, d int) bool {
	stage := op.Stage
	if stage == schedule.None {
		stage = d
	}
	return e.Op == op.Kind.String() && e.Device == d && e.Stage == stage && e.Micro == op.Micro &&
		e.Shard == op.Shard && e.Peer == op.Peer && e.Block == wholeOp
}
