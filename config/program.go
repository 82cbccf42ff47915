package config

import (
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// Program returns the program of c's schedule for model m cut into
// stages at bounds (stage s holds blocks [bounds[s], bounds[s+1]), as
// Partition returns them): schedule.Build's, with an AllReduce for every
// set of stages that hold the uses of one of m's tied parameters
// (models.Model.Ties; schedule.Program.Tie), and checked
// (schedule.Check). The runner runs this program and the predictor
// simulates and replays it; each builds it here, so that they agree.
// Bounds are needed only for a model with ties: nil will do otherwise.
func (c Config) Program(m *models.Model, bounds []int) (*schedule.Program, error) {
	p, err := schedule.Build(c.Schedule)
	if err != nil {
		return nil, err
	}
	ties := m.Ties()
	if len(ties) > 0 && (len(bounds) != p.Stages+1 || bounds[0] != 0 || bounds[p.Stages] != len(m.Blocks) || !slices.IsSorted(bounds)) {
		return nil, fmt.Errorf("program of %s: stage bounds %v, want %d from 0 to %d, ascending, to place %s's tied parameters",
			c.Schedule.Name, bounds, p.Stages+1, len(m.Blocks), c.Model)
	}
	for _, t := range ties {
		stages, err := t.Stages(bounds)
		if err != nil {
			return nil, fmt.Errorf("program of %s: %w", c.Schedule.Name, err)
		}
		if err := p.Tie(stages); err != nil {
			return nil, fmt.Errorf("program of %s: %w", c.Schedule.Name, err)
		}
	}
	if err := schedule.Check(p); err != nil {
		return nil, fmt.Errorf("schedule %s: %w", c.Schedule.Name, err)
	}
	return p, nil
}
