package schedule

import (
	"math"
	"testing"
)

// linearSlowdown slows an op by half for each other device computing
// throughout it.
func linearSlowdown(n float64) float64 { return 1 + 0.5*(n-1) }

// TestInterferenceOnlyWhereDevicesOverlap checks that a program whose
// devices never compute at the same time (gpipe at M = 1: the stages hand
// one micro-batch down and back) is simulated exactly as without
// interference, every op at concurrency 1, while gpipe at M = 4, whose
// devices overlap in the middle of the step, slows down, and only in the
// ops that overlap.
func TestInterferenceOnlyWhereDevicesOverlap(t *testing.T) {
	for _, K := range []int{2, 3, 4} {
		p, err := Build(Options{Name: GPipe, Devices: K, Micro: 1, Checkpoint: Never})
		if err != nil {
			t.Fatal(err)
		}
		plain, err := Simulate(p, fbCost(1, 2, 0))
		if err != nil {
			t.Fatal(err)
		}
		slowed, err := SimulateInterference(p, fbCost(1, 2, 0), linearSlowdown, 10)
		if err != nil {
			t.Fatal(err)
		}
		if slowed.Makespan != plain.Makespan {
			t.Errorf("gpipe K=%d M=1: makespan %v with interference, %v without; nothing overlaps", K, slowed.Makespan, plain.Makespan)
		}
		for k, c := range Concurrency(plain) {
			for i, n := range c {
				if n != 1 {
					t.Errorf("gpipe K=%d M=1: device %d op %d (%v) at concurrency %v, want 1", K, k, i, p.Devices[k][i], n)
				}
			}
		}
	}
	p, err := Build(Options{Name: GPipe, Devices: 2, Micro: 4, Checkpoint: Never})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Simulate(p, fbCost(1, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	conc := Concurrency(plain)
	overlapped := 0
	for k, c := range conc {
		for i, n := range c {
			if n < 1 || n > 2 {
				t.Errorf("device %d op %d: concurrency %v outside [1, 2] with 2 devices", k, i, n)
			}
			if n > 1 {
				overlapped++
			}
		}
	}
	// Device 0's first forward runs alone, and so does device 1's last
	// backward; the middle overlaps.
	if conc[0][0] != 1 || overlapped == 0 {
		t.Errorf("concurrency %v: want the first forward alone and some ops overlapped", conc)
	}
	slowed, err := SimulateInterference(p, fbCost(1, 2, 0), linearSlowdown, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !(slowed.Makespan > plain.Makespan && slowed.Makespan < 1.5*plain.Makespan) {
		t.Errorf("gpipe K=2 M=4: makespan %v with interference, %v without; want between 1 and 1.5 times", slowed.Makespan, plain.Makespan)
	}
}

// TestInterferenceFixedPoint checks the iteration on two devices with one
// compute op each, lengths 2 and 1, that start together: device 1's op
// overlaps device 0's throughout (concurrency 2, so it takes 1.5), and
// device 0's op d overlaps it for 1.5 of its d, so d = 2·(1 + 0.5·1.5/d),
// d = 1 + √2.5.
func TestInterferenceFixedPoint(t *testing.T) {
	p := &Program{Devices: [][]Op{{{Kind: Forward, Stage: 0}}, {{Kind: Forward, Stage: 1}}}, Stages: 2}
	cost := func(k int, o Op) float64 { return []float64{2, 1}[k] }
	tl, err := SimulateInterference(p, cost, linearSlowdown, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 + math.Sqrt(2.5); math.Abs(tl.End[0][0]-want) > 1e-5 || math.Abs(tl.End[1][0]-1.5) > 1e-9 {
		t.Errorf("ends %v and %v, want %v and 1.5", tl.End[0][0], tl.End[1][0], want)
	}
	if _, err := SimulateInterference(p, cost, linearSlowdown, 0); err == nil {
		t.Error("0 rounds accepted")
	}
}
