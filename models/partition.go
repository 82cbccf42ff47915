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
	n := len(costs)
	switch {
	case k < 1:
		return nil, fmt.Errorf("partition into %d stages: need at least 1", k)
	case n == 0:
		return nil, errors.New("partition: no blocks")
	case k > n:
		return nil, fmt.Errorf("partition into %d stages: the model has only %d blocks, so at most %d stages", k, n, n)
	}
	prefix := make([]float64, n+1)
	for i, c := range costs {
		if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("partition: block %d has cost %v; costs must be finite and non-negative", i, c)
		}
		prefix[i+1] = prefix[i] + c
	}
	cost := func(i, j int) float64 { return prefix[j] - prefix[i] }

	// best[s][j]: the smallest largest cost of splitting blocks [0, j)
	// into s stages.
	best := table(k+1, n+1, math.Inf(1))
	best[0][0] = 0
	for s := 1; s <= k; s++ {
		for j := s; j <= n-(k-s); j++ {
			for i := s - 1; i < j; i++ {
				if v := math.Max(best[s-1][i], cost(i, j)); v < best[s][j] {
					best[s][j] = v
				}
			}
		}
	}
	limit := best[k][n]

	// Second pass: minimise the sum of squares over stages no costlier
	// than limit; from[s][j] records the start of the last stage.
	sq := table(k+1, n+1, math.Inf(1))
	from := make([][]int, k+1)
	for s := range from {
		from[s] = make([]int, n+1)
	}
	sq[0][0] = 0
	for s := 1; s <= k; s++ {
		for j := s; j <= n-(k-s); j++ {
			for i := s - 1; i < j; i++ {
				c := cost(i, j)
				if c > limit || math.IsInf(sq[s-1][i], 1) {
					continue
				}
				if v := sq[s-1][i] + c*c; v < sq[s][j] {
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
