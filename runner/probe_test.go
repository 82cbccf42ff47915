package runner

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor/meta"
)

// TestProbeTime checks that the probe takes a positive time and logs it
// (go test -run TestProbeTime -v), the cost a run pays per step.
func TestProbeTime(t *testing.T) {
	p := newProbe()
	var ns []int64
	for range 9 {
		ns = append(ns, p.time())
	}
	slices.Sort(ns)
	for _, n := range ns {
		if n <= 0 {
			t.Fatalf("probe took %d ns, want > 0", n)
		}
	}
	// The multiply-adds sit at their fixed point, so that no float
	// drifts into the subnormals, whose arithmetic is slow on some CPUs.
	// 1e-3: far above float32 rounding at 1, far below any drift.
	for i, x := range p.floats {
		if math.Abs(float64(x)-1) > 1e-3 {
			t.Fatalf("float %d is %g after the probes, want 1", i, x)
		}
	}
	t.Logf("probe: min %v, median %v, max %v over %d", time.Duration(ns[0]), time.Duration(ns[len(ns)/2]), time.Duration(ns[len(ns)-1]), len(ns))
}

// TestRunProbes checks that a run probes the machine once per measured
// step, that every probe took time, and that the record carries them.
func TestRunProbes(t *testing.T) {
	ctx := watch(t, time.Minute)
	cfg := faultConfig(schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2})
	res, err := Run(ctx, cfg, RunOptions{Warmup: 1, Steps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ProbeNanos) != len(res.Steps) {
		t.Fatalf("%d probes for %d measured steps, want one each", len(res.ProbeNanos), len(res.Steps))
	}
	for i, n := range res.ProbeNanos {
		if n <= 0 {
			t.Errorf("probe %d took %d ns, want > 0", i, n)
		}
	}
	rec := res.Record()
	if err := rec.Validate(); err != nil {
		t.Fatalf("record: %v", err)
	}
	if p := rec.Env.Probe; p == nil || !slices.Equal(p.Nanos, res.ProbeNanos) {
		t.Errorf("record's probe is %+v, want nanos %v", p, res.ProbeNanos)
	}

	// Steps on symbolic devices take no time: nothing to disturb.
	cfg.Backend = meta.BackendName
	if res, err = Run(ctx, cfg, RunOptions{Steps: 2}); err != nil {
		t.Fatalf("meta: %v", err)
	}
	if res.ProbeNanos != nil {
		t.Errorf("a meta run probed %v, want no probes", res.ProbeNanos)
	}
}
