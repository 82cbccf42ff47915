package config

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

func TestParseThreads(t *testing.T) {
	for _, c := range []struct {
		in        string
		threads   int
		perDevice []int
		bad       string
	}{
		{in: "", threads: 0},
		{in: "0", threads: 0},
		{in: "3", threads: 3},
		{in: "2,1", perDevice: []int{2, 1}},
		{in: " 1, 4 ,2", perDevice: []int{1, 4, 2}},
		{in: "-1", bad: "need at least 1"},
		{in: "2,0", bad: "need at least 1"},
		{in: "2,x", bad: "want a thread count"},
		{in: "2,,1", bad: "want a thread count"},
	} {
		n, per, err := ParseThreads(c.in)
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("ParseThreads(%q) = %d, %v, %v; want an error saying %q", c.in, n, per, err, c.bad)
			}
			continue
		}
		if err != nil || n != c.threads || !slices.Equal(per, c.perDevice) {
			t.Errorf("ParseThreads(%q) = %d, %v, %v; want %d, %v", c.in, n, per, err, c.threads, c.perDevice)
		}
	}
}

// TestDeviceThreads checks that per-device threads fold into Threads when
// alike, set Threads to the largest otherwise, reach every replica's
// device k, count in the thread total and are checked against K.
func TestDeviceThreads(t *testing.T) {
	base := Config{Model: "mlp", Batch: 8, Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2, Replicas: 2}}
	alike := base
	alike.DeviceThreads = []int{3, 3}
	if c := alike.WithDefaults(); c.DeviceThreads != nil || c.Threads != 3 {
		t.Errorf("threads 3,3: DeviceThreads %v, Threads %d; want nil, 3", c.DeviceThreads, c.Threads)
	}
	differ := base
	differ.DeviceThreads = []int{1, 3}
	c := differ.WithDefaults()
	if c.Threads != 3 || !slices.Equal(c.DeviceThreads, []int{1, 3}) {
		t.Fatalf("threads 1,3: DeviceThreads %v, Threads %d; want [1 3], 3", c.DeviceThreads, c.Threads)
	}
	var got []int
	for d := range c.JobDevices() {
		got = append(got, c.ThreadsOf(d))
	}
	if !slices.Equal(got, []int{1, 3, 1, 3}) || c.TotalThreads() != 8 {
		t.Errorf("R=2 K=2 of threads 1,3: job devices' threads %v, total %d; want [1 3 1 3], 8", got, c.TotalThreads())
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	long := base
	long.DeviceThreads = []int{1, 2, 3}
	var inv *InvalidError
	if err := long.Validate(); !errors.As(err, &inv) || inv.Rule != RuleDeviceList || !inv.Rule.Misfit() {
		t.Errorf("three devices' threads at K=2: %v, want a misfit RuleDeviceList", err)
	}
	speeds := base
	speeds.Speeds = []float64{1, 0}
	if err := speeds.Validate(); err == nil {
		t.Error("a speed of 0 validated")
	}
}

// TestSlowdown checks each job device's slowdown: its pipeline device's
// inverse speed, times the straggler's factor on the straggler alone.
func TestSlowdown(t *testing.T) {
	c := Config{Schedule: schedule.Options{Devices: 2, Replicas: 2}, Speeds: []float64{1, 0.5},
		Straggler: Straggler{Device: 2, Factor: 3}}
	want := []float64{1, 2, 3, 2} // job device 2, the straggler, is pipeline device 0 of replica 1
	for d, w := range want {
		if got := c.Slowdown(d); math.Abs(got-w) > 1e-12 {
			t.Errorf("Slowdown(%d) = %g, want %g", d, got, w)
		}
	}
}

// TestSpeedPartition checks the balance by speed against every split
// (brute force): the largest stage time, each stage's blocks' times times
// its device's slowdown, is the least any split reaches; devices alike
// split as by time; a slower device gets fewer blocks.
func TestSpeedPartition(t *testing.T) {
	m, err := models.Describe("resnet50", models.Config{Image: 32, Width: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	n := len(m.Blocks)
	times := make([]float64, n)
	for i, b := range m.Blocks {
		times[i] = float64(b.Cost.MACs) + 1e5*float64(i%3) // uneven, not MACs alone
	}
	for _, c := range []struct {
		name  string
		cfg   Config
		slows []float64 // per stage
	}{
		{"gpipe K=2, device 1 at half speed", Config{Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2}, Speeds: []float64{1, 0.5}}, []float64{1, 2}},
		{"1f1b K=3, straggler device 0 ×1.5", Config{Schedule: schedule.Options{Name: schedule.OneF1B, Devices: 3},
			Straggler: Straggler{Device: 0, Factor: 1.5}}, []float64{1.5, 1, 1}},
		{"interleaved K=2 v=2, device 0 at 0.8", Config{Schedule: schedule.Options{Name: schedule.Interleaved, Devices: 2, Virtual: 2},
			Speeds: []float64{0.8, 1}}, []float64{1.25, 1, 1.25, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Model, cfg.Balance, cfg.BalanceTimes = "resnet50", BalanceSpeed, times
			cfg.ModelConfig = models.Config{Image: 32, Width: 0.25}
			stages := cfg.Schedule.WithDefaults().Stages()
			got, err := cfg.Partition(m, stages, nil)
			if err != nil {
				t.Fatal(err)
			}
			largest := func(b []int) float64 {
				worst := 0.0
				for s := range stages {
					sum := 0.0
					for _, x := range times[b[s]:b[s+1]] {
						sum += x
					}
					worst = max(worst, sum*c.slows[s])
				}
				return worst
			}
			best := math.Inf(1)
			eachSplit(n, stages, func(b []int) { best = min(best, largest(b)) })
			if g := largest(got); g > best*(1+1e-12) {
				t.Errorf("partition %v: largest stage %g, but a split reaches %g", got, g, best)
			}
			even := cfg
			even.Balance = BalanceTime
			byTime, err := even.Partition(m, stages, nil)
			if err != nil {
				t.Fatal(err)
			}
			for s := range stages {
				if c.slows[s] > 1 && got[s+1]-got[s] > byTime[s+1]-byTime[s] {
					t.Errorf("stage %d, slowed ×%g, holds %d blocks by speed, more than its %d by time", s, c.slows[s], got[s+1]-got[s], byTime[s+1]-byTime[s])
				}
			}
		})
	}
	alike := Config{Model: "resnet50", Balance: BalanceSpeed, BalanceTimes: times, Schedule: schedule.Options{Name: schedule.GPipe, Devices: 3}}
	byTime := alike
	byTime.Balance = BalanceTime
	a, err1 := alike.Partition(m, 3, nil)
	b, err2 := byTime.Partition(m, 3, nil)
	if err1 != nil || err2 != nil || !slices.Equal(a, b) {
		t.Errorf("devices alike: by speed %v (%v), by time %v (%v); want the same split", a, err1, b, err2)
	}
}

// eachSplit calls f with the bounds of every split of n blocks into k
// non-empty contiguous stages.
func eachSplit(n, k int, f func([]int)) {
	b := make([]int, k+1)
	b[k] = n
	var rec func(s, lo int)
	rec = func(s, lo int) {
		if s == k {
			f(b)
			return
		}
		for end := lo + 1; end <= n-(k-s-1); end++ {
			if s == k-1 && end != n {
				continue
			}
			b[s+1] = end
			rec(s+1, end)
		}
		b[k] = n
	}
	rec(0, 0)
}
