package schedule

import (
	"math"
	"reflect"
	"slices"
	"testing"
)

// TestInterleavedOneChunkIsOneF1B checks that interleaved with v = 1 is
// 1F1B's program op for op.
func TestInterleavedOneChunkIsOneF1B(t *testing.T) {
	for K := 1; K <= 8; K++ {
		for M := 1; M <= 8; M++ {
			in, err := Build(Options{Name: Interleaved, Devices: K, Micro: M, Virtual: 1})
			if err != nil {
				t.Fatal(err)
			}
			ref, err := Build(Options{Name: OneF1B, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			if in.Stages != ref.Stages || !slices.Equal(in.Owners, ref.Owners) || !slices.Equal(in.MaxLive, ref.MaxLive) {
				t.Errorf("K=%d M=%d: %d stages, owners %v, MaxLive %v; 1f1b has %d, %v, %v",
					K, M, in.Stages, in.Owners, in.MaxLive, ref.Stages, ref.Owners, ref.MaxLive)
			}
			for k := range ref.Devices {
				if !reflect.DeepEqual(in.Devices[k], ref.Devices[k]) {
					t.Errorf("K=%d M=%d device %d:\ngot  %v\nwant %v", K, M, k, fmtOps(in.Devices[k]), fmtOps(ref.Devices[k]))
				}
			}
		}
	}
}

func TestInterleavedOwners(t *testing.T) {
	p, err := Build(Options{Name: Interleaved, Devices: 3, Micro: 3, Virtual: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 0, 1, 2}; p.Stages != 6 || !slices.Equal(p.Owners, want) {
		t.Fatalf("%d stages owned by %v, want 6 owned by %v", p.Stages, p.Owners, want)
	}
	for k, ops := range p.Devices {
		if got, want := p.StagesOf(k), []int{k, k + 3}; !slices.Equal(got, want) {
			t.Errorf("device %d owns %v, want %v", k, got, want)
		}
		if last := ops[len(ops)-1]; !reflect.DeepEqual(last, update(k)) {
			t.Errorf("device %d ends with %v, want %v", k, last, update(k))
		}
	}
}

// TestInterleavedOneDevice checks the in-place hand-over between the
// chunks of a single device, written out: no transfers at all.
func TestInterleavedOneDevice(t *testing.T) {
	p, err := Build(Options{Name: Interleaved, Devices: 1, Micro: 2, Virtual: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Warm-up min(6, 0 + 2·1) = 2; the backwards run chunks 2, 1, 0.
	want := []Op{fw(0, 0), fw(1, 0),
		fw(2, 0), loss(2, 0), bw(2, 0),
		fw(0, 1), bw(1, 0),
		fw(1, 1), bw(0, 0),
		fw(2, 1), loss(2, 1), bw(2, 1),
		bw(1, 1), bw(0, 1), update(0)}
	if !reflect.DeepEqual(p.Devices[0], want) {
		t.Errorf("got  %v\nwant %v", fmtOps(p.Devices[0]), fmtOps(want))
	}
	if !slices.Equal(p.MaxLive, []int{3}) {
		t.Errorf("MaxLive %v, want [3]", p.MaxLive)
	}
}

// TestInterleavedMaxLive checks the peak the doc comment states for K | M:
// the warm-up's pairs and one more, at most M·v.
func TestInterleavedMaxLive(t *testing.T) {
	for K := 1; K <= 8; K++ {
		for v := 2; v <= 4; v++ {
			for M := K; M <= 3*K; M += K {
				p, err := Build(Options{Name: Interleaved, Devices: K, Micro: M, Virtual: v})
				if err != nil {
					t.Fatal(err)
				}
				for k, got := range p.MaxLive {
					if want := min(M*v, 2*(K-k-1)+(v-1)*K+1); got != want {
						t.Errorf("K=%d M=%d v=%d device %d: MaxLive %d, want %d", K, M, v, k, got, want)
					}
				}
			}
		}
	}
}

// chunkCost is the cost model of a model whose forward takes 1 and
// backward 2, cut into v equal chunks per device: a chunk's forward takes
// 1/v and its backward 2/v; loss, update and transfers are free.
func chunkCost(v int) func(int, Op) float64 {
	return func(_ int, o Op) float64 {
		switch o.Kind {
		case Forward:
			return 1 / float64(v)
		case Backward:
			return 2 / float64(v)
		}
		return 0
	}
}

// TestInterleavedBubble checks Narayanan et al.'s bubble of the
// interleaved schedule, (K−1)/(vM+K−1) with K | M, and 1F1B's
// (K−1)/(M+K−1) under the same costs as a cross-check.
func TestInterleavedBubble(t *testing.T) {
	const tol = 1e-6 // chunk costs of 1/3 are not exact in binary
	for _, K := range []int{2, 3, 4, 8} {
		for M := K; M <= 4*K; M += K {
			ref, err := Build(Options{Name: OneF1B, Devices: K, Micro: M})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := Simulate(ref, chunkCost(1))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tl.BubbleFraction(), float64(K-1)/float64(M+K-1); math.Abs(got-want) > tol {
				t.Errorf("1f1b K=%d M=%d: bubble %v, want %v", K, M, got, want)
			}
			for v := 1; v <= 4; v++ {
				p, err := Build(Options{Name: Interleaved, Devices: K, Micro: M, Virtual: v})
				if err != nil {
					t.Fatal(err)
				}
				tl, err := Simulate(p, chunkCost(v))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := tl.BubbleFraction(), float64(K-1)/float64(v*M+K-1); math.Abs(got-want) > tol {
					t.Errorf("interleaved K=%d M=%d v=%d: bubble %v, want %v", K, M, v, got, want)
				}
			}
		}
	}
}
