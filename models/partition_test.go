package models

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// bruteForce tries every placement of k−1 split points among n−1 gaps and
// returns the smallest largest stage cost and, among those partitions, the
// smallest sum of squares.
func bruteForce(costs []float64, k int) (largest, sumSq float64) {
	n := len(costs)
	largest, sumSq = math.Inf(1), math.Inf(1)
	bounds := make([]int, k+1)
	bounds[k] = n
	var rec func(s, start int)
	rec = func(s, start int) {
		if s == k {
			mx, sq := 0.0, 0.0
			for t := 0; t < k; t++ {
				c := 0.0
				for _, v := range costs[bounds[t]:bounds[t+1]] {
					c += v
				}
				mx = math.Max(mx, c)
				sq += c * c
			}
			if mx < largest-1e-9 || (mx <= largest+1e-9 && sq < sumSq) {
				largest, sumSq = mx, sq
			}
			return
		}
		for b := start; b <= n-(k-s); b++ {
			bounds[s] = b
			rec(s+1, b+1)
		}
	}
	rec(1, 1)
	return largest, sumSq
}

func stageCosts(costs []float64, bounds []int) []float64 {
	out := make([]float64, len(bounds)-1)
	for s := range out {
		for _, v := range costs[bounds[s]:bounds[s+1]] {
			out[s] += v
		}
	}
	return out
}

func TestPartitionAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 400; trial++ {
		n := 1 + rng.IntN(11)
		k := 1 + rng.IntN(n)
		costs := make([]float64, n)
		for i := range costs {
			switch rng.IntN(4) {
			case 0:
				costs[i] = float64(rng.IntN(4)) // ties and zeros
			default:
				costs[i] = rng.Float64() * 100
			}
		}
		bounds, err := Partition(costs, k)
		if err != nil {
			t.Fatalf("costs %v, k %d: %v", costs, k, err)
		}
		if len(bounds) != k+1 || bounds[0] != 0 || bounds[k] != n {
			t.Fatalf("costs %v, k %d: bounds %v", costs, k, bounds)
		}
		for s := 0; s < k; s++ {
			if bounds[s] >= bounds[s+1] {
				t.Fatalf("costs %v, k %d: empty stage %d in %v", costs, k, s, bounds)
			}
		}
		got := stageCosts(costs, bounds)
		mx, sq := 0.0, 0.0
		for _, c := range got {
			mx = math.Max(mx, c)
			sq += c * c
		}
		wantMax, wantSq := bruteForce(costs, k)
		if math.Abs(mx-wantMax) > 1e-9*math.Max(1, wantMax) {
			t.Errorf("costs %v, k %d: largest stage %v, want %v (bounds %v)", costs, k, mx, wantMax, bounds)
		}
		if math.Abs(sq-wantSq) > 1e-9*math.Max(1, wantSq) {
			t.Errorf("costs %v, k %d: sum of squares %v, want %v (bounds %v)", costs, k, sq, wantSq, bounds)
		}
	}
}

func TestPartitionErrors(t *testing.T) {
	tests := []struct {
		name  string
		costs []float64
		k     int
	}{
		{"more stages than blocks", []float64{1, 2, 3}, 4},
		{"zero stages", []float64{1}, 0},
		{"no blocks", nil, 1},
		{"negative cost", []float64{1, -1}, 1},
		{"NaN cost", []float64{math.NaN()}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if b, err := Partition(tc.costs, tc.k); err == nil {
				t.Errorf("got bounds %v and no error", b)
			}
		})
	}
}

func TestPartitionExamples(t *testing.T) {
	tests := []struct {
		name  string
		costs []float64
		k     int
		want  []int
	}{
		{"one stage", []float64{3, 1, 4}, 1, []int{0, 3}},
		{"one block a stage", []float64{3, 1, 4}, 3, []int{0, 1, 2, 3}},
		{"heavy tail", []float64{1, 1, 1, 1, 8}, 2, []int{0, 4, 5}},
		{"even split", []float64{2, 2, 2, 2}, 2, []int{0, 2, 4}},
		// The largest stage is 5 either way; {1,2,2 | 5} has squares 25+25,
		// {1,2 | 2,5} has 9+49.
		{"most even among optimal", []float64{1, 2, 2, 5}, 2, []int{0, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Partition(tc.costs, tc.k)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// TestPartitionByAgainstBruteForce checks the stage-dependent partition
// against every split: each stage s weighs its blocks' costs by a
// factor of its own (as a memory balance weighs activations by the
// micro-batches a stage keeps) and some stages cannot hold more than a
// limit (+Inf beyond it).
func TestPartitionByAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(9)
		k := 1 + rng.IntN(n)
		costs, weight, limit := make([]float64, n), make([]float64, k), make([]float64, k)
		for i := range costs {
			costs[i] = float64(rng.IntN(6))
		}
		for s := range weight {
			weight[s] = 1 + float64(rng.IntN(4))
			limit[s] = math.Inf(1)
			if rng.IntN(4) == 0 {
				limit[s] = float64(rng.IntN(12))
			}
		}
		sum := func(lo, hi int) float64 {
			c := 0.0
			for _, v := range costs[lo:hi] {
				c += v
			}
			return c
		}
		cost := func(s, lo, hi int) float64 {
			if c := weight[s] * sum(lo, hi); c <= limit[s] {
				return c
			}
			return math.Inf(1)
		}
		// Every split by brute force: the smallest largest cost, and
		// the smallest sum of squares of sum among those reaching it.
		wantMax, wantSq := math.Inf(1), math.Inf(1)
		bounds := make([]int, k+1)
		bounds[k] = n
		var rec func(s, start int)
		rec = func(s, start int) {
			if s == k {
				mx, sq := 0.0, 0.0
				for st := 0; st < k; st++ {
					mx = math.Max(mx, cost(st, bounds[st], bounds[st+1]))
					e := sum(bounds[st], bounds[st+1])
					sq += e * e
				}
				if mx < wantMax || mx == wantMax && sq < wantSq {
					wantMax, wantSq = mx, sq
				}
				return
			}
			for b := start; b <= n-(k-s); b++ {
				bounds[s] = b
				rec(s+1, b+1)
			}
		}
		rec(1, 1)
		got, err := PartitionBy(n, k, cost, sum)
		if math.IsInf(wantMax, 1) {
			if !errors.Is(err, ErrNoPartition) {
				t.Errorf("costs %v weights %v limits %v: got %v, %v; want ErrNoPartition", costs, weight, limit, got, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("costs %v weights %v limits %v: %v", costs, weight, limit, err)
		}
		mx, sq := 0.0, 0.0
		for s := 0; s < k; s++ {
			if got[s] >= got[s+1] {
				t.Fatalf("empty stage %d in %v", s, got)
			}
			mx = math.Max(mx, cost(s, got[s], got[s+1]))
			e := sum(got[s], got[s+1])
			sq += e * e
		}
		if mx != wantMax || sq != wantSq {
			t.Errorf("costs %v weights %v limits %v: bounds %v give largest %v and squares %v, want %v and %v",
				costs, weight, limit, got, mx, sq, wantMax, wantSq)
		}
	}
}
