package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/predictor"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/tensor"
)

// planDeviceTable has a row per device of each of rows, in their order:
// the blocks the device holds (named from model, the planned one), their
// parameters and the device's peak bytes in each memory category and in
// all at once. With configs, each row starts with its configuration's
// schedule, options, M and rank, for a table of every configuration;
// without, the table is of one configuration, which title names.
func planDeviceTable(rows []predictor.PlanRow, model *models.Model, title string, configs bool) *reports.Table {
	t := &reports.Table{Title: title}
	// A plan of a job's devices (plan --job-devices) shows each
	// configuration's split into replicas.
	replicas := configs && slices.ContainsFunc(rows, func(r predictor.PlanRow) bool { return r.Config.Schedule.Replicas > 1 })
	if configs {
		t.Columns = append(t.Columns,
			reports.Column{Key: "schedule", Header: "schedule"},
			reports.Column{Key: "options", Header: "options"},
			reports.Column{Key: "microbatches", Header: "M", Align: reports.AlignRight},
			reports.Column{Key: "rank", Header: "rank", Align: reports.AlignRight})
	}
	if replicas {
		t.Columns = slices.Insert(t.Columns, 1,
			reports.Column{Key: "replicas", Header: "R", Align: reports.AlignRight},
			reports.Column{Key: "devices", Header: "K", Align: reports.AlignRight})
	}
	t.Columns = append(t.Columns,
		reports.Column{Key: "device", Header: "device", Align: reports.AlignRight},
		reports.Column{Key: "blocks", Header: "blocks", Fold: 2},
		reports.Column{Key: "params", Header: "params", Align: reports.AlignRight, Fold: 3},
		reports.Column{Key: "replica_params", Header: "replica params", Show: reports.Machines})
	for c := range tensor.NumCategories {
		col := reports.Column{Key: "peak_" + c.String() + "_bytes", Header: c.String(), Align: reports.AlignRight}
		switch c {
		case tensor.Boundary, tensor.Comm, tensor.Workspace:
			col.Fold = 4 + int(c-tensor.Boundary) // the smallest, as a rule, fold first
		}
		t.Columns = append(t.Columns, col)
	}
	t.Columns = append(t.Columns, reports.Column{Key: "peak_bytes", Header: "peak", Align: reports.AlignRight})
	for i := range rows {
		r := &rows[i]
		var lead []reports.Cell
		if configs {
			s := r.Config.Schedule
			options := reports.String(s.OptionLabel())
			if s.OptionLabel() == "" {
				options = reports.Cell{Value: "", Text: "—"}
			}
			rank := reports.Int(int64(r.Rank))
			if r.OverBudget {
				rank = reports.Cell{Text: "—"}
			}
			lead = []reports.Cell{reports.String(s.Name), options, reports.Int(int64(s.Micro)), rank}
			if replicas {
				lead = slices.Insert(lead, 1, reports.Int(int64(max(s.Replicas, 1))), reports.Int(int64(s.Devices)))
			}
		}
		for d, m := range r.Memory {
			row := append([]reports.Cell(nil), lead...)
			row = append(row, reports.Int(int64(d)))
			if d < len(r.Holdings) {
				h := r.Holdings[d]
				blocks := blockSpans(model, h.Blocks)
				if len(h.ReplicaBlocks) > 0 {
					blocks += "; replicas: " + blockSpans(model, h.ReplicaBlocks)
				}
				row = append(row, reports.String(blocks), reports.Count(h.Params), reports.Int(h.ReplicaParams))
			} else {
				row = append(row, reports.Cell{Text: "—"}, reports.Cell{Text: "—"}, reports.Cell{Text: "—"})
			}
			for c := range tensor.NumCategories {
				row = append(row, reports.Bytes(m.PeakBytes[c]))
			}
			t.Rows = append(t.Rows, append(row, reports.Bytes(m.PeakTotalBytes)))
		}
	}
	t.Footnotes = []string{
		"weights … workspace: the device's peak bytes in each category in a training step, each at its own moment " +
			"(so they may add up to more than peak, the device's peak in all at once); exact, from the runner's " +
			"memory accounting on the meta backend.",
		"params: the trainable scalars of the device's blocks, a tied parameter counted on every device that holds it; " +
			"weights and gradients hold 4 bytes of each (weights also the buffers, as batch norms' running statistics, " +
			"and the replicas of other stages that coop's prediction step runs), the optimizer 4 bytes a slot: " +
			"AdamW's two moments, SGD's momentum.",
	}
	return t
}

// blockSpans names the blocks of indices (ascending) by their contiguous
// runs, as models partition does a stage's: "transformer.wte …
// transformer.h.2 (1–4)", blocks numbered from 1, runs separated by "; ".
func blockSpans(model *models.Model, indices []int) string {
	var spans []string
	for i := 0; i < len(indices); {
		j := i
		for j+1 < len(indices) && indices[j+1] == indices[j]+1 {
			j++
		}
		lo, hi := indices[i], indices[j]
		if lo == hi {
			spans = append(spans, fmt.Sprintf("%s (%d)", model.Blocks[lo].Name, lo+1))
		} else {
			spans = append(spans, fmt.Sprintf("%s … %s (%d–%d)", model.Blocks[lo].Name, model.Blocks[hi].Name, lo+1, hi+1))
		}
		i = j + 1
	}
	return strings.Join(spans, "; ")
}

// planDevicesTitle names the configuration whose devices the table of
// the best shows: the one ranked first, else (every configuration over
// the budget) the lightest.
func planDevicesTitle(r *predictor.PlanRow, timed bool) string {
	what := "the lightest"
	switch {
	case r.OverBudget:
		what = "the lightest, over budget"
	case timed:
		what = "the fastest"
	}
	split := ""
	if r.MemorySplit {
		split = " split " + config.FormatPartition(config.SizesOf(r.Bounds)) + " for memory"
	}
	shape := ""
	if s := r.Config.Schedule; s.Replicas > 1 {
		shape = fmt.Sprintf(", R=%d × K=%d", s.Replicas, s.Devices)
	}
	return fmt.Sprintf("Devices of %s%s with M=%d%s, %s: blocks held and peak memory by category",
		r.Config.Schedule.Label(), shape, r.Config.Schedule.Micro, split, what)
}
