package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/pipecast/pipecast/profiler"
)

// The threads of a device's process in a trace: one per kind of work, so
// that ops of different kinds, which may overlap in time, sit on tracks of
// their own. An op that still overlaps an earlier one of its track
// partially moves to an overflow thread of its kind, tid base+10·lane.
const (
	traceCompute    = 1
	traceSend       = 2
	traceRecv       = 3
	traceCollective = 4
	traceBlocks     = 5
	// traceLaneStride separates the overflow threads of one kind.
	traceLaneStride = 10
)

var traceThreadNames = map[int]string{
	traceCompute:    "compute",
	traceSend:       "send",
	traceRecv:       "recv",
	traceCollective: "collective",
	traceBlocks:     "blocks",
}

// traceMemoryCounter names the counter track of a device's memory peaks,
// traceLiveCounter that of its live memory over the tracked step.
const (
	traceMemoryCounter = "peak bytes"
	traceLiveCounter   = "live bytes"
)

// WriteTrace writes recs as Chrome trace-event JSON, {"traceEvents": [...],
// "displayTimeUnit": "ms"}, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open.
//
// Each device of each record is a process, named "run ID: cpu:0 (stage
// 0)" and sorted in record and device order. Its threads are the kinds of
// work: compute (forward, backward, recompute, predict, loss, update),
// send, recv, collective (allgather, alltoall) and blocks. Each event of
// the record is one complete ("X") event: a whole op named like "forward
// 1.3" (op, stage.micro-batch) or "predict 1.s0" (stage.shard) with cat
// its op, and a per-block event named after its block on the blocks
// thread, inside the span of its op. Args hold step, stage, micro, shard,
// peer, bytes and block where they apply. Times are microseconds with
// nanosecond decimals: the event's offset from its step's start plus the
// step's offset, the sum of the earlier steps' lengths (a step's wall time,
// or its last event's end if later), so the steps follow each other on
// one time axis.
//
// Memory is a counter track per device, "peak bytes", with one series per
// category (weights, activations, …; the viewers stack them). A record
// keeps each category's peak over the measured steps, not per step, so
// the track holds that peak from the start of every measured step: it
// shows what the device needed at most, split by category, next to the
// ops of each step.
//
// A device with a memory track (profiler.MemoryTrack) also has a counter
// track "live bytes", one series per category: its live bytes at the
// start of the tracked step and after every change, on the time axis of
// that step's ops, so that the viewers show when and in which op the
// device's memory peaks.
//
// Events of one thread never overlap partially, as the viewers require:
// they are disjoint or nested. A record whose ops of one kind overlap on
// a device (a schedule that runs two at once) has the later one moved to
// an overflow thread such as "compute (overflow 1)".
func WriteTrace(w io.Writer, recs []profiler.Record) error {
	var meta, spans, counters []traceEvent
	pid := 0
	for i := range recs {
		ix := newExportIndex(&recs[i])
		m, s, c := traceRecord(&recs[i], ix, pid)
		meta, spans, counters = append(meta, m...), append(spans, s...), append(counters, c...)
		pid += ix.devices
	}
	var buf bytes.Buffer
	buf.WriteString("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[")
	first := true
	for _, list := range [][]traceEvent{meta, spans, counters} {
		for _, e := range list {
			line, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("write trace: %w", err)
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			buf.WriteString("\n")
			buf.Write(line)
		}
	}
	buf.WriteString("\n]}\n")
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

// traceEvent is one event of the Chrome trace-event format.
type traceEvent struct {
	Name string         `json:"name,omitempty"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	TS   traceMicros    `json:"ts"`
	Dur  *traceMicros   `json:"dur,omitempty"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// traceMicros is a time in nanoseconds, written as microseconds with up to
// three decimals so that no precision is lost and equal times stay equal.
type traceMicros int64

// MarshalJSON writes t in microseconds, e.g. 1234567 ns as 1234.567.
func (t traceMicros) MarshalJSON() ([]byte, error) {
	ns := int64(t)
	sign := ""
	if ns < 0 {
		sign, ns = "-", -ns
	}
	s := sign + strconv.FormatInt(ns/1000, 10)
	if frac := ns % 1000; frac != 0 {
		f := fmt.Sprintf("%03d", frac)
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		s += "." + f
	}
	return []byte(s), nil
}

// traceRecord returns the metadata, complete and counter events of one
// record whose devices become processes pid0+1, pid0+2, ….
func traceRecord(rec *profiler.Record, ix *exportIndex, pid0 int) (meta, spans, counters []traceEvent) {
	offsets := traceStepOffsets(rec)
	tids, used := traceThreads(rec, offsets)
	meta = traceMetadata(rec, ix, pid0, used)
	spans = traceSpans(rec, ix, pid0, offsets, tids)
	counters = traceCounters(rec, pid0, offsets)
	return meta, spans, counters
}

// traceTrack pairs a device with a thread of its process: the thread of
// a kind of work (traceKind) or, once events are placed on lanes, a tid,
// which may be one of that kind's overflow threads.
type traceTrack struct{ device, kind int }

// traceThreads returns the thread (tid) of each of the record's events
// and, per device, the threads that hold any. It sorts each device's events
// by kind of work and time, then places each on the first lane of its
// kind where it nests or follows cleanly.
func traceThreads(rec *profiler.Record, offsets map[int]int64) (tids []int, used map[traceTrack]bool) {
	byTrack := map[traceTrack][]int{}
	for i := range rec.Events {
		e := &rec.Events[i]
		k := traceTrack{e.Device, traceKind(e)}
		byTrack[k] = append(byTrack[k], i)
	}
	tids = make([]int, len(rec.Events))
	used = map[traceTrack]bool{} // device and tid
	for k, list := range byTrack {
		start := func(i int) int64 { return offsets[rec.Events[i].Step] + rec.Events[i].StartNanos }
		end := func(i int) int64 { return offsets[rec.Events[i].Step] + rec.Events[i].EndNanos }
		sort.SliceStable(list, func(a, b int) bool {
			if start(list[a]) != start(list[b]) {
				return start(list[a]) < start(list[b])
			}
			return end(list[a]) > end(list[b])
		})
		var lanes [][]int64 // per lane, the ends of its open events
		for _, i := range list {
			for lane := 0; ; lane++ {
				if lane == len(lanes) {
					lanes = append(lanes, nil)
				}
				open := lanes[lane]
				for len(open) > 0 && open[len(open)-1] <= start(i) {
					open = open[:len(open)-1]
				}
				lanes[lane] = open
				if len(open) > 0 && open[len(open)-1] < end(i) {
					continue // would overlap partially
				}
				lanes[lane] = append(open, end(i))
				tids[i] = k.kind + traceLaneStride*lane
				used[traceTrack{k.device, tids[i]}] = true
				break
			}
		}
	}
	return tids, used
}

// traceMetadata returns the events that name and order the record's
// processes, one per device, and the threads of each that used holds.
func traceMetadata(rec *profiler.Record, ix *exportIndex, pid0 int, used map[traceTrack]bool) (meta []traceEvent) {
	for d := range ix.devices {
		pid := pid0 + d + 1
		meta = append(meta,
			traceMeta("process_name", pid, 0, "name", fmt.Sprintf("run %s: %s (%s)", rec.ID, ix.deviceName(d), stagesLabel(deviceStages(rec, d), ix.stage(d)))),
			traceMeta("process_sort_index", pid, 0, "sort_index", pid))
		var threads []int
		for k := range used {
			if k.device == d {
				threads = append(threads, k.kind)
			}
		}
		sort.Ints(threads)
		for _, tid := range threads {
			name := traceThreadNames[tid%traceLaneStride]
			if lane := tid / traceLaneStride; lane > 0 {
				name = fmt.Sprintf("%s (overflow %d)", name, lane)
			}
			meta = append(meta,
				traceMeta("thread_name", pid, tid, "name", name),
				traceMeta("thread_sort_index", pid, tid, "sort_index", tid))
		}
	}
	return meta
}

// traceSpans returns a complete event per event of the record, on the
// thread tids gives it, sorted by process, thread, start and, outer
// before inner, length.
func traceSpans(rec *profiler.Record, ix *exportIndex, pid0 int, offsets map[int]int64, tids []int) (spans []traceEvent) {
	for i := range rec.Events {
		e := &rec.Events[i]
		dur := traceMicros(e.EndNanos - e.StartNanos)
		x := traceEvent{
			Name: traceEventName(e), Cat: e.Op, Ph: "X",
			TS: traceMicros(offsets[e.Step] + e.StartNanos), Dur: &dur,
			PID: pid0 + e.Device + 1, TID: tids[i],
			Args: map[string]any{"step": e.Step, "stage": e.Stage},
		}
		for _, a := range []struct {
			key string
			v   int
		}{{"micro", e.Micro}, {"shard", e.Shard}, {"peer", e.Peer}} {
			if a.v >= 0 {
				x.Args[a.key] = a.v
			}
		}
		if e.Bytes > 0 {
			x.Args["bytes"] = e.Bytes
		}
		if e.Block >= 0 {
			x.Name = ix.blockName(e.Block)
			x.Args["block"] = x.Name
			x.Args["op"] = traceEventName(e)
		}
		spans = append(spans, x)
	}
	sort.SliceStable(spans, func(a, b int) bool {
		x, y := spans[a], spans[b]
		if x.PID != y.PID {
			return x.PID < y.PID
		}
		if x.TID != y.TID {
			return x.TID < y.TID
		}
		if x.TS != y.TS {
			return x.TS < y.TS
		}
		return *x.Dur > *y.Dur
	})
	return spans
}

// traceCounters returns the memory counter events of the record's
// devices: each device's peak bytes by category at the start of every
// measured step, and its live bytes over the tracked step.
func traceCounters(rec *profiler.Record, pid0 int, offsets map[int]int64) (counters []traceEvent) {
	for _, dev := range rec.Devices {
		if len(dev.PeakBytesByCategory) == 0 || dev.Index < 0 {
			continue
		}
		for _, s := range rec.Steps {
			args := map[string]any{}
			for cat, b := range dev.PeakBytesByCategory {
				args[cat] = b
			}
			counters = append(counters, traceEvent{
				Name: traceMemoryCounter, Ph: "C", TS: traceMicros(offsets[s.Step]),
				PID: pid0 + dev.Index + 1, Args: args,
			})
		}
		if dev.MemoryTrack != nil {
			counters = append(counters, traceLiveCounters(dev.MemoryTrack, pid0+dev.Index+1, offsets)...)
		}
	}
	return counters
}

// traceLiveCounters returns the "live bytes" counter events of one
// device's memory track: every category's live bytes at the start and
// after every change.
func traceLiveCounters(t *profiler.MemoryTrack, pid int, offsets map[int]int64) []traceEvent {
	points := t.Points()
	out := make([]traceEvent, len(points))
	for i, p := range points {
		args := make(map[string]any, len(t.Categories))
		for c, name := range t.Categories {
			args[name] = p.LiveBytes[c]
		}
		out[i] = traceEvent{Name: traceLiveCounter, Ph: "C", TS: traceMicros(offsets[t.Step] + p.Nanos), PID: pid, Args: args}
	}
	return out
}

// traceMeta returns a metadata event whose one arg is key: v.
func traceMeta(name string, pid, tid int, key string, v any) traceEvent {
	return traceEvent{Name: name, Ph: "M", PID: pid, TID: tid, Args: map[string]any{key: v}}
}

// traceKind returns the thread of an event's kind of work.
func traceKind(e *profiler.Event) int {
	if e.Block >= 0 {
		return traceBlocks
	}
	switch e.Op {
	case "send":
		return traceSend
	case "recv":
		return traceRecv
	case "allgather", "alltoall":
		return traceCollective
	}
	return traceCompute
}

// traceEventName names a whole op by its op and what it worked on:
// "forward 1.3" (stage 1, micro-batch 3), "predict 1.s0" (shard 0), or
// just the op.
func traceEventName(e *profiler.Event) string {
	switch {
	case e.Micro >= 0:
		return fmt.Sprintf("%s %d.%d", e.Op, e.Stage, e.Micro)
	case e.Shard >= 0:
		return fmt.Sprintf("%s %d.s%d", e.Op, e.Stage, e.Shard)
	}
	return e.Op
}

// traceStepOffsets returns, for each step of the record's steps and
// events, the nanoseconds from the first step's start to its own: the
// steps in order, each as long as its wall time or its last event's end,
// whichever is later.
func traceStepOffsets(rec *profiler.Record) map[int]int64 {
	length := map[int]int64{}
	for _, s := range rec.Steps {
		length[s.Step] = max(length[s.Step], s.WallNanos)
	}
	for _, e := range rec.Events {
		length[e.Step] = max(length[e.Step], e.EndNanos)
	}
	steps := make([]int, 0, len(length))
	for s := range length {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	offsets := make(map[int]int64, len(steps))
	var at int64
	for _, s := range steps {
		offsets[s] = at
		at += length[s]
	}
	return offsets
}
