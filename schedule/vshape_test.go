package schedule

import (
	"math"
	"slices"
	"testing"
)

// TestVShapedOwners checks the V placement: 2K stages, device k holding
// k and 2K−1−k, so that device 0 holds the first and the last.
func TestVShapedOwners(t *testing.T) {
	for _, name := range []string{ZBV, DualPipeV} {
		for K := 1; K <= 5; K++ {
			p, err := Build(Options{Name: name, Devices: K, Micro: 2 * K})
			if err != nil {
				t.Fatal(err)
			}
			if p.Stages != 2*K || len(p.Devices) != K {
				t.Fatalf("%s K=%d: %d stages on %d devices, want %d on %d", name, K, p.Stages, len(p.Devices), 2*K, K)
			}
			for k := range K {
				if got, want := p.StagesOf(k), []int{k, 2*K - 1 - k}; !slices.Equal(got, want) {
					t.Errorf("%s K=%d: device %d holds %v, want %v", name, K, k, got, want)
				}
			}
		}
	}
}

// TestVShapedCheck runs the checker over both schedules at every K up to
// 6 and M up to 16, below the micro-batch counts their published forms
// need included (whose ops are left out).
func TestVShapedCheck(t *testing.T) {
	for _, name := range []string{ZBV, DualPipeV} {
		for K := 1; K <= 6; K++ {
			for M := 1; M <= 16; M++ {
				p, err := Build(Options{Name: name, Devices: K, Micro: M})
				if err != nil {
					t.Fatal(err)
				}
				if err := Check(p); err != nil {
					t.Errorf("%s K=%d M=%d: %v", name, K, M, err)
				}
			}
		}
	}
}

// vMakespans checks the schedule's step under unit costs (F = I = W = 1
// per stage, everything else free) from M = from(K) on: every device
// computes 6M, and the step takes 6M + K − 1, its only idle time the
// skew of the devices' first forwards.
func vMakespans(t *testing.T, name string, from func(K int) int) {
	for K := 1; K <= 6; K++ {
		for M := from(K); M <= from(K)+K+3; M++ {
			p, err := Build(Options{Name: name, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := Simulate(p, unitSplitCost)
			if err != nil {
				t.Fatal(err)
			}
			if want := float64(6*M + K - 1); math.Abs(tl.Makespan-want) > 1e-6 {
				t.Errorf("%s K=%d M=%d: makespan %v, want 6M+K−1 = %v", name, K, M, tl.Makespan, want)
			}
			for k := range K {
				if busy := tl.Busy[k]; math.Abs(busy-float64(6*M)) > 1e-6 {
					t.Errorf("%s K=%d M=%d device %d: busy %v, want 6M = %d", name, K, M, k, busy, 6*M)
				}
			}
			if got, want := tl.BubbleFraction(), float64(K-1)/float64(6*M+K-1); math.Abs(got-want) > 1e-6 {
				t.Errorf("%s K=%d M=%d: bubble %v, want (K−1)/(6M+K−1) = %v", name, K, M, got, want)
			}
		}
	}
}

// TestZBVZeroBubble: with T_F = T_B = T_W ZB-V has the paper's zero
// bubble from M = 2K−1 on: no idle time but the start-up skew (which
// zb-h2 has too), against 1F1B's (K−1)(F+B) on its K whole stages.
func TestZBVZeroBubble(t *testing.T) {
	vMakespans(t, ZBV, func(K int) int { return 2*K - 1 })
}

// TestDualPipeVBubble: run without overlap (a pair's F&B = F + B),
// DualPipeV's step under unit costs is ZB-V's from M = 2K on. DualPipe's
// published bubble, (PP/2 − 1)(F&B + B − 3W) on PP = 2K stages, is 2(K−1)
// at F&B = F + B = 3, B = 2, W = 1: it counts a pair as one slot that
// waits for both its inputs, where run in turn the forward starts as soon
// as its own input is there, so the measured K − 1 lies below it.
func TestDualPipeVBubble(t *testing.T) {
	vMakespans(t, DualPipeV, func(K int) int { return 2 * K })
	for K := 2; K <= 6; K++ {
		p, err := Build(Options{Name: DualPipeV, Devices: K, Micro: 2 * K})
		if err != nil {
			t.Fatal(err)
		}
		tl, err := Simulate(p, unitSplitCost)
		if err != nil {
			t.Fatal(err)
		}
		if published := float64((K - 1) * (3 + 2 - 3)); tl.Idle(0) > published+1e-6 {
			t.Errorf("K=%d: device 0 idles %v, more than the published bubble %v", K, tl.Idle(0), published)
		}
	}
}

// TestVShapedMemory checks the activation memory each promises, in pairs
// of its half-size stages: ZB-V at most 2·min(K, M), 1F1B's min(K, M)
// whole stages, reached from M = 2K−1; DualPipeV's device 0 PP + 1 =
// 2K + 1 from M = 2K, the published table's.
func TestVShapedMemory(t *testing.T) {
	for K := 1; K <= 6; K++ {
		for M := 1; M <= 3*K+2; M++ {
			p, err := Build(Options{Name: ZBV, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			peak := slices.Max(p.MaxLive)
			if peak > 2*min(K, M) || (M >= 2*K-1 && peak != 2*K) {
				t.Errorf("zb-v K=%d M=%d: MaxLive %v, want at most 2·min(K, M) = %d, and 2K from M = 2K−1", K, M, p.MaxLive, 2*min(K, M))
			}
			for k, ops := range p.Devices {
				if got := peakLive(ops); got != p.MaxLive[k] {
					t.Errorf("zb-v K=%d M=%d device %d: %d pairs live, MaxLive %d", K, M, k, got, p.MaxLive[k])
				}
			}
			if M < 2*K {
				continue
			}
			d, err := Build(Options{Name: DualPipeV, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			if want := 2*K + 1; d.MaxLive[0] != want && K > 1 {
				t.Errorf("dualpipev K=%d M=%d: device 0 holds %d pairs, want PP+1 = %d", K, M, d.MaxLive[0], want)
			}
		}
	}
}
