package config

import (
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/models"
)

// Balance is the block cost a partition evens out across stages.
type Balance string

// The costs a partition can balance.
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
)

// Balances lists every balance, in the order help texts name them.
func Balances() []Balance { return []Balance{BalanceParams, BalanceMACs, BalanceTime} }

// ParseBalance returns the balance named s.
func ParseBalance(s string) (Balance, error) {
	if b := Balance(s); slices.Contains(Balances(), b) {
		return b, nil
	}
	return "", fmt.Errorf("balance %q: want params, macs or time", s)
}

// BlockTimes returns each block's time at the configuration's
// micro-batch size, for BalanceTime: the runner measures them, the
// predictor prices them from fitted costs.
type BlockTimes func() ([]float64, error)

// BlockCosts returns the cost b gives each of the blocks: their
// parameters, their MACs, or times's answer for BalanceTime.
func (b Balance) BlockCosts(blocks []*models.Block, times BlockTimes) ([]float64, error) {
	costs := make([]float64, len(blocks))
	switch b {
	case BalanceParams:
		for i, blk := range blocks {
			costs[i] = float64(blk.Cost.Params)
		}
	case BalanceMACs:
		for i, blk := range blocks {
			costs[i] = float64(blk.Cost.MACs)
		}
	case BalanceTime:
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
	default:
		return nil, fmt.Errorf("balance %q: want params, macs or time", b)
	}
	return costs, nil
}

// Partition returns the stage bounds of c for model m over stages
// stages: stage s holds blocks [bounds[s], bounds[s+1]). They are
// c.Bounds when set (checked against the model), else models.Partition of
// the block costs c.Balance gives: by time, c.BalanceTimes when set, else
// times's answer; a single stage by time needs no times.
func (c Config) Partition(m *models.Model, stages int, times BlockTimes) ([]int, error) {
	n := len(m.Blocks)
	if b := c.Bounds; b != nil {
		if len(b) != stages+1 || b[0] != 0 || b[stages] != n || !slices.IsSorted(b) {
			return nil, fmt.Errorf("partition %v: want %d stage bounds from 0 to %d, ascending", b, stages+1, n)
		}
		return slices.Clone(b), nil
	}
	if c.Balance == BalanceTime && stages == 1 {
		return []int{0, n}, nil
	}
	if c.Balance == BalanceTime && c.BalanceTimes != nil {
		given := c.BalanceTimes
		times = func() ([]float64, error) { return slices.Clone(given), nil }
	}
	costs, err := c.Balance.BlockCosts(m.Blocks, times)
	if err != nil {
		return nil, err
	}
	return models.Partition(costs, stages)
}
