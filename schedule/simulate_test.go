package schedule

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// fbCost returns a cost model where a forward takes f, a backward b, a
// recompute r, and everything else nothing.
func fbCost(f, b, r float64) func(int, Op) float64 {
	return func(_ int, o Op) float64 {
		switch o.Kind {
		case Forward:
			return f
		case Backward:
			return b
		case Recompute:
			return r
		}
		return 0
	}
}

// closeTo reports whether a and b agree to round-off.
func closeTo(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// TestPipelineBubble checks the simulated step time and bubble fraction
// of gpipe and 1f1b against closed forms.
//
// With uniform stages, forward cost f and backward cost b (loss, update
// and transfers free) and no recompute, the critical path of gpipe is the
// first micro-batch's forward through K−1 stages, M forwards on the last,
// the last micro-batch's backward through K−1 stages and M backwards on
// the first: (M+K−1)(f+b). A device is busy M(f+b), so the bubble is
// (K−1)/(M+K−1) whatever the ratio of b to f. 1F1B reorders the work
// without shortening that path (Narayanan et al. 2021, §2.2), so it has
// the same step time.
//
// With every micro-batch but the last recomputed (cost r = f, b = 2f, f =
// 1, M ≥ 2), each stage's backward of micro-batch j < M−1 is R+B = 3 long
// and starts when the gradient arrives (the Recv comes before the
// Recompute), so the gradient of micro-batch j leaves device 0 at (M+K−1)
// + 2 + 3(M−1) + 3(K−1): the step is 4(M+K−1) − 1 long and every device
// is busy M + (M−1) + 2M = 4M − 1.
func TestPipelineBubble(t *testing.T) {
	for K := 1; K <= 8; K++ {
		for M := 1; M <= 8; M++ {
			for _, tt := range []struct {
				name     string
				o        Options
				f, b, r  float64
				makespan float64
				busy     float64
			}{
				{"gpipe never b=f", Options{Name: GPipe, Checkpoint: Never}, 1, 1, 0, float64(2 * (M + K - 1)), float64(2 * M)},
				{"gpipe never b=2f", Options{Name: GPipe, Checkpoint: Never}, 1, 2, 0, float64(3 * (M + K - 1)), float64(3 * M)},
				{"1f1b b=f", Options{Name: OneF1B}, 1, 1, 0, float64(2 * (M + K - 1)), float64(2 * M)},
				{"1f1b b=2f", Options{Name: OneF1B}, 1, 2, 0, float64(3 * (M + K - 1)), float64(3 * M)},
				{"gpipe except-last r=f b=2f", Options{Name: GPipe, Checkpoint: ExceptLast}, 1, 2, 1,
					float64(4*(M+K-1) - 1), float64(4*M - 1)},
			} {
				if tt.r > 0 && M < 2 {
					continue // nothing is recomputed with one micro-batch
				}
				o := tt.o
				o.Devices, o.Micro = K, M
				p, err := Build(o)
				if err != nil {
					t.Fatal(err)
				}
				tl, err := Simulate(p, fbCost(tt.f, tt.b, tt.r))
				if err != nil {
					t.Fatalf("%s K=%d M=%d: %v", tt.name, K, M, err)
				}
				if tl.Makespan != tt.makespan {
					t.Errorf("%s K=%d M=%d: makespan %v, want %v", tt.name, K, M, tl.Makespan, tt.makespan)
				}
				for k, busy := range tl.Busy {
					if busy != tt.busy {
						t.Errorf("%s K=%d M=%d: device %d busy %v, want %v", tt.name, K, M, k, busy, tt.busy)
					}
				}
				want := 1 - tt.busy/tt.makespan
				if tt.r == 0 {
					want = float64(K-1) / float64(M+K-1)
				}
				if got := tl.BubbleFraction(); !closeTo(got, want) {
					t.Errorf("%s K=%d M=%d: bubble %v, want %v", tt.name, K, M, got, want)
				}
			}
		}
	}
}

func TestSimulateCollective(t *testing.T) {
	p, err := Build(Options{Name: Coop, Devices: 3, Micro: 2, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The all-gather takes k+1 on device k: it starts at 0 on all three
	// and device k leaves it at k+1. Device k's two predicts take k+1
	// each, so the devices reach the all-to-all at 3, 6 and 9; it starts
	// at 9 on all three and device k leaves it after its own cost, 5−k.
	cost := func(k int, o Op) float64 {
		switch o.Kind {
		case AllGather:
			return float64(k + 1)
		case Predict:
			return float64(k + 1)
		case AllToAll:
			return float64(5 - k)
		}
		return 0
	}
	tl, err := Simulate(p, cost)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 3 {
		if tl.Start[k][0] != 0 || tl.End[k][0] != float64(k+1) {
			t.Errorf("device %d all-gather [%v, %v], want [0, %d]", k, tl.Start[k][0], tl.End[k][0], k+1)
		}
		a2a := 3 // all-gather, two predicts, all-to-all
		if want := float64(14 - k); tl.Start[k][a2a] != 9 || tl.End[k][a2a] != want {
			t.Errorf("device %d all-to-all [%v, %v], want [9, %v]", k, tl.Start[k][a2a], tl.End[k][a2a], want)
		}
		if want := 3*float64(k+1) + float64(5-k); tl.Busy[k] != want {
			t.Errorf("device %d busy %v, want %v", k, tl.Busy[k], want)
		}
	}
	if tl.Makespan != 14 || !closeTo(tl.Idle(0), 6) {
		t.Errorf("makespan %v, idle(0) %v; want 14, 6", tl.Makespan, tl.Idle(0))
	}
}

func TestSimulateRecvWaitsForSend(t *testing.T) {
	p, err := Build(Options{Name: GPipe, Devices: 2, Micro: 1, Checkpoint: Never})
	if err != nil {
		t.Fatal(err)
	}
	// The send of the activation takes 3 after a forward of 1, so device
	// 1's recv starts at 4 and, taking 2, ends at 6.
	cost := func(_ int, o Op) float64 {
		switch o.Kind {
		case Forward:
			return 1
		case Send:
			return 3
		case Recv:
			return 2
		}
		return 0
	}
	tl, err := Simulate(p, cost)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Start[1][0] != 4 || tl.End[1][0] != 6 || tl.Start[1][1] != 6 {
		t.Errorf("device 1 recv [%v, %v], forward from %v; want [4, 6], 6", tl.Start[1][0], tl.End[1][0], tl.Start[1][1])
	}
}

func TestSimulateErrors(t *testing.T) {
	p, err := Build(Options{Name: GPipe, Devices: 2, Micro: 2})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    *Program
		cost func(int, Op) float64
		want string
	}{
		{"nil program", nil, ChartCost, "empty program"},
		{"negative cost", p, func(int, Op) float64 { return -1 }, "device 0 op 0 (f0.0): cost -1, want a finite value ≥ 0"},
		{"NaN cost", p, func(int, Op) float64 { return math.NaN() }, "cost NaN"},
		{"infinite cost", p, func(int, Op) float64 { return math.Inf(1) }, "cost +Inf"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Simulate(tt.p, tt.cost)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSimulateCollectiveDeadlock(t *testing.T) {
	p, err := Build(Options{Name: Coop, Devices: 3, Micro: 1, Prefetch: 1})
	if err != nil {
		t.Fatal(err)
	}
	p.Devices[2] = p.Devices[2][1:] // device 2 skips the all-gather
	_, err = Simulate(p, ChartCost)
	for _, w := range []string{
		"collective 0: device 0 runs allgather but device 2 runs alltoall",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want one containing %q", err, w)
		}
	}
	p.Devices[2] = []Op{update(2)} // device 2 never reaches a collective
	_, err = Simulate(p, ChartCost)
	for _, w := range []string{
		"deadlock",
		"device 0 waits in op 0 (allgather [0 1]), which 2 of 3 devices reached",
		"device 1 waits in op 0 (allgather [0 1]), which 2 of 3 devices reached",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v, want one containing %q", err, w)
		}
	}
}

// referenceTimes computes the start and end of every op by the plain
// fixed point of the dependency rules: sweep over the devices, last to
// first, placing every op whose dependencies are placed, until nothing
// changes. It shares no code with Simulate.
func referenceTimes(p *Program, cost func(int, Op) float64) (start, end [][]float64, ok bool) {
	K := len(p.Devices)
	start, end = make([][]float64, K), make([][]float64, K)
	next := make([]int, K)
	sendEnd := map[string][]float64{}
	recvs := map[string]int{}
	key := func(from, to int, o Op) string { return fmt.Sprint(from, to, o.What, o.Stage, o.Micro) }
	for k := range K {
		start[k] = make([]float64, len(p.Devices[k]))
		end[k] = make([]float64, len(p.Devices[k]))
	}
	free := func(k int) float64 {
		if next[k] == 0 {
			return 0
		}
		return end[k][next[k]-1]
	}
	for changed := true; changed; {
		changed = false
		for k := K - 1; k >= 0; k-- {
			for next[k] < len(p.Devices[k]) {
				i, o := next[k], p.Devices[k][next[k]]
				s := free(k)
				c := cost(k, o)
				if o.Kind == Recv {
					ends := sendEnd[key(o.Peer, k, o)]
					if recvs[key(o.Peer, k, o)] >= len(ends) {
						break
					}
					s = max(s, ends[recvs[key(o.Peer, k, o)]])
					recvs[key(o.Peer, k, o)]++
				}
				if o.Kind == AllGather || o.Kind == AllToAll {
					// Place the collective when every device stands at it.
					all := true
					for q := range K {
						all = all && next[q] < len(p.Devices[q]) && p.Devices[q][next[q]].Kind == o.Kind
					}
					if !all {
						break
					}
					for q := range K {
						s = max(s, free(q))
					}
					// Each device leaves after its own cost.
					for q := range K {
						start[q][next[q]], end[q][next[q]] = s, s+cost(q, p.Devices[q][next[q]])
						next[q]++
					}
					changed = true
					continue
				}
				start[k][i], end[k][i] = s, s+c
				if o.Kind == Send {
					sendEnd[key(k, o.Peer, o)] = append(sendEnd[key(k, o.Peer, o)], s+c)
				}
				next[k]++
				changed = true
			}
		}
	}
	for k := range K {
		if next[k] < len(p.Devices[k]) {
			return nil, nil, false
		}
	}
	return start, end, true
}

// TestSimulateMatchesReference compares Simulate with the fixed-point
// reference on every program of the sweep under random costs.
func TestSimulateMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, o := range allOptions() {
		p, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		costs := map[string]float64{}
		cost := func(k int, op Op) float64 {
			key := fmt.Sprint(k, op)
			if _, ok := costs[key]; !ok {
				costs[key] = float64(rng.IntN(8)) / 4 // exact in binary, zeros included
			}
			return costs[key]
		}
		tl, err := Simulate(p, cost)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		start, end, ok := referenceTimes(p, cost)
		if !ok {
			t.Fatalf("%+v: reference deadlocks", o)
		}
		if !reflect.DeepEqual(tl.Start, start) || !reflect.DeepEqual(tl.End, end) {
			t.Fatalf("%+v: simulated\nstart %v\nend   %v\nreference\nstart %v\nend   %v", o, tl.Start, tl.End, start, end)
		}
		again, err := Simulate(p, cost)
		if err != nil || !reflect.DeepEqual(again, tl) {
			t.Fatalf("%+v: a second simulation differs (%v)", o, err)
		}
	}
}

// benchmarkSimulate simulates the program of o under unit costs.
func benchmarkSimulate(b *testing.B, o Options) {
	p, err := Build(o)
	if err != nil {
		b.Fatal(err)
	}
	ops := 0
	for _, d := range p.Devices {
		ops += len(d)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Simulate(p, ChartCost); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(ops), "ns/op-simulated")
}

func BenchmarkSimulateGPipe8x256(b *testing.B) {
	benchmarkSimulate(b, Options{Name: GPipe, Devices: 8, Micro: 256})
}

func BenchmarkSimulateOneF1B8x256(b *testing.B) {
	benchmarkSimulate(b, Options{Name: OneF1B, Devices: 8, Micro: 256})
}

func BenchmarkSimulateCoop8x256(b *testing.B) {
	benchmarkSimulate(b, Options{Name: Coop, Devices: 8, Micro: 256, Prefetch: 2})
}
