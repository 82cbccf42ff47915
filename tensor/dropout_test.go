package tensor

import (
	"math"
	"testing"
)

// dropoutMask returns the mask of elements [0, n) of one sample.
func dropoutMask(key DropoutKey, sample, n int, p float32) []bool {
	m := make([]bool, n)
	for e := range m {
		m[e] = DropoutKeep(key, sample, e, p)
	}
	return m
}

func TestDropoutKeepDependsOnEveryCounter(t *testing.T) {
	const n, p = 4096, 0.5
	base := DropoutKey{Seed: 1, Step: 2, Layer: 3}
	const sample = 4
	want := dropoutMask(base, sample, n, p)
	tests := []struct {
		name   string
		key    DropoutKey
		sample int
		shift  int // compare element e with element e+shift of the base
	}{
		{"seed", DropoutKey{Seed: 2, Step: 2, Layer: 3}, sample, 0},
		{"step", DropoutKey{Seed: 1, Step: 3, Layer: 3}, sample, 0},
		{"layer", DropoutKey{Seed: 1, Step: 2, Layer: 4}, sample, 0},
		{"sample", base, sample + 1, 0},
		{"element", base, sample, 1},
		// Counters are hashed in order, not summed: swapping two must
		// still change the mask.
		{"step and layer swapped", DropoutKey{Seed: 1, Step: 3, Layer: 2}, sample, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := dropoutMask(tc.key, tc.sample, n+tc.shift, p)[tc.shift:]
			differ := 0
			for e := range want {
				if got[e] != want[e] {
					differ++
				}
			}
			// Independent masks of probability 1/2 differ in half the
			// elements, give or take sqrt(n)/2 = 32.
			if differ < n/2-4*32 || differ > n/2+4*32 {
				t.Errorf("%d of %d elements differ, want about %d", differ, n, n/2)
			}
		})
	}
}

func TestDropoutKeepIgnoresKeySample(t *testing.T) {
	a := DropoutKey{Seed: 5, Step: 6, Layer: 7, Sample: 0}
	b := a
	b.Sample = 99
	for e := range 1000 {
		if DropoutKeep(a, 3, e, 0.5) != DropoutKeep(b, 3, e, 0.5) {
			t.Fatalf("element %d: key.Sample changed the mask", e)
		}
	}
}

func TestDropoutKeepHashedAgrees(t *testing.T) {
	key := DropoutKey{Seed: 11, Step: 12, Layer: 13}
	for _, p := range []float32{0, 0.1, 0.5, 0.9, 1} {
		h, th := DropoutSampleHash(key, 8), DropoutThreshold(p)
		for e := range 1000 {
			if got, want := DropoutKeepHashed(h, e, th), DropoutKeep(key, 8, e, p); got != want {
				t.Fatalf("p=%v, element %d: DropoutKeepHashed %v, DropoutKeep %v", p, e, got, want)
			}
		}
	}
}

func TestDropoutThreshold(t *testing.T) {
	tests := []struct {
		name string
		p    float32
		want uint32
	}{
		{"zero", 0, 0},
		{"negative", -0.5, 0},
		{"half", 0.5, 1 << 23},
		{"quarter", 0.25, 1 << 22},
		{"one", 1, 1 << 24},
		{"above one", 1.5, 1 << 24},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DropoutThreshold(tc.p); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestDropoutKeepEdges(t *testing.T) {
	tests := []struct {
		name     string
		p        float32
		wantKept int
	}{
		{"p=0 keeps all", 0, 10000},
		{"p=1 keeps none", 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kept := 0
			for s := range 10 {
				for _, k := range dropoutMask(DropoutKey{Seed: uint64(s)}, s, 1000, tc.p) {
					if k {
						kept++
					}
				}
			}
			if kept != tc.wantKept {
				t.Errorf("kept %d, want %d", kept, tc.wantKept)
			}
		})
	}
}

func TestDropoutKeepRate(t *testing.T) {
	const n = 100000
	for _, p := range []float32{0.1, 0.5, 0.9} {
		kept := 0
		for s := range 10 {
			for _, k := range dropoutMask(DropoutKey{Seed: 3, Step: 1}, s, n/10, p) {
				if k {
					kept++
				}
			}
		}
		q := 1 - float64(p)
		if sd := math.Sqrt(n * q * (1 - q)); math.Abs(float64(kept)-n*q) > 4*sd {
			t.Errorf("p=%v: kept %d of %d, want %.0f ± %.0f", p, kept, n, n*q, 4*sd)
		}
	}
}
