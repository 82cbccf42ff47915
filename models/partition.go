package models

import (
	"errors"
	"fmt"
	"math"
)

// Partition splits blocks with the given costs into k contiguous, non-empty
// stages so that the largest stage cost is as small as possible: the
// linear partition problem, solved exactly by dynamic programming over
// prefix sums (Skiena, "The Algorithm Design Manual", §8.5), O(k·n²) for n
// blocks. Among the partitions that reach the optimal largest cost it
// returns the one with the smallest sum of squared stage costs, the most
// even of them, found by a second exact dynamic program; remaining ties go
// to the earliest split points.
//
// It returns the stage boundaries: stage s holds blocks [bounds[s],
// bounds[s+1]), with bounds[0] = 0 and bounds[k] = n.
func Partition(costs []float64, k int) ([]int, error) {
	prefix := make([]float64, len(costs)+1)
	for i, c := range costs {
		if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("partition: block %d has cost %v; costs must be finite and non-negative", i, c)
		}
		prefix[i+1] = prefix[i] + c
	}
	sum := func(lo, hi int) float64 { return prefix[hi] - prefix[lo] }
	return PartitionBy(len(costs), k, func(_, lo, hi int) float64 { return sum(lo, hi) }, sum)
}

// ErrNoPartition is PartitionBy's error when every split of the blocks
// has a stage of infinite cost: none meets the stages' limits.
var ErrNoPartition = errors.New("partition: no split keeps every stage within its limit")

// PartitionBy is Partition with the cost of a stage given by a function
// that may depend on the stage: cost(s, lo, hi) is what stage s costs
// when it holds blocks [lo, hi), +Inf where it must not hold them (a
// limit it would break). It minimises the largest stage cost over the
// splits of n blocks into k contiguous, non-empty stages by the same
// dynamic program as Partition — which stays exact, since the recurrence
// best[s][j] = min over i of max(best[s−1][i], cost(s−1, i, j)) knows the
// stage it prices — and among the splits that reach the optimum returns
// the one whose stages' even(lo, hi) have the smallest sum of squares
// (even is the cost to spread: Partition's own, a memory balance's
// compute), ties going to the earliest split points. O(k·n²) calls of
// cost. It returns ErrNoPartition when the optimum is infinite.
func PartitionBy(n, k int, cost func(stage, lo, hi int) float64, even func(lo, hi int) float64) ([]int, error) {
	switch {
	case k < 1:
		return nil, fmt.Errorf("partition into %d stages: need at least 1", k)
	case n == 0:
		return nil, errors.New("partition: no blocks")
	case k > n:
		return nil, fmt.Errorf("partition into %d stages: the model has only %d blocks, so at most %d stages", k, n, n)
	}
	// best[s][j]: the smallest largest cost of splitting blocks [0, j)
	// into s stages.
	best := table(k+1, n+1, math.Inf(1))
	best[0][0] = 0
	for s := 1; s <= k; s++ {
		for j := s; j <= n-(k-s); j++ {
			for i := s - 1; i < j; i++ {
				if v := math.Max(best[s-1][i], cost(s-1, i, j)); v < best[s][j] {
					best[s][j] = v
				}
			}
		}
	}
	limit := best[k][n]
	if math.IsInf(limit, 1) {
		return nil, ErrNoPartition
	}

	// Second pass: minimise the sum of squares of even over splits whose
	// stages cost no more than limit; from[s][j] records the start of
	// the last stage.
	sq := table(k+1, n+1, math.Inf(1))
	from := make([][]int, k+1)
	for s := range from {
		from[s] = make([]int, n+1)
	}
	sq[0][0] = 0
	for s := 1; s <= k; s++ {
		for j := s; j <= n-(k-s); j++ {
			for i := s - 1; i < j; i++ {
				if cost(s-1, i, j) > limit || math.IsInf(sq[s-1][i], 1) {
					continue
				}
				e := even(i, j)
				if v := sq[s-1][i] + e*e; v < sq[s][j] {
					sq[s][j], from[s][j] = v, i
				}
			}
		}
	}
	bounds := make([]int, k+1)
	bounds[k] = n
	for s := k; s > 0; s-- {
		bounds[s-1] = from[s][bounds[s]]
	}
	return bounds, nil
}

func table(rows, cols int, fill float64) [][]float64 {
	t := make([][]float64, rows)
	for i := range t {
		t[i] = make([]float64, cols)
		for j := range t[i] {
			t[i][j] = fill
		}
	}
	return t
}
