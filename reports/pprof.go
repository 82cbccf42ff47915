package reports

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/pipecast/pipecast/profiler"
)

// The op names of the profile's synthetic frames that are not ops of the
// record.
const (
	// pprofIdleOp is the op of a device's idle time in a step: the step's
	// wall time less the device's busy time, the pipeline bubble.
	pprofIdleOp = "idle"
	// pprofOverheadFrame is the leaf under a whole op for the part of its
	// time that none of its per-block events covers.
	pprofOverheadFrame = "(op overhead)"
)

// WritePprof writes recs as one gzipped pprof profile, to be read with
// `go tool pprof` (a flame graph with -http, the busiest ops with -top,
// the runs and devices with -tags).
//
// Each sample has two values: "wall" in nanoseconds (the default) and
// "moved" in bytes. Its stack, leaf first, is
//
//	block layer1.0 ← op forward ← stage 1 ← device cpu:1 ← schedule gpipe K=2 M=4 resnet50
//
// without the block frame for ops that have no per-block events. Its
// string labels are run (the record's ID), schedule, device, stage, op,
// and microbatch, shard and block where they apply. Samples of identical
// stacks and labels, e.g. the same op of the same micro-batch in
// different steps, are merged by summing, so the profile holds fewer
// samples and the same totals.
//
// Time is counted once. A whole op (Event.Block < 0) whose span contains
// per-block events of the same step, device, stage, op, micro-batch and
// shard contributes only through them: one sample per block event, and an
// "(op overhead)" leaf carrying the op's duration less the blocks' sum
// (dropped when that is not positive). Any other event, a whole op
// without blocks or a block event without its op, is one sample of its
// own duration. Each device's idle time in each measured step, the step's
// wall time less the durations of its samples there, is a sample of op
// "idle" under the device's stage, so the flame graph shows the bubbles.
// The wall total is therefore the sum of the top-level events' durations
// plus the idle time.
//
// "moved" is Event.Bytes as recorded: a send carries the bytes it sent, a
// receive or a collective the bytes it received, so a point-to-point
// transfer counts at both ends; -tagignore op=send leaves the bytes the
// devices received.
func WritePprof(w io.Writer, recs []profiler.Record) error {
	b := &pprofBuilder{
		functions: map[string]*profile.Location{},
		samples:   map[string]*profile.Sample{},
	}
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "wall", Unit: "nanoseconds"},
			{Type: "moved", Unit: "bytes"},
		},
		DefaultSampleType: "wall",
		PeriodType:        &profile.ValueType{Type: "wall", Unit: "nanoseconds"},
		Period:            1,
	}
	for i := range recs {
		rec := &recs[i]
		b.addRecord(rec)
		for _, s := range rec.Steps {
			p.DurationNanos += s.WallNanos
		}
		if t, err := time.Parse(time.RFC3339, rec.CreatedUTC); err == nil && (p.TimeNanos == 0 || t.UnixNano() < p.TimeNanos) {
			p.TimeNanos = t.UnixNano()
		}
		p.Comments = append(p.Comments, fmt.Sprintf("run %s: %s %s, %d measured steps", rec.ID, rec.Kind, pprofScheduleFrame(rec), len(rec.Steps)))
	}
	p.Sample = b.order
	p.Location = b.locations
	for _, l := range b.locations {
		p.Function = append(p.Function, l.Line[0].Function)
	}
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("write pprof profile: %w", err)
	}
	if err := p.Write(w); err != nil {
		return fmt.Errorf("write pprof profile: %w", err)
	}
	return nil
}

// pprofBuilder collects the frames and merged samples of a profile.
type pprofBuilder struct {
	// functions maps a frame's name to its location; each frame is one
	// function at one location of the same ID.
	functions map[string]*profile.Location
	locations []*profile.Location
	// samples maps a stack and its labels to their merged sample; order
	// keeps the samples in first-seen order so output is deterministic.
	samples map[string]*profile.Sample
	order   []*profile.Sample
}

