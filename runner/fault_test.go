package runner

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

var errInjected = errors.New("injected fault")

// faultConfig is a small mlp on K = 3 devices (K = 1 for single), so the
// middle device both receives and sends.
func faultConfig(o schedule.Options) config.Config {
	return config.Config{
		Model: "mlp", ModelConfig: models.Config{Sizes: []int{48, 32, 32, 32, 5}},
		Batch: 12, Seed: 3, Threads: 1, Schedule: o,
	}
}

// settleGoroutines waits briefly for goroutines that are ending to end,
// and returns how many remain.
func settleGoroutines(limit int) int {
	n := runtime.NumGoroutine()
	for i := 0; i < 100 && n > limit; i++ {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// checkReleased frees the trainer's tensors, checks that nothing is left
// live on any device, and closes it.
func checkReleased(t *testing.T, tr *Trainer) {
	t.Helper()
	devs := tr.Devices()
	tr.release()
	for d, dev := range devs {
		if m := dev.Memory(); m.LiveTotalBytes != 0 {
			t.Errorf("device %d: %d bytes live after the trainer released its tensors (by category %v)", d, m.LiveTotalBytes, m.LiveBytes)
		}
	}
	tr.Close()
}

// TestFaultsEndTheStep injects an error into one op of one device and
// checks that Step returns that error, that no goroutine and no tensor
// outlives the trainer, and that a kernel panic becomes an error too.
func TestFaultsEndTheStep(t *testing.T) {
	ctx := watch(t, 2*time.Minute)
	type target struct {
		name string
		pick func(op schedule.Op) bool // the op to fail, first match
		last bool                      // the device's last match instead
	}
	first := func(schedule.Op) bool { return true }
	kind := func(k schedule.OpKind) func(schedule.Op) bool {
		return func(op schedule.Op) bool { return op.Kind == k }
	}
	targets := []target{
		{name: "first op", pick: first},
		{name: "last op", pick: first, last: true},
		{name: "recv", pick: kind(schedule.Recv)},
		{name: "last recv", pick: kind(schedule.Recv), last: true},
		{name: "send", pick: kind(schedule.Send)},
		{name: "backward", pick: kind(schedule.Backward), last: true},
		{name: "allgather", pick: kind(schedule.AllGather)},
		{name: "alltoall", pick: kind(schedule.AllToAll)},
		{name: "predict", pick: kind(schedule.Predict), last: true},
	}
	schedules := []schedule.Options{
		{Name: schedule.Single, Devices: 1, Micro: 2},
		{Name: schedule.GPipe, Devices: 3, Micro: 3, Checkpoint: schedule.ExceptLast},
		{Name: schedule.GPipe, Devices: 3, Micro: 3, Checkpoint: schedule.Never},
		{Name: schedule.OneF1B, Devices: 3, Micro: 3},
		{Name: schedule.Coop, Devices: 3, Micro: 3, Prefetch: 1},
	}
	ran := 0
	for _, o := range schedules {
		for _, tg := range targets {
			for _, panics := range []bool{false, true} {
				cfg := faultConfig(o)
				dev := o.Devices / 2 // the middle device
				before := runtime.NumGoroutine()
				tr, err := NewTrainer(cfg)
				if err != nil {
					t.Fatalf("%s: %v", describe(cfg), err)
				}
				// Find the op's index in the device's program.
				at := -1
				for i, op := range tr.Program().Devices[dev] {
					if tg.pick(op) {
						at = i
						if !tg.last {
							break
						}
					}
				}
				if at < 0 {
					tr.Close()
					continue // this schedule has no such op on the device
				}
				name := describe(cfg) + ": " + tg.name
				if panics {
					name += " (kernel panic)"
				}
				// A good step first, so that the fault hits a trainer with
				// optimizer state and in its second step.
				if _, err := tr.Step(ctx); err != nil {
					t.Fatalf("%s: first step: %v", name, err)
				}
				seen := 0
				d := tr.Devices()[dev]
				tr.fault = func(device int, op schedule.Op) error {
					if device != dev {
						return nil
					}
					seen++
					if seen-1 != at {
						return nil
					}
					if panics {
						// A real kernel's argument check: shapes that
						// do not match.
						a, b := d.Alloc(tensor.Workspace, 2, 3), d.Alloc(tensor.Workspace, 3, 2)
						defer a.Release()
						defer b.Release()
						d.Add(a, a, b)
					}
					return errInjected
				}
				_, err = tr.Step(ctx)
				ran++
				switch {
				case err == nil:
					t.Errorf("%s: Step succeeded", name)
				case !panics && !errors.Is(err, errInjected):
					t.Errorf("%s: Step error %v, want the injected fault", name, err)
				case panics && !strings.Contains(err.Error(), "panic"):
					t.Errorf("%s: Step error %v, want the kernel's panic", name, err)
				}
				if seen <= at {
					t.Errorf("%s: device %d ran %d ops, never reaching op %d", name, dev, seen, at)
				}
				checkReleased(t, tr)
				if n := settleGoroutines(before); n > before {
					buf := make([]byte, 1<<20)
					t.Fatalf("%s: %d goroutines before the trainer, %d after Close:\n%s", name, before, n, buf[:runtime.Stack(buf, true)])
				}
			}
		}
	}
	t.Logf("%d injected faults (errors and kernel panics) ended their step, leaving no goroutine and no live tensor", ran)
}

// TestStepAfterCancel checks that a cancelled context ends a step with
// the context's error, promptly, without leaks.
func TestStepAfterCancel(t *testing.T) {
	watch(t, time.Minute)
	for _, o := range []schedule.Options{
		{Name: schedule.GPipe, Devices: 3, Micro: 3},
		{Name: schedule.Coop, Devices: 3, Micro: 3, Prefetch: 1},
	} {
		before := runtime.NumGoroutine()
		tr, err := NewTrainer(faultConfig(o))
		if err != nil {
			t.Fatal(err)
		}
		cctx, cancel := contextCancelled()
		cancel()
		if _, err := tr.Step(cctx); err == nil {
			t.Errorf("%s: Step with a cancelled context succeeded", describe(faultConfig(o)))
		}
		checkReleased(t, tr)
		if n := settleGoroutines(before); n > before {
			t.Errorf("%s: %d goroutines before, %d after", describe(faultConfig(o)), before, n)
		}
	}
}
