package tensor_test

import (
	"math/rand/v2"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	_ "github.com/pipecast/pipecast/tensor/cpu"
)

// fakeClock returns a clock that advances by step nanoseconds per read.
func fakeClock(step int64) func() int64 {
	var now int64
	return func() int64 { now += step; return now }
}

func TestTimelineOff(t *testing.T) {
	var m tensor.MemCounter
	m.Alloc(tensor.Weights, 100)
	if tl, ok := m.StopTimeline(); ok || len(tl.Changes) != 0 {
		t.Errorf("StopTimeline without a start: got %d changes, ok %v; want none, false", len(tl.Changes), ok)
	}
}

func TestTimelineRecords(t *testing.T) {
	var m tensor.MemCounter
	m.Alloc(tensor.Weights, 100)
	m.StartTimeline(fakeClock(tensor.MemCoalesceNanos), 16)
	m.Alloc(tensor.Activations, 40)
	m.Move(tensor.Activations, tensor.Boundary, 10)
	m.Free(tensor.Activations, 30)
	tl, ok := m.StopTimeline()
	m.Alloc(tensor.Workspace, 7) // after the stop: not recorded
	if !ok {
		t.Fatal("StopTimeline: no timeline")
	}
	want := []tensor.MemChange{
		{Nanos: 1000, Bytes: 40, Category: tensor.Activations},
		{Nanos: 2000, Bytes: -10, Category: tensor.Activations},
		{Nanos: 3000, Bytes: 10, Category: tensor.Boundary},
		{Nanos: 4000, Bytes: -30, Category: tensor.Activations},
	}
	if len(tl.Changes) != len(want) {
		t.Fatalf("got %d changes %v, want %v", len(tl.Changes), tl.Changes, want)
	}
	for i := range want {
		if tl.Changes[i] != want[i] {
			t.Errorf("change %d: got %+v, want %+v", i, tl.Changes[i], want[i])
		}
	}
	if tl.StartLiveBytes[tensor.Weights] != 100 || tl.End.PeakTotalBytes != 140 || tl.End.LiveTotalBytes != 110 {
		t.Errorf("start weights %d, end peak %d, end live %d; want 100, 140, 110",
			tl.StartLiveBytes[tensor.Weights], tl.End.PeakTotalBytes, tl.End.LiveTotalBytes)
	}
}

func TestTimelineCoalesces(t *testing.T) {
	tests := []struct {
		name          string
		step          int64 // clock advance per change
		ops           func(m *tensor.MemCounter)
		wantChanges   int
		wantCoalesced int64
	}{
		{"allocations merge", 1, func(m *tensor.MemCounter) {
			m.Alloc(tensor.Activations, 1)
			m.Alloc(tensor.Activations, 2)
		}, 1, 1},
		{"frees merge", 1, func(m *tensor.MemCounter) {
			m.Free(tensor.Activations, 1)
			m.Free(tensor.Activations, 2)
		}, 1, 1},
		{"signs differ", 1, func(m *tensor.MemCounter) {
			m.Alloc(tensor.Activations, 1)
			m.Free(tensor.Activations, 1)
		}, 2, 0},
		{"categories differ", 1, func(m *tensor.MemCounter) {
			m.Alloc(tensor.Activations, 1)
			m.Alloc(tensor.Workspace, 1)
		}, 2, 0},
		{"far apart", tensor.MemCoalesceNanos, func(m *tensor.MemCounter) {
			m.Alloc(tensor.Activations, 1)
			m.Alloc(tensor.Activations, 1)
		}, 2, 0},
		{"zero bytes", 1, func(m *tensor.MemCounter) { m.Alloc(tensor.Activations, 0) }, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m tensor.MemCounter
			m.Alloc(tensor.Activations, 10)
			m.StartTimeline(fakeClock(tt.step), 8)
			tt.ops(&m)
			tl, _ := m.StopTimeline()
			if len(tl.Changes) != tt.wantChanges || tl.Coalesced != tt.wantCoalesced {
				t.Errorf("got %d changes (%d coalesced), want %d (%d)", len(tl.Changes), tl.Coalesced, tt.wantChanges, tt.wantCoalesced)
			}
		})
	}
}

func TestTimelineDrops(t *testing.T) {
	var m tensor.MemCounter
	m.StartTimeline(fakeClock(tensor.MemCoalesceNanos), 2)
	for range 5 {
		m.Alloc(tensor.Activations, 1)
	}
	tl, _ := m.StopTimeline()
	if len(tl.Changes) != 2 || cap(tl.Changes) != 2 || tl.Dropped != 3 {
		t.Errorf("got %d changes (cap %d), %d dropped; want 2 (cap 2), 3", len(tl.Changes), cap(tl.Changes), tl.Dropped)
	}
}

// TestTimelineReplayExact checks the timeline's promise: replaying the
// changes from the starting live bytes gives the counter's peaks, per
// category and in total, with coalescing at work.
func TestTimelineReplayExact(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var m tensor.MemCounter
		var live [tensor.NumCategories]int64
		for c := range tensor.NumCategories {
			live[c] = rng.Int64N(1000)
			m.Alloc(tensor.Category(c), live[c])
		}
		m.StartTimeline(fakeClock(1+rng.Int64N(600)), 4096)
		for range 2000 {
			c := tensor.Category(rng.IntN(int(tensor.NumCategories)))
			b := 1 + rng.Int64N(500)
			switch op := rng.IntN(3); {
			case op == 0:
				m.Alloc(c, b)
				live[c] += b
			case op == 1 && live[c] >= b:
				m.Free(c, b)
				live[c] -= b
			case op == 2 && live[c] >= b:
				to := tensor.Category(rng.IntN(int(tensor.NumCategories)))
				m.Move(c, to, b)
				live[c] -= b
				live[to] += b
			}
		}
		tl, _ := m.StopTimeline()
		if tl.Dropped != 0 || tl.Coalesced == 0 {
			t.Fatalf("seed %d: %d dropped, %d coalesced; want none dropped and some coalesced", seed, tl.Dropped, tl.Coalesced)
		}
		peaks, total := tensor.ReplayPeaks(tl.StartLiveBytes, tl.Changes)
		if peaks != tl.End.PeakBytes || total != tl.End.PeakTotalBytes {
			t.Errorf("seed %d: replayed peaks %v (total %d), recorded %v (total %d)", seed, peaks, total, tl.End.PeakBytes, tl.End.PeakTotalBytes)
		}
	}
}

func TestCounterOf(t *testing.T) {
	dev, err := tensor.Open("cpu", tensor.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	c := tensor.CounterOf(dev)
	if c == nil {
		t.Fatal("CounterOf(cpu device) = nil, want its counter")
	}
	c.StartTimeline(tensor.Nanotime, 8)
	x := dev.Alloc(tensor.Activations, 4)
	x.Release()
	tl, _ := c.StopTimeline()
	if len(tl.Changes) != 2 {
		t.Fatalf("got %d changes %v, want an allocation and its release", len(tl.Changes), tl.Changes)
	}
	if peaks, _ := tensor.ReplayPeaks(tl.StartLiveBytes, tl.Changes); peaks[tensor.Activations] != 16 {
		t.Errorf("replayed activation peak %d, want 16", peaks[tensor.Activations])
	}
}