// frame returns the location of the frame called name, adding it first if
// needed.
func (b *pprofBuilder) frame(name string) *profile.Location {
	if l, ok := b.functions[name]; ok {
		return l
	}
	id := uint64(len(b.locations) + 1)
	f := &profile.Function{ID: id, Name: name, SystemName: name}
	l := &profile.Location{ID: id, Line: []profile.Line{{Function: f}}}
	b.functions[name] = l
	b.locations = append(b.locations, l)
	return l
}

// add adds wall nanoseconds and moved bytes to the sample of the given
// stack (leaf first) and labels.
func (b *pprofBuilder) add(stack []string, labels map[string]string, wall, moved int64) {
	var key strings.Builder
	for _, s := range stack {
		key.WriteString(s)
		key.WriteByte(0)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&key, "%s=%s\x00", k, labels[k])
	}
	if s, ok := b.samples[key.String()]; ok {
		s.Value[0] += wall
		s.Value[1] += moved
		return
	}
	s := &profile.Sample{Value: []int64{wall, moved}, Label: map[string][]string{}}
	for _, name := range stack {
		s.Location = append(s.Location, b.frame(name))
	}
	for k, v := range labels {
		s.Label[k] = []string{v}
	}
	b.samples[key.String()] = s
	b.order = append(b.order, s)
}

// pprofOpKey identifies the whole op a per-block event belongs to.
type pprofOpKey struct {
	step, device, stage int
	op                  string
	micro, shard        int
}

func pprofKeyOf(e *profiler.Event) pprofOpKey {
	return pprofOpKey{e.Step, e.Device, e.Stage, e.Op, e.Micro, e.Shard}
}

// addRecord adds the samples of one record.
func (b *pprofBuilder) addRecord(rec *profiler.Record) {
	ix := newExportIndex(rec)
	root := pprofScheduleFrame(rec)

	// Attach each block event to the whole op of the same key that
	// contains it.
	whole := map[pprofOpKey][]int{}
	for i := range rec.Events {
		if e := &rec.Events[i]; e.Block < 0 {
			whole[pprofKeyOf(e)] = append(whole[pprofKeyOf(e)], i)
		}
	}
	children := map[int][]int{}
	var orphans []int
	for i := range rec.Events {
		e := &rec.Events[i]
		if e.Block < 0 {
			continue
		}
		parent := -1
		for _, j := range whole[pprofKeyOf(e)] {
			if p := &rec.Events[j]; p.StartNanos <= e.StartNanos && e.EndNanos <= p.EndNanos {
				parent = j
				break
			}
		}
		if parent < 0 {
			orphans = append(orphans, i)
			continue
		}
		children[parent] = append(children[parent], i)
	}

	type stepDevice struct{ step, device int }
	busy := map[stepDevice]int64{}
	sample := func(e *profiler.Event, leaf string, wall, moved int64) {
		stack := []string{"op " + e.Op, "stage " + strconv.Itoa(e.Stage), "device " + ix.deviceName(e.Device), root}
		if leaf != "" {
			stack = append([]string{leaf}, stack...)
		}
		labels := ix.labels(e.Device, e.Stage, e.Op)
		if e.Micro >= 0 {
			labels["microbatch"] = strconv.Itoa(e.Micro)
		}
		if e.Shard >= 0 {
			labels["shard"] = strconv.Itoa(e.Shard)
		}
		if e.Block >= 0 {
			labels["block"] = ix.blockName(e.Block)
		}
		b.add(stack, labels, wall, moved)
		busy[stepDevice{e.Step, e.Device}] += wall
	}
	for i := range rec.Events {
		e := &rec.Events[i]
		if e.Block >= 0 {
			continue
		}
		kids := children[i]
		if len(kids) == 0 {
			sample(e, "", e.EndNanos-e.StartNanos, e.Bytes)
			continue
		}
		rest := e.EndNanos - e.StartNanos
		for _, k := range kids {
			c := &rec.Events[k]
			sample(c, "block "+ix.blockName(c.Block), c.EndNanos-c.StartNanos, c.Bytes)
			rest -= c.EndNanos - c.StartNanos
		}
		// The op's bytes, if any, stay with the op rather than a block.
		if rest > 0 || e.Bytes != 0 {
			overhead := *e
			overhead.Block = -1
			sample(&overhead, pprofOverheadFrame, max(rest, 0), e.Bytes)
		}
	}
	for _, i := range orphans {
		e := &rec.Events[i]
		sample(e, "block "+ix.blockName(e.Block), e.EndNanos-e.StartNanos, e.Bytes)
	}

	for _, s := range rec.Steps {
		for d := 0; d < ix.devices; d++ {
			idle := s.WallNanos - busy[stepDevice{s.Step, d}]
			if idle <= 0 {
				continue
			}
			stage := ix.stage(d)
			stack := []string{"op " + pprofIdleOp, "stage " + strconv.Itoa(stage), "device " + ix.deviceName(d), root}
			b.add(stack, ix.labels(d, stage, pprofIdleOp), idle, 0)
		}
	}
}

