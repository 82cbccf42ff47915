package reports

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/pipecast/pipecast/profiler"
)

// runsOpOrder is the order ops appear in a device table: compute first, then
// communication, then the update; kinds not listed follow alphabetically.
var runsOpOrder = []string{"forward", "recompute", "backward", "backward-input", "backward-weight", "loss", "predict",
	"send", "recv", "allgather", "alltoall", "update"}

// runsCategoryOrder is the order of memory categories in a device table.
var runsCategoryOrder = []string{"weights", "gradients", "optimizer", "activations", "boundary", "comm", "workspace"}

// runsOrderedKeys returns the keys of the maps, those in order first and the
// rest sorted.
func runsOrderedKeys(order []string, maps ...map[string]int64) []string {
	seen := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			seen[k] = true
		}
	}
	var keys []string
	for _, k := range order {
		if seen[k] {
			keys = append(keys, k)
			delete(seen, k)
		}
	}
	rest := make([]string, 0, len(seen))
	for k := range seen {
		rest = append(rest, k)
	}
	sort.Strings(rest)
	return append(keys, rest...)
}

// RunDetailTables returns two tables per record, in record order: its
// devices (stage and blocks, busy time per op kind, idle time, bubble,
// peak memory per category, bytes sent and received per step) and its
// blocks (per-call forward, backward and recompute times). Times are
// milliseconds per step for people and nanoseconds for machines.
func RunDetailTables(recs []profiler.Record) []*Table {
	var out []*Table
	for i := range recs {
		out = append(out, runsDeviceTable(&recs[i]), runsBlockTable(&recs[i]))
	}
	return out
}

// runsName names a record in a detail table's title.
func runsName(r *profiler.Record) string {
	c := r.Config
	return fmt.Sprintf("%s, %s, K=%d, M=%d, batch %d (run %s)", ModelLabel(c), ScheduleLabel(c), c.Devices, c.Micro, c.Batch, r.ID)
}

// runsDeviceTable is the per-device table of one record.
func runsDeviceTable(r *profiler.Record) *Table {
	var busyMaps, peakMaps []map[string]int64
	for _, d := range r.Devices {
		busyMaps = append(busyMaps, d.BusyNanosByOp)
		peakMaps = append(peakMaps, d.PeakBytesByCategory)
	}
	ops := runsOrderedKeys(runsOpOrder, busyMaps...)
	cats := runsOrderedKeys(runsCategoryOrder, peakMaps...)
	t := &Table{
		Title: "Devices of " + runsName(r),
		Columns: []Column{
			{Key: "device", Header: "device", Align: AlignRight},
			{Key: "name", Header: "name", Show: Machines},
			{Key: "stage", Header: "stage", Align: AlignRight},
			{Key: "blocks", Header: "blocks"},
		},
	}
	differ := !r.Config.DevicesAlike() || len(r.Config.DeviceSpeeds) > 0
	if differ {
		t.Columns = append(t.Columns,
			Column{Key: "threads", Header: "T", Align: AlignRight},
			Column{Key: "slowdown", Header: "slowdown", Align: AlignRight})
	}
	for _, op := range ops {
		t.Columns = append(t.Columns, Column{Key: "busy_" + op + "_nanos", Header: op + " ms", Align: AlignRight})
	}
	t.Columns = append(t.Columns,
		Column{Key: "busy_nanos", Header: "busy ms", Align: AlignRight},
		Column{Key: "idle_nanos", Header: "idle ms", Align: AlignRight},
		Column{Key: "bubble_fraction", Header: "bubble", Align: AlignRight})
	for _, c := range cats {
		t.Columns = append(t.Columns, Column{Key: "peak_" + c + "_bytes", Header: c, Align: AlignRight})
	}
	t.Columns = append(t.Columns,
		Column{Key: "peak_bytes", Header: "peak", Align: AlignRight},
		Column{Key: "sent_bytes_per_step", Header: "sent/step", Align: AlignRight},
		Column{Key: "received_bytes_per_step", Header: "received/step", Align: AlignRight})
	for _, d := range r.Devices {
		row := append([]Cell{Int(int64(d.Index)), String(d.Name)}, runsDeviceStages(r, d)...)
		if differ {
			threads := Empty("—")
			if d.Index < len(r.Env.Devices) {
				threads = Int(int64(r.Env.Devices[d.Index].Threads))
			}
			s := r.Config.Slowdown(d.Index)
			row = append(row, threads, Cell{Value: s, Text: fmt.Sprintf("×%.2f", s)})
		}
		for _, op := range ops {
			if n, ok := d.BusyNanosByOp[op]; ok {
				row = append(row, runsMillisCell(n))
			} else {
				row = append(row, Empty("—"))
			}
		}
		bubble := Empty("—")
		if total := d.BusyNanos + d.IdleNanos; total > 0 {
			bubble = runsPercentCell(float64(d.IdleNanos) / float64(total))
		}
		row = append(row, runsMillisCell(d.BusyNanos), runsMillisCell(d.IdleNanos), bubble)
		for _, c := range cats {
			if n, ok := d.PeakBytesByCategory[c]; ok {
				row = append(row, Bytes(n))
			} else {
				row = append(row, Empty("—"))
			}
		}
		row = append(row, Bytes(d.PeakBytes), Bytes(d.SentBytesPerStep), Bytes(d.ReceivedBytesPerStep))
		t.Rows = append(t.Rows, row)
	}
	t.Footnotes = []string{"Times are means per measured step; bubble: idle ÷ (busy + idle); peaks are the largest over the steps."}
	if differ {
		t.Footnotes = append(t.Footnotes, "T: the device's threads; slowdown: how many times as long it computes as a device of "+
			strconv.Itoa(r.Config.Threads)+" thread(s) at full speed, from its measured speed and an injected straggler's factor.")
	}
	return t
}

