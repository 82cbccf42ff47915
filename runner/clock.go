package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/pipecast/pipecast/runner/comm"
	"github.com/pipecast/pipecast/tensor"
)

// clockRounds is how many ping-pongs estimate one rank's clock offset;
// the one with the shortest round trip decides, since it leaves the
// least room for the reply's moment to be misplaced.
const clockRounds = 16

// clockTag is the control-message tag of the clock ping-pongs.
const clockTag = 0x636c6b // "clk"

// clockOffsets estimates, on rank 0, every rank's tensor clock minus rank
// 0's in nanoseconds (Cristian's algorithm: rank 0 sends, rank r answers
// with its clock, and the answer is taken to have been read halfway
// through the round trip); other ranks return nil. Every rank of g calls
// it. The error of an offset is at most half the shortest round trip.
func clockOffsets(ctx context.Context, g comm.Group) ([]int64, error) {
	n, me := g.Size(), g.Rank()
	if me != 0 {
		for range clockRounds {
			if _, err := g.RecvBytes(ctx, 0, clockTag); err != nil {
				return nil, fmt.Errorf("clock ping-pong: %w", err)
			}
			if err := g.SendBytes(ctx, 0, clockTag, binary.LittleEndian.AppendUint64(nil, uint64(tensor.Nanotime()))); err != nil {
				return nil, fmt.Errorf("clock ping-pong: %w", err)
			}
		}
		return nil, nil
	}
	offsets := make([]int64, n)
	for r := 1; r < n; r++ {
		best := int64(math.MaxInt64)
		for range clockRounds {
			t0 := tensor.Nanotime()
			if err := g.SendBytes(ctx, r, clockTag, nil); err != nil {
				return nil, fmt.Errorf("clock ping-pong with rank %d: %w", r, err)
			}
			b, err := g.RecvBytes(ctx, r, clockTag)
			t1 := tensor.Nanotime()
			if err != nil {
				return nil, fmt.Errorf("clock ping-pong with rank %d: %w", r, err)
			}
			if len(b) != 8 {
				return nil, errors.New("clock ping-pong: malformed reply")
			}
			if rtt := t1 - t0; rtt < best {
				best = rtt
				offsets[r] = int64(binary.LittleEndian.Uint64(b)) - (t0 + rtt/2)
			}
		}
	}
	return offsets, nil
}

// meanOffsets returns the mean of the offsets estimated before and after
// a run, and the largest amount any of them moved between the two: the
// residual a record states.
func meanOffsets(before, after []int64) (mean []int64, residual int64) {
	mean = make([]int64, len(before))
	for r := range before {
		mean[r] = before[r] + (after[r]-before[r])/2
		residual = max(residual, abs64(after[r]-before[r]))
	}
	return mean, residual
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