// pprofScheduleFrame names a record's root frame after its schedule,
// devices, micro-batches and model.
func pprofScheduleFrame(rec *profiler.Record) string {
	c := rec.Config
	return fmt.Sprintf("schedule %s K=%d M=%d %s", c.Schedule, c.Devices, c.Micro, c.Model)
}

// exportIndex looks up the names of a record's devices, stages and blocks
// for the pprof and trace exports.
type exportIndex struct {
	rec *profiler.Record
	// devices is the number of devices: the most the environment, the
	// per-device aggregates and the events name.
	devices int
	names   []string
	stages  []int
	blocks  map[int]string
}

func newExportIndex(rec *profiler.Record) *exportIndex {
	ix := &exportIndex{rec: rec, devices: len(rec.Env.Devices), blocks: map[int]string{}}
	for _, d := range rec.Devices {
		ix.devices = max(ix.devices, d.Index+1)
	}
	for _, e := range rec.Events {
		ix.devices = max(ix.devices, e.Device+1)
	}
	ix.names = make([]string, ix.devices)
	ix.stages = make([]int, ix.devices)
	for d := range ix.devices {
		ix.names[d] = fmt.Sprintf("device%d", d)
		ix.stages[d] = -1
		if d < len(rec.Env.Devices) && rec.Env.Devices[d].Name != "" {
			ix.names[d] = rec.Env.Devices[d].Name
		}
	}
	// A device's stage: its aggregate says, else the partition, else its
	// first event.
	for _, d := range rec.Devices {
		if d.Index >= 0 {
			ix.stages[d.Index] = d.Stage
			if d.Name != "" && (d.Index >= len(rec.Env.Devices) || rec.Env.Devices[d.Index].Name == "") {
				ix.names[d.Index] = d.Name
			}
		}
	}
	for s, st := range rec.Partition {
		if st.Device >= 0 && st.Device < ix.devices && ix.stages[st.Device] < 0 {
			ix.stages[st.Device] = s
		}
		for i, name := range st.Blocks {
			ix.blocks[st.FirstBlock+i] = name
		}
	}
	for _, e := range rec.Events {
		if e.Device >= 0 && ix.stages[e.Device] < 0 {
			ix.stages[e.Device] = e.Stage
		}
	}
	for _, bt := range rec.Blocks {
		if bt.Name != "" {
			ix.blocks[bt.Block] = bt.Name
		}
	}
	return ix
}

// deviceName returns device d's name, e.g. "cpu:1".
func (ix *exportIndex) deviceName(d int) string {
	if d < 0 || d >= ix.devices {
		return fmt.Sprintf("device%d", d)
	}
	return ix.names[d]
}

// stage returns device d's stage, or d where the record does not say.
func (ix *exportIndex) stage(d int) int {
	if d < 0 || d >= ix.devices || ix.stages[d] < 0 {
		return d
	}
	return ix.stages[d]
}

// blockName returns block b's name, e.g. "layer1.0".
func (ix *exportIndex) blockName(b int) string {
	if name, ok := ix.blocks[b]; ok {
		return name
	}
	return fmt.Sprintf("block%d", b)
}

// labels returns the labels every sample of device d carries.
func (ix *exportIndex) labels(d, stage int, op string) map[string]string {
	return map[string]string{
		"run":      ix.rec.ID,
		"schedule": ix.rec.Config.Schedule,
		"device":   ix.deviceName(d),
		"stage":    strconv.Itoa(stage),
		"op":       op,
	}
}