// runsDeviceStages returns the stage and blocks cells of device d: its
// stage and that stage's blocks, or, for a device that holds several
// (interleaved), the stages listed ("0, 2", the first as the value) and
// each one's blocks, separated by "; " (their count as the value).
func runsDeviceStages(r *profiler.Record, d profiler.Device) []Cell {
	held := deviceStages(r, d.Index)
	if len(held) < 2 {
		return []Cell{Int(int64(d.Stage)), runsStageBlocks(r, d.Stage)}
	}
	var n int64
	texts := make([]string, len(held))
	for i, s := range held {
		c := runsStageBlocks(r, s)
		if v, ok := c.Value.(int64); ok {
			n += v
		}
		texts[i] = c.Text
	}
	return []Cell{{Value: int64(held[0]), Text: stagesList(held)}, {Value: n, Text: strings.Join(texts, "; ")}}
}

// runsStageBlocks names a stage's blocks as "first … last (n)", counting
// blocks from 1 as the models commands do; raw, the count.
func runsStageBlocks(r *profiler.Record, stage int) Cell {
	if stage < 0 || stage >= len(r.Partition) {
		return Empty("—")
	}
	s := r.Partition[stage]
	n := s.EndBlock - s.FirstBlock
	text := fmt.Sprintf("%d–%d", s.FirstBlock+1, s.EndBlock)
	if n == 1 {
		text = strconv.Itoa(s.EndBlock)
	}
	if len(s.Blocks) > 0 {
		first, last := s.Blocks[0], s.Blocks[len(s.Blocks)-1]
		if first == last {
			text = fmt.Sprintf("%s (%s)", first, text)
		} else {
			text = fmt.Sprintf("%s … %s (%s)", first, last, text)
		}
	}
	return Cell{Value: int64(n), Text: text}
}

// ranMillisCell is runsMillisCell for a phase a run may not have run:
// "—" when it took no time.
func ranMillisCell(ns int64) Cell {
	if ns <= 0 {
		return Empty("—")
	}
	return runsMillisCell(ns)
}

// runsBlockTable is the per-block table of one record; the predict and
// split-backward columns appear only for records that time them.
func runsBlockTable(r *profiler.Record) *Table {
	var predict, split bool
	for _, b := range r.Blocks {
		predict = predict || b.PredictNanos > 0
		split = split || b.BackwardInputNanos > 0 || b.BackwardWeightNanos > 0
	}
	t := &Table{
		Title: "Blocks of " + runsName(r),
		Columns: []Column{
			{Key: "block", Header: "block", Align: AlignRight},
			{Key: "name", Header: "name"},
			{Key: "stage", Header: "stage", Align: AlignRight},
			{Key: "samples", Header: "samples", Align: AlignRight},
			{Key: "forward_nanos", Header: "forward ms", Align: AlignRight},
			{Key: "backward_nanos", Header: "backward ms", Align: AlignRight},
			{Key: "recompute_nanos", Header: "recompute ms", Align: AlignRight},
		},
	}
	if predict {
		t.Columns = append(t.Columns, Column{Key: "predict_nanos", Header: "predict ms", Align: AlignRight})
	}
	if split {
		t.Columns = append(t.Columns,
			Column{Key: "backward_input_nanos", Header: "backward-input ms", Align: AlignRight},
			Column{Key: "backward_weight_nanos", Header: "backward-weight ms", Align: AlignRight})
	}
	for _, b := range r.Blocks {
		// A phase the run never ran (a recompute without checkpointing, the
		// whole backward of a split one) is a dash, not 0 ms.
		row := []Cell{Int(int64(b.Block + 1)), String(b.Name), Int(int64(b.Stage)), Int(int64(b.Samples)),
			runsMillisCell(b.ForwardNanos), ranMillisCell(b.BackwardNanos), ranMillisCell(b.RecomputeNanos)}
		if predict {
			row = append(row, runsMillisCell(b.PredictNanos))
		}
		if split {
			row = append(row, runsMillisCell(b.BackwardInputNanos), runsMillisCell(b.BackwardWeightNanos))
		}
		t.Rows = append(t.Rows, row)
	}
	note := "Times are per call (one micro-batch of the given samples), the median over the measured steps; blocks are numbered from 1."
	if len(r.Blocks) == 0 {
		note = "The run recorded no per-block times."
	}
	t.Footnotes = []string{strings.TrimSpace(note)}
	return t
}
