package runner

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// watchdogGrace is how long past its context's deadline a test may still
// run before the watchdog gives up on it: long enough for a cancelled step
// to unwind, short enough that a deadlock fails fast.
const watchdogGrace = 20 * time.Second

// watch returns a context that ends after d, and starts a watchdog that,
// if the test is still running watchdogGrace later (a step that ignores
// its context, a deadlock), prints every goroutine's stack and panics, so
// that a hang fails the run with a dump instead of stalling it.
func watch(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	done := make(chan struct{})
	name := t.Name()
	go func() {
		timer := time.NewTimer(d + watchdogGrace)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			buf := make([]byte, 8<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "runner test %s hung for %v; goroutines:\n%s\n", name, d+watchdogGrace, buf[:n])
			panic("runner test " + name + " hung")
		}
	}()
	t.Cleanup(func() {
		close(done)
		cancel()
	})
	return ctx
}

// testTrainer opens a trainer for cfg with one thread per device and
// closes it when the test ends.
func testTrainer(t *testing.T, cfg config.Config) *Trainer {
	t.Helper()
	if cfg.Threads == 0 {
		cfg.Threads = 1
	}
	tr, err := NewTrainer(cfg)
	if err != nil {
		t.Fatalf("NewTrainer(%s K=%d M=%d): %v", cfg.Schedule.Name, cfg.Schedule.Devices, cfg.Schedule.Micro, err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// trained is what a few steps of one configuration left behind.
type trained struct {
	name    string
	losses  []float64
	params  map[string][]float32
	buffers map[string][]float32
	counts  map[string]int64 // num_batches_tracked by buffer name
}

// train runs steps steps of cfg and returns the losses and the final
// state; the trainer is closed before it returns.
func train(t *testing.T, ctx context.Context, cfg config.Config, steps int) trained {
	t.Helper()
	if cfg.Threads == 0 {
		cfg.Threads = 1
	}
	tr, err := NewTrainer(cfg)
	if err != nil {
		t.Fatalf("NewTrainer(%s): %v", describe(cfg), err)
	}
	defer tr.Close()
	out := trained{name: describe(cfg)}
	for i := 0; i < steps; i++ {
		s, err := tr.Step(ctx)
		if err != nil {
			t.Fatalf("%s: step %d: %v", out.name, i, err)
		}
		out.losses = append(out.losses, s.Loss)
	}
	out.params = tr.Params()
	out.buffers = tr.Buffers()
	out.counts = batchCounts(tr)
	return out
}

// batchCounts returns every own stage's BatchNorm num_batches_tracked.
func batchCounts(tr *Trainer) map[string]int64 {
	out := map[string]int64{}
	for _, w := range tr.workers {
		for _, s := range w.owned {
			for _, b := range models.Buffers(w.stages[s]) {
				if b.Buffer.Count != nil {
					out[b.Name] = *b.Buffer.Count
				}
			}
		}
	}
	return out
}

// describe names a configuration in test logs.
func describe(cfg config.Config) string {
	o := cfg.Schedule
	s := fmt.Sprintf("%s K=%d M=%d", o.Name, max(o.Devices, 1), max(o.Micro, 1))
	if o.Replicas > 1 {
		s = fmt.Sprintf("%s R=%d K=%d M=%d", o.Name, o.Replicas, o.Devices, max(o.Micro, 1))
	}
	switch o.Name {
	case schedule.GPipe:
		s += " ckpt=" + o.Checkpoint.String()
	case schedule.Coop:
		s += fmt.Sprintf(" d=%d", max(o.Prefetch, 1))
	}
	return s
}

// relDiff returns the worst per-tensor relative difference of got from
// want, max|a−b| / max|b| over each tensor, and the tensor it occurs in.
// A tensor missing on either side, or of another length, is an infinite
// difference.
func relDiff(got, want map[string][]float32) (float64, string) {
	worst, where := 0.0, ""
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(got) != len(want) {
		return math.Inf(1), fmt.Sprintf("%d tensors, want %d", len(got), len(want))
	}
	for _, n := range names {
		a, b := got[n], want[n]
		if len(a) != len(b) {
			return math.Inf(1), n
		}
		var diff, scale float64
		for i := range b {
			diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
			scale = math.Max(scale, math.Abs(float64(b[i])))
		}
		r := diff
		if scale > 0 {
			r = diff / scale
		}
		if math.IsNaN(r) {
			r = math.Inf(1)
		}
		if r > worst || where == "" {
			worst, where = r, n
		}
	}
	return worst, where
}

// contextCancelled returns a fresh context and its cancel function.
func contextCancelled() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}
