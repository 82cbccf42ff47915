package runner

import (
	"context"
	"runtime"
	"testing"

	"github.com/pipecast/pipecast/config"
)

func TestReserveProcs(t *testing.T) {
	saved := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(saved)
	runtime.GOMAXPROCS(4)
	a := reserveProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("one run of 1 thread: GOMAXPROCS %d, want 1", got)
	}
	b := reserveProcs(2)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("runs of 1 and 2 threads: GOMAXPROCS %d, want 3", got)
	}
	c := reserveProcs(8)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("11 threads held: GOMAXPROCS %d, want the 4 it was", got)
	}
	c()
	c() // a second release changes nothing
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("after releasing 8: GOMAXPROCS %d, want 3", got)
	}
	a()
	b()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("all released: GOMAXPROCS %d, want the 4 it was", got)
	}
}

// TestRunHoldsProcsForOneDevice checks that a single-device run steps on
// GOMAXPROCS = its threads and gives the processors back when it ends.
func TestRunHoldsProcsForOneDevice(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to tell the difference")
	}
	saved := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(saved)
	runtime.GOMAXPROCS(2)
	cfg := config.Config{Model: "mlp", Batch: 8, Threads: 1, Dataset: "synthetic", Seed: 1}
	cfg.Schedule.Name, cfg.Schedule.Devices, cfg.Schedule.Micro = "gpipe", 1, 2
	var during int
	opts := RunOptions{Steps: 1, Gate: func(context.Context, int, int) error {
		during = runtime.GOMAXPROCS(0)
		return nil
	}}
	if _, err := Run(t.Context(), cfg, opts); err != nil {
		t.Fatal(err)
	}
	if during != 1 {
		t.Errorf("GOMAXPROCS during a 1-device, 1-thread run: %d, want 1", during)
	}
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS after the run: %d, want the 2 it was", got)
	}
}
