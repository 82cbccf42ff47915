package schedule

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ChartCost is the cost model of the charts in this package's docs: every
// op that computes or synchronises (Forward, Recompute, Backward,
// BackwardInput, BackwardWeight, Loss, Predict, AllGather, AllToAll,
// AllReduce, Update) takes one tick, and Send and Recv take none. Transfers get no width so that a chart shows the order of
// the compute and where the bubbles are; a Recv still cannot start before
// its Send, so the dependencies they carry stay visible as idle ticks.
func ChartCost(device int, op Op) float64 {
	if op.Kind == Send || op.Kind == Recv {
		return 0
	}
	return 1
}

// Chart simulates p under ChartCost and renders the timeline with one
// column per tick.
func Chart(p *Program) (string, error) {
	t, err := Simulate(p, ChartCost)
	if err != nil {
		return "", fmt.Errorf("chart: %w", err)
	}
	return t.Render(1), nil
}

// Render draws the timeline as ASCII: a header row of column numbers, then
// a row per device and a column per tick of the given length. A column
// shows the op that runs at the middle of its tick, "." when the device
// is idle there; an op shorter than half a tick may not appear at all.
// The cells are:
//
//	F0.1   forward of stage 0 on micro-batch (coop: slice) 1, keeping activations
//	f0.1   the same forward keeping only its input (checkpointed)
//	R0.1   recompute   B0.1  backward   L1  loss of micro-batch 1
//	I0.1   backward-input (the split backward's B)   W0.1  backward-weight
//	P0.s1  predict of stage 0 on shard 1
//	AG     all-gather  A2A   all-to-all  AR  all-reduce  U   update
//	S0.1   send        Rv0.1 recv (of the sending stage's micro-batch 1)
//
// Rows have no trailing spaces, so a chart can be pasted into a Go doc
// comment as it is.
func (t *Timeline) Render(tick float64) string {
	if !(tick > 0) || math.IsInf(tick, 0) {
		panic(fmt.Sprintf("schedule: render: tick %v, want a finite value > 0", tick))
	}
	ncol := int(math.Ceil(t.Makespan/tick - 1e-9))
	rows := make([][]string, len(t.Start))
	width := len(strconv.Itoa(max(ncol-1, 0)))
	for k := range rows {
		row := make([]string, ncol)
		for c := range row {
			row[c] = "."
		}
		for i, o := range t.Program.Devices[k] {
			start, end := t.Start[k][i], t.End[k][i]
			if end <= start {
				continue
			}
			// Column c shows the op running at (c+½)·tick.
			lo := int(math.Ceil(start/tick - 0.5))
			hi := int(math.Ceil(end/tick-0.5)) - 1
			label := cellLabel(o)
			for c := max(lo, 0); c <= min(hi, ncol-1); c++ {
				row[c] = label
				width = max(width, len(label))
			}
		}
		rows[k] = row
	}
	head := make([]string, ncol)
	for c := range head {
		head[c] = strconv.Itoa(c)
	}
	label := len(fmt.Sprintf("dev %d", len(rows)-1))
	var b strings.Builder
	writeChartRow(&b, "tick", label, head, width)
	for k, row := range rows {
		writeChartRow(&b, fmt.Sprintf("dev %d", k), label, row, width)
	}
	return b.String()
}

// writeChartRow writes one chart row: the name padded to label columns,
// then the cells padded to width, without trailing spaces.
func writeChartRow(b *strings.Builder, name string, label int, cells []string, width int) {
	line := fmt.Sprintf("%-*s", label, name)
	for _, c := range cells {
		line += fmt.Sprintf(" %-*s", width, c)
	}
	b.WriteString(strings.TrimRight(line, " "))
	b.WriteByte('\n')
}

// cellLabel returns the chart cell of op o.
func cellLabel(o Op) string {
	switch o.Kind {
	case AllGather:
		return "AG"
	case AllToAll:
		return "A2A"
	case AllReduce:
		return "AR"
	case DPAllReduce:
		return fmt.Sprintf("DP%d", o.Stage)
	case Update:
		return "U"
	case Send:
		return fmt.Sprintf("S%d.%d", o.Stage, o.Micro)
	case Recv:
		return fmt.Sprintf("Rv%d.%d", o.Stage, o.Micro)
	}
	// Forward (F, or f when checkpointed), Recompute, the backwards, Loss
	// and Predict are labelled as Op.String labels them.
	return o.String()
}
