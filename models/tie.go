package models

import (
	"fmt"
	"slices"
)

// Tie is a parameter that several blocks of a model use, as GPT-2's token
// embedding is also its LM head's weight (Hugging Face's
// tie_word_embeddings). Built as one layer tree (Build, Describe, a stage
// holding every use) the uses are one *Param under several state_dict
// names, whose gradient accumulates every use's contribution. Built stage
// by stage, as a pipeline builds them, the stages holding the uses each
// have a copy of their own; training equals the whole model's only when
// the copies' gradients are summed before every update (Megatron-LM's
// embedding group), which the schedule's AllReduce op does.
//
// A layer tree holding a tied parameter lists it once (Params, and so
// Materialize, StateDict and an optimizer's update), under the name of
// its first use; Ties finds the uses block by block.
type Tie struct {
	// Blocks[i] is the block of use i and Names[i] the parameter's
	// state_dict name there, in block order; a tie has at least two uses
	// in at least two blocks.
	Blocks []int
	Names  []string
}

// Ties returns the model's tied parameters: every *Param that the layers
// of two or more blocks hold, in the order of its first use. Ties are
// read from the blocks themselves, so a model declares one by giving both
// blocks the same *Param.
func (m *Model) Ties() []Tie {
	var order []*Param
	uses := map[*Param]*Tie{}
	blocks := map[*Param]map[int]bool{}
	for b, blk := range m.Blocks {
		for _, np := range Params(blk.Layer) {
			p := np.Param
			t, ok := uses[p]
			if !ok {
				t = &Tie{}
				uses[p] = t
				blocks[p] = map[int]bool{}
				order = append(order, p)
			}
			t.Blocks = append(t.Blocks, b)
			t.Names = append(t.Names, np.Name)
			blocks[p][b] = true
		}
	}
	var out []Tie
	for _, p := range order {
		if len(blocks[p]) >= 2 {
			out = append(out, *uses[p])
		}
	}
	return out
}

// Stages returns the stages that hold the tie's uses, in increasing
// order, when stage s holds blocks [bounds[s], bounds[s+1]).
func (t Tie) Stages(bounds []int) ([]int, error) {
	var out []int
	for _, b := range t.Blocks {
		s, err := StageOf(bounds, b)
		if err != nil {
			return nil, fmt.Errorf("tie %v: %w", t.Names, err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// StageOf returns the stage that holds block b when stage s holds blocks
// [bounds[s], bounds[s+1]).
func StageOf(bounds []int, b int) (int, error) {
	for s := 0; s+1 < len(bounds); s++ {
		if bounds[s] <= b && b < bounds[s+1] {
			return s, nil
		}
	}
	return 0, fmt.Errorf("block %d in no stage of bounds %v", b, bounds)
}
