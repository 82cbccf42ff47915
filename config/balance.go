package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pipecast/pipecast/models"
)

// Balance is how a partition splits the model's blocks into stages: the
// block cost it evens out across stages, the largest device's memory it
// minimises, or a split given whole.
type Balance string

// The balances a partition can take.
const (
	// BalanceParams balances trainable parameters: weight memory and
	// update time.
	BalanceParams Balance = "params"
	// BalanceMACs balances forward multiply-accumulates: compute time as
	// the model's annotations count it.
	BalanceMACs Balance = "macs"
	// BalanceTime balances each block's forward and backward time at the
	// micro-batch size, as torchgpipe's balance_by_time does: measured by
	// the runner, forecast by the predictor from fitted costs.
	BalanceTime Balance = "time"
	// BalanceSpeed is BalanceTime on devices that differ, as HPH
	// partitions: a stage's block times are multiplied by the slowdown
	// of the device that runs it (Config.Slowdown: its measured speed,
	// the straggler's factor), so that slower devices get less work. A
	// device holding several stages (interleaved, the V schedules) has
	// each priced on it; on devices alike it is BalanceTime.
	BalanceSpeed Balance = "speed"
	// BalanceMemory minimises the largest device's peak memory as
	// MemoryModel models it: what the first and last stages hold beyond
	// their layers (1F1B's first stage keeps K micro-batches in flight, a
	// transformer's first and last stages its embedding and LM head) and
	// every stage's weights, gradients and optimizer state; among the
	// splits that reach that peak, the one of most even multiply-
	// accumulates. Where a device holds more than one stage's memory
	// (interleaved, coop's replicas), it balances multiply-accumulates.
	BalanceMemory Balance = "memory"
	// BalanceGiven is a split given whole (Config.Bounds; profile's
	// --partition): nothing is balanced.
	BalanceGiven Balance = "given"
)

// Balances lists every balance, in the order help texts name them.
func Balances() []Balance {
	return []Balance{BalanceParams, BalanceMACs, BalanceTime, BalanceSpeed, BalanceMemory, BalanceGiven}
}

// BalanceNames lists the balances' names, in Balances' order.
func BalanceNames() []string {
	out := make([]string, 0, len(Balances()))
	for _, b := range Balances() {
		out = append(out, string(b))
	}
	return out
}

// balanceWant names the balances for an error message: "params, macs,
// time, speed, memory or given".
func balanceWant() string {
	n := BalanceNames()
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// ParseBalance returns the balance named s.
func ParseBalance(s string) (Balance, error) {
	if b := Balance(s); slices.Contains(Balances(), b) {
		return b, nil
	}
	return "", fmt.Errorf("balance %q: want %s", s, balanceWant())
}

// Timed reports whether b balances block times measured at the
// micro-batch size (time, speed): the runner measures them once per
// workload, the record keeps them, a forecast balances the same.
func (b Balance) Timed() bool { return b == BalanceTime || b == BalanceSpeed }

// BlockTimes returns each block's time at the configuration's
// micro-batch size, for BalanceTime and BalanceSpeed: the runner
// measures them, the predictor prices them from fitted costs.
type BlockTimes func() ([]float64, error)

// BlockCosts returns the cost b gives each of the blocks: their
// parameters, their MACs, or times's answer for a timed balance. The memory
// balance spreads MACs among its lightest splits, so its block costs are
// theirs; a given split has none.
func (b Balance) BlockCosts(blocks []*models.Block, times BlockTimes) ([]float64, error) {
	costs := make([]float64, len(blocks))
	switch b {
	case BalanceParams:
		for i, blk := range blocks {
			costs[i] = float64(blk.Cost.Params)
		}
	case BalanceMACs, BalanceMemory:
		for i, blk := range blocks {
			costs[i] = float64(blk.Cost.MACs)
		}
	case BalanceTime, BalanceSpeed:
		if times == nil {
			return nil, fmt.Errorf("balance %q: no block times to balance", b)
		}
		t, err := times()
		if err != nil {
			return nil, err
		}
		if len(t) != len(blocks) {
			return nil, fmt.Errorf("balance %q: %d block times for %d blocks", b, len(t), len(blocks))
		}
		costs = t
	case BalanceGiven:
		return nil, fmt.Errorf("balance %q: a given split has no block costs", b)
	default:
		return nil, fmt.Errorf("balance %q: want %s", b, balanceWant())
	}
	return costs, nil
}

// Partition returns the stage bounds of c for model m over stages
// stages: stage s holds blocks [bounds[s], bounds[s+1]). They are
// c.Bounds when set (checked against the model: every stage holds a
// block), else, by memory, the lightest split of c's MemoryModel, else
// models.Partition of the block costs c.Balance gives: by time,
// c.BalanceTimes when set, else times's answer; a single stage by time
// needs no times.
func (c Config) Partition(m *models.Model, stages int, times BlockTimes) ([]int, error) {
	n := len(m.Blocks)
	if b := c.Bounds; b != nil {
		if err := checkBounds(b, stages, n); err != nil {
			return nil, fmt.Errorf("partition %v: %w", b, err)
		}
		return slices.Clone(b), nil
	}
	switch {
	case c.Balance == BalanceGiven:
		return nil, fmt.Errorf("balance %q: no partition given", c.Balance)
	case c.Balance == BalanceMemory:
		return c.memoryPartition(m, stages)
	case c.Balance.Timed() && stages == 1:
		return []int{0, n}, nil
	case c.Balance.Timed() && c.BalanceTimes != nil:
		given := c.BalanceTimes
		times = func() ([]float64, error) { return slices.Clone(given), nil }
	}
	costs, err := c.Balance.BlockCosts(m.Blocks, times)
	if err != nil {
		return nil, err
	}
	if c.Balance == BalanceSpeed {
		return c.speedPartition(costs, stages)
	}
	return models.Partition(costs, stages)
}
