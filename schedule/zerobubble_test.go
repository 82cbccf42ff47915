package schedule

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

func bwI(k, j int) Op { return backwardInputOp(k, j) }
func bwW(k, j int) Op { return backwardWeightOp(k, j) }

// unitSplitCost is the zero-bubble paper's cost model: F = I = W = 1, and
// loss, update and transfers free.
func unitSplitCost(_ int, o Op) float64 {
	switch o.Kind {
	case Forward, BackwardInput, BackwardWeight:
		return 1
	}
	return 0
}

func TestZBH1Exact(t *testing.T) {
	p, err := Build(Options{Name: ZBH1, Devices: 3, Micro: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]Op{
		// Two warm-up forwards; W follows its I at once.
		0: {fw(0, 0), sendA(0, 0), fw(0, 1), sendA(0, 1),
			fw(0, 2), sendA(0, 2), recvG(1, 0), bwI(0, 0), bwW(0, 0),
			fw(0, 3), sendA(0, 3), recvG(1, 1), bwI(0, 1), bwW(0, 1),
			recvG(1, 2), bwI(0, 2), bwW(0, 2),
			recvG(1, 3), bwI(0, 3), bwW(0, 3), update(0)},
		// No warm-up; W runs two micro-batches late, the last two at the end.
		2: {recvA(1, 0), fw(2, 0), loss(2, 0), bwI(2, 0), sendG(2, 0),
			recvA(1, 1), fw(2, 1), loss(2, 1), bwI(2, 1), sendG(2, 1),
			recvA(1, 2), fw(2, 2), loss(2, 2), bwI(2, 2), sendG(2, 2), bwW(2, 0),
			recvA(1, 3), fw(2, 3), loss(2, 3), bwI(2, 3), sendG(2, 3), bwW(2, 1),
			bwW(2, 2), bwW(2, 3), update(2)},
	}
	for k, ops := range want {
		if !reflect.DeepEqual(p.Devices[k], ops) {
			t.Errorf("device %d:\ngot  %v\nwant %v", k, fmtOps(p.Devices[k]), fmtOps(ops))
		}
	}
	if !slices.Equal(p.MaxLive, []int{3, 3, 3}) {
		t.Errorf("MaxLive %v, want [3 3 3]", p.MaxLive)
	}
}

// TestZBH1Bubble checks ZB-H1's step under unit costs, 3M+K−1 for M ≥ K,
// against the paper's bubble: a third of 1F1B's when B = I + W.
func TestZBH1Bubble(t *testing.T) {
	for K := 1; K <= 8; K++ {
		for M := K; M <= 3*K; M++ {
			p, err := Build(Options{Name: ZBH1, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := Simulate(p, unitSplitCost)
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(3*M + K - 1); tl.Makespan != want {
				t.Errorf("K=%d M=%d: makespan %v, want %v", K, M, tl.Makespan, want)
			}
			if got, want := tl.BubbleFraction(), float64(K-1)/float64(3*M+K-1); math.Abs(got-want) > 1e-12 {
				t.Errorf("K=%d M=%d: bubble %v, want %v", K, M, got, want)
			}
		}
	}
}

// TestZBH1MemoryOfOneF1B checks that ZB-H1 keeps 1F1B's peak: no device
// holds more pairs than 1F1B's device 0, min(K, M), and some device holds
// that many.
func TestZBH1MemoryOfOneF1B(t *testing.T) {
	for K := 1; K <= 8; K++ {
		for M := 1; M <= 8; M++ {
			p, err := Build(Options{Name: ZBH1, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Build(Options{Name: OneF1B, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := slices.Max(p.MaxLive), slices.Max(ref.MaxLive); got != want || want != min(K, M) {
				t.Errorf("K=%d M=%d: MaxLive %v peaks at %d, 1f1b's %v at %d, want both min(K, M) = %d",
					K, M, p.MaxLive, got, ref.MaxLive, want, min(K, M))
			}
			for k, ops := range p.Devices {
				if peak := peakLive(ops); peak > p.MaxLive[k] {
					t.Errorf("K=%d M=%d device %d: %d pairs live, more than MaxLive %d", K, M, k, peak, p.MaxLive[k])
				}
			}
			if err := Check(p); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestZBH2Parallelogram checks ZB-H2 under unit costs: the step takes
// 3M+K−1 for M ≥ K; for M ≥ 2K−1 device k works without a gap from tick k
// to 3M+k and keeps 2K−1 pairs at most, below that M.
func TestZBH2Parallelogram(t *testing.T) {
	for K := 1; K <= 8; K++ {
		for M := K; M <= 2*K+4; M++ {
			p, err := Build(Options{Name: ZBH2, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := Simulate(p, unitSplitCost)
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(3*M + K - 1); tl.Makespan != want {
				t.Errorf("K=%d M=%d: makespan %v, want %v", K, M, tl.Makespan, want)
			}
			full := M >= 2*K-1
			for k, ops := range p.Devices {
				first := slices.IndexFunc(ops, func(o Op) bool { return o.Kind == Forward })
				last := len(ops) - 2 // the op before the free update
				start, end := tl.Start[k][first], tl.End[k][last]
				if full && (start != float64(k) || end != float64(3*M+k) || tl.Busy[k] != end-start) {
					t.Errorf("K=%d M=%d device %d: busy %v of [%v, %v], want all of [%d, %d]",
						K, M, k, tl.Busy[k], start, end, k, 3*M+k)
				}
				want := M
				if full {
					want = 2*K - 1
				}
				if p.MaxLive[k] != want {
					t.Errorf("K=%d M=%d device %d: MaxLive %d, want %d", K, M, k, p.MaxLive[k], want)
				}
			}
		}
	}
}
