package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/schedule"
)

// A partition given whole is written as its stages' block counts, in
// stage order: "3,4,4,3" puts blocks 1–3 on the first stage, 4–7 on the
// second, and so on. Configurations hold it as stage bounds (Bounds);
// these convert between the two.

// ParsePartition parses a partition written as block counts per stage
// ("3,4,4,3"): each a whole number of at least 1.
func ParsePartition(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty: want the blocks of each stage, such as 3,4,4,3")
	}
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a count of blocks: want the blocks of each stage, such as 3,4,4,3", strings.TrimSpace(f))
		}
		sizes = append(sizes, n)
	}
	if err := checkSizes(sizes); err != nil {
		return nil, err
	}
	return sizes, nil
}

// checkSizes checks that every stage of a partition holds a block.
func checkSizes(sizes []int) error {
	if len(sizes) == 0 {
		return errors.New("no stages")
	}
	for _, n := range sizes {
		if n < 1 {
			return fmt.Errorf("a stage of %d blocks: every stage needs at least 1", n)
		}
	}
	return nil
}

// FormatPartition writes block counts per stage as ParsePartition reads
// them: "3,4,4,3".
func FormatPartition(sizes []int) string {
	parts := make([]string, len(sizes))
	for i, n := range sizes {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// BoundsOf returns the stage bounds of a partition given as block counts
// per stage: [0, 3, 7, 11, 14] for 3,4,4,3.
func BoundsOf(sizes []int) []int {
	bounds := make([]int, len(sizes)+1)
	for i, n := range sizes {
		bounds[i+1] = bounds[i] + n
	}
	return bounds
}

// SizesOf returns the block counts per stage of stage bounds, BoundsOf's
// inverse (nil for none).
func SizesOf(bounds []int) []int {
	if len(bounds) < 2 {
		return nil
	}
	sizes := make([]int, len(bounds)-1)
	for i := range sizes {
		sizes[i] = bounds[i+1] - bounds[i]
	}
	return sizes
}

// checkBounds checks stage bounds against stages stages of n blocks: as
// many as the stages, from 0 to n, every stage holding a block.
func checkBounds(b []int, stages, n int) error {
	if len(b) != stages+1 || b[0] != 0 || b[len(b)-1] != n || !slices.IsSorted(b) {
		return fmt.Errorf("want %d stage bounds from 0 to %d, ascending", stages+1, n)
	}
	return checkSizes(SizesOf(b))
}

// checkPartition checks c's Bounds, where set, against its stages and
// the model's n blocks (RulePartition), naming the partition as block
// counts per stage; a given balance needs them.
func checkPartition(c Config, n int) error {
	b := c.Bounds
	if b == nil {
		if c.Balance == BalanceGiven {
			return invalid(RulePartition, "balance", c.Balance, "no partition given: give the blocks of each stage")
		}
		return nil
	}
	if len(b) < 2 || b[0] != 0 || !slices.IsSorted(b) {
		return invalid(RulePartition, "partition", fmt.Sprint(b), "stage bounds %v: want them ascending from 0", b)
	}
	sizes := SizesOf(b)
	value := FormatPartition(sizes)
	if err := checkSizes(sizes); err != nil {
		return invalid(RulePartition, "partition", value, "%v", err)
	}
	if k := c.Stages(); len(sizes) != k {
		return invalid(RulePartition, "partition", value, "%d stages, but %s cuts %s into %d", len(sizes), stagesOf(c), c.Model, k)
	}
	if b[len(b)-1] != n {
		return invalid(RulePartition, "partition", value, "%d blocks, but %s has %d", b[len(b)-1], c.Model, n)
	}
	return nil
}

// stagesOf says what decides c's stage count: "1f1b at K=4",
// "interleaved at K=4 with v=2 (K·v)", "zb-v at K=4 (2K)".
func stagesOf(c Config) string {
	s := c.Schedule.WithDefaults()
	switch rule := s.StageRule(); {
	case rule == "":
		return fmt.Sprintf("%s at K=%d", s.Name, s.Devices)
	case s.Name == schedule.Interleaved:
		return fmt.Sprintf("%s at K=%d with v=%d (%s)", s.Name, s.Devices, s.Virtual, rule)
	default:
		return fmt.Sprintf("%s at K=%d (%s)", s.Name, s.Devices, rule)
	}
}
