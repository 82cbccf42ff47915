package predictor

import (
	"slices"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// Holding is what one device holds of the model in a configuration: the
// stages its program gives it, their blocks and their parameters, and
// the replicas of other stages' weights it predicts with (coop). It says
// where a device's weight, gradient and optimizer memory come from: a
// device holds each of its parameters' values, gradients and optimizer
// slots once, a parameter that two of its blocks share (GPT-2's token
// embedding and LM head on one device, in one stage or in two: the
// V-shaped schedules put the first and last stages on device 0) once,
// and one that blocks on two devices share on both; a replica adds its
// stage's values alone.
type Holding struct {
	// Stages are the stages the device owns, ascending; Blocks the
	// indices of their blocks, ascending.
	Stages []int
	Blocks []int
	// Params are the trainable scalars of the device's blocks.
	Params int64
	// Replicas are the stages whose weights the device holds a copy of
	// without owning them, ascending: those its Predict ops run (coop's
	// prediction step). ReplicaBlocks are their blocks' indices and
	// ReplicaParams their trainable scalars.
	Replicas      []int
	ReplicaBlocks []int
	ReplicaParams int64
}

// holdings returns what each device of the job of prog holds of model
// cut at bounds: with R replicas, job device d holds what program device
// d mod K holds.
func holdings(model *models.Model, prog *schedule.Program, bounds []int) []Holding {
	k := len(prog.Devices)
	out := make([]Holding, prog.Replicas()*k)
	for d := range out {
		if d >= k {
			out[d] = out[d%k]
			continue
		}
		h := &out[d]
		h.Stages = prog.StagesOf(d)
		h.Blocks, h.Params = stageBlocks(model, bounds, h.Stages)
		for _, o := range prog.Devices[d] {
			if o.Kind == schedule.Predict && prog.Owners[o.Stage] != d && !slices.Contains(h.Replicas, o.Stage) {
				h.Replicas = append(h.Replicas, o.Stage)
			}
		}
		slices.Sort(h.Replicas)
		h.ReplicaBlocks, h.ReplicaParams = stageBlocks(model, bounds, h.Replicas)
	}
	return out
}

// stageBlocks returns the blocks of stages (ascending) of model cut at
// bounds and their trainable scalars, a parameter two of them share
// counted once.
func stageBlocks(model *models.Model, bounds []int, stages []int) ([]int, int64) {
	var blocks []int
	var children []models.Child
	for _, s := range stages {
		for b := bounds[s]; b < bounds[s+1]; b++ {
			blocks = append(blocks, b)
			children = append(children, models.Child{Layer: model.Blocks[b].Layer})
		}
	}
	return blocks, int64(models.ParamCount(models.NewSequential(children...)))
}
