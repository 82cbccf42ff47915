package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/profiler"
)

// validateTrace checks trace-event JSON as the viewers need it: a
// traceEvents array whose events all have ph, ts, pid and tid, complete
// events a name and a non-negative dur, every process and thread of a
// complete event named by metadata, and no two complete events of one
// (pid, tid) overlapping partially.
func validateTrace(data []byte) error {
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("validate trace: %w", err)
	}
	if doc.TraceEvents == nil {
		return fmt.Errorf("validate trace: no traceEvents array")
	}
	type span struct {
		name       string
		start, end int64
	}
	type thread struct{ pid, tid int64 }
	processes := map[int64]bool{}
	threads := map[thread]bool{}
	tracks := map[thread][]span{}
	for i, e := range doc.TraceEvents {
		ph, _ := e["ph"].(string)
		if ph == "" {
			return fmt.Errorf("validate trace: event %d: no ph", i)
		}
		ts, err := traceNanos(e["ts"])
		if err != nil {
			return fmt.Errorf("validate trace: event %d: ts: %w", i, err)
		}
		var th thread
		for _, id := range []struct {
			key string
			to  *int64
		}{{"pid", &th.pid}, {"tid", &th.tid}} {
			n, ok := e[id.key].(json.Number)
			if !ok {
				return fmt.Errorf("validate trace: event %d: %s missing or not a number", i, id.key)
			}
			if *id.to, err = n.Int64(); err != nil {
				return fmt.Errorf("validate trace: event %d: %s: %w", i, id.key, err)
			}
		}
		name, _ := e["name"].(string)
		switch ph {
		case "M":
			switch name {
			case "process_name":
				processes[th.pid] = true
			case "thread_name":
				threads[th] = true
			}
		case "X":
			dur, err := traceNanos(e["dur"])
			if err != nil || dur < 0 {
				return fmt.Errorf("validate trace: event %d (%q): bad dur %v", i, name, e["dur"])
			}
			if name == "" {
				return fmt.Errorf("validate trace: event %d: complete event without a name", i)
			}
			tracks[th] = append(tracks[th], span{name, ts, ts + dur})
		}
	}
	for th, spans := range tracks {
		if !processes[th.pid] || !threads[th] {
			return fmt.Errorf("validate trace: pid %d tid %d: no process_name or thread_name metadata", th.pid, th.tid)
		}
		sort.SliceStable(spans, func(a, b int) bool {
			if spans[a].start != spans[b].start {
				return spans[a].start < spans[b].start
			}
			return spans[a].end > spans[b].end
		})
		var open []span
		for _, s := range spans {
			for len(open) > 0 && open[len(open)-1].end <= s.start {
				open = open[:len(open)-1]
			}
			if len(open) > 0 && open[len(open)-1].end < s.end {
				o := open[len(open)-1]
				return fmt.Errorf("validate trace: pid %d tid %d: %q [%d, %d) ns overlaps %q [%d, %d) ns partially",
					th.pid, th.tid, s.name, s.start, s.end, o.name, o.start, o.end)
			}
			open = append(open, s)
		}
	}
	return nil
}

// traceNanos reads a JSON number of microseconds as whole nanoseconds,
// exactly when it has at most three decimals.
func traceNanos(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("missing or not a number: %v", v)
	}
	s := string(n)
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) <= 3 && !strings.ContainsAny(s, "eE") {
		w, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, err
		}
		f := int64(0)
		if frac != "" {
			if f, err = strconv.ParseInt((frac + "00")[:3], 10, 64); err != nil {
				return 0, err
			}
		}
		if strings.HasPrefix(whole, "-") {
			f = -f
		}
		return w*1000 + f, nil
	}
	x, err := n.Float64()
	if err != nil {
		return 0, err
	}
	return int64(math.Round(x * 1000)), nil
}

// traceDoc is a parsed trace for the tests.
type traceDoc struct {
	DisplayTimeUnit string           `json:"displayTimeUnit"`
	TraceEvents     []traceTestEvent `json:"traceEvents"`
}

type traceTestEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat"`
	Ph   string         `json:"ph"`
	TS   json.Number    `json:"ts"`
	Dur  json.Number    `json:"dur"`
	PID  int            `json:"pid"`
	TID  int            `json:"tid"`
	Args map[string]any `json:"args"`
}

func (e traceTestEvent) span(t *testing.T) (start, end int64) {
	t.Helper()
	start, err := traceNanos(e.TS)
	if err != nil {
		t.Fatalf("%s: ts: %v", e.Name, err)
	}
	dur, err := traceNanos(e.Dur)
	if err != nil {
		t.Fatalf("%s: dur: %v", e.Name, err)
	}
	return start, start + dur
}

// writeTestTrace writes recs as a trace, checks it with validateTrace and
// returns it parsed.
func writeTestTrace(t *testing.T, recs ...profiler.Record) ([]byte, traceDoc) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteTrace(&buf, recs); err != nil {
		t.Fatal(err)
	}
	if err := validateTrace(buf.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	var doc traceDoc
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("parse trace: %v", err)
	}
	return buf.Bytes(), doc
}

// traceThreadName returns the thread_name of (pid, tid), or "".
func traceThreadName(doc traceDoc, pid, tid int) string {
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "thread_name" && e.PID == pid && e.TID == tid {
			s, _ := e.Args["name"].(string)
			return s
		}
	}
	return ""
}

func TestWriteTrace(t *testing.T) {
	rec := exportTestRecord()
	data, doc := writeTestTrace(t, rec)
	if doc.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit %q, want ms", doc.DisplayTimeUnit)
	}

	count := map[string]int{}
	processes := map[int]string{}
	sortIndex := map[int]bool{}
	for _, e := range doc.TraceEvents {
		count[e.Ph]++
		if e.Ph == "M" && e.Name == "process_name" {
			processes[e.PID], _ = e.Args["name"].(string)
		}
		if e.Ph == "M" && e.Name == "process_sort_index" {
			sortIndex[e.PID] = true
		}
	}
	if count["X"] != len(rec.Events) {
		t.Errorf("%d complete events, want %d (the record's events)", count["X"], len(rec.Events))
	}
	if want := len(rec.Devices) * len(rec.Steps); count["C"] != want {
		t.Errorf("%d counter events, want %d (devices × steps)", count["C"], want)
	}
	for pid, want := range map[int]string{1: "run r1: cpu:0 (stage 0)", 2: "run r1: cpu:1 (stage 1)"} {
		if processes[pid] != want || !sortIndex[pid] {
			t.Errorf("pid %d: process %q (sort index %v), want %q with a sort index", pid, processes[pid], sortIndex[pid], want)
		}
	}

	var blockEvents, blocksThread int
	for _, e := range rec.Events {
		if e.Block >= 0 {
			blockEvents++
		}
	}
	// Ops sit on their kind's thread; blocks inside their op's span.
	var steps [3][2]int64 // per step, the first start and last end
	for i := range steps {
		steps[i] = [2]int64{math.MaxInt64, math.MinInt64}
	}
	for _, e := range doc.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		thread := traceThreadName(doc, e.PID, e.TID)
		start, end := e.span(t)
		step, _ := e.Args["step"].(json.Number).Int64()
		steps[step][0], steps[step][1] = min(steps[step][0], start), max(steps[step][1], end)
		if _, ok := e.Args["stage"]; !ok {
			t.Errorf("%s: no stage arg", e.Name)
		}
		if e.Cat == "send" || e.Cat == "recv" {
			if _, ok := e.Args["bytes"]; !ok || thread != e.Cat {
				t.Errorf("%s: thread %q, args %v, want thread %s and bytes", e.Name, thread, e.Args, e.Cat)
			}
		}
		if _, ok := e.Args["block"]; !ok {
			if (e.Cat == "forward" || e.Cat == "backward") && thread != "compute" {
				t.Errorf("%s: thread %q, want compute", e.Name, thread)
			}
			continue
		}
		blocksThread++
		if thread != "blocks" {
			t.Errorf("block %s: thread %q, want blocks", e.Name, thread)
		}
		inside := false
		for _, o := range doc.TraceEvents {
			if o.Ph == "X" && o.PID == e.PID && o.Name == e.Args["op"] && traceThreadName(doc, o.PID, o.TID) == "compute" {
				s, f := o.span(t)
				inside = inside || s <= start && end <= f
			}
		}
		if !inside {
			t.Errorf("block %s of %v at [%d, %d) is inside no compute op %q", e.Name, e.Args["step"], start, end, e.Args["op"])
		}
	}
	if blocksThread != blockEvents {
		t.Errorf("%d events on blocks threads, want %d", blocksThread, blockEvents)
	}
	// Consecutive steps follow each other: step 2 starts after step 1's
	// wall time.
	if steps[2][0] < rec.Steps[0].WallNanos || steps[1][1] > rec.Steps[0].WallNanos {
		t.Errorf("step 1 spans [%d, %d], step 2 starts at %d, want step 2 after %d", steps[1][0], steps[1][1], steps[2][0], rec.Steps[0].WallNanos)
	}
	if strings.Contains(string(data), "overflow") {
		t.Errorf("overflow thread for a record without overlaps")
	}
	checkGolden(t, "trace_sample.json", data)
}

func TestWriteTraceOverflow(t *testing.T) {
	rec := exportTestRecord()
	// Two forwards on device 0 overlap partially, as if run at once.
	for i, e := range rec.Events {
		if e.Step == 1 && e.Device == 0 && e.Op == "forward" && e.Micro == 1 && e.Block < 0 {
			rec.Events[i].StartNanos = 50_000
		}
	}
	data, doc := writeTestTrace(t, rec)
	count := 0
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			count++
			if e.Name == "forward 0.1" && e.Args["step"] == json.Number("1") {
				if got := traceThreadName(doc, e.PID, e.TID); got != "compute (overflow 1)" {
					t.Errorf("overlapping forward on thread %q, want compute (overflow 1)", got)
				}
			}
		}
	}
	if count != len(rec.Events) {
		t.Errorf("%d complete events, want %d", count, len(rec.Events))
	}
	if !strings.Contains(string(data), `"compute (overflow 1)"`) {
		t.Errorf("no overflow thread named")
	}
}

func TestWriteTraceRecords(t *testing.T) {
	a, b := exportTestRecord(), exportTestRecord()
	b.ID = "r2"
	_, doc := writeTestTrace(t, a, b)
	names := map[int]string{}
	xs := map[int]int{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" {
			names[e.PID], _ = e.Args["name"].(string)
		}
		if e.Ph == "X" {
			xs[e.PID]++
		}
	}
	want := map[int]string{1: "run r1: cpu:0 (stage 0)", 2: "run r1: cpu:1 (stage 1)", 3: "run r2: cpu:0 (stage 0)", 4: "run r2: cpu:1 (stage 1)"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("processes %v, want %v", names, want)
	}
	if xs[1] != xs[3] || xs[2] != xs[4] || xs[1]+xs[2] != len(a.Events) {
		t.Errorf("complete events per pid %v, want the same for both runs, %d per run", xs, len(a.Events))
	}
}

func TestTraceMicros(t *testing.T) {
	tests := []struct {
		name string
		ns   int64
		want string
	}{
		{name: "zero", ns: 0, want: "0"},
		{name: "whole", ns: 5000, want: "5"},
		{name: "nanos", ns: 1234567, want: "1234.567"},
		{name: "trailing zeros", ns: 1500, want: "1.5"},
		{name: "below a microsecond", ns: 7, want: "0.007"},
		{name: "negative", ns: -1500, want: "-1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := traceMicros(tt.ns).MarshalJSON()
			if err != nil || string(got) != tt.want {
				t.Fatalf("got %s, %v, want %s", got, err, tt.want)
			}
			back, err := traceNanos(json.Number(got))
			if err != nil || back != tt.ns {
				t.Errorf("read back %d, %v, want %d", back, err, tt.ns)
			}
		})
	}
}

func TestValidateTrace(t *testing.T) {
	const meta = `{"name":"process_name","ph":"M","ts":0,"pid":1,"tid":0,"args":{"name":"p"}},
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":1,"args":{"name":"t"}},`
	tests := []struct {
		name   string
		trace  string
		ok     bool
		substr string
	}{
		{name: "nested and adjacent", ok: true, trace: `{"traceEvents":[` + meta + `
{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},
{"name":"b","ph":"X","ts":2,"dur":8,"pid":1,"tid":1},
{"name":"c","ph":"X","ts":10,"dur":1.5,"pid":1,"tid":1}]}`},
		{name: "partial overlap", substr: "partially", trace: `{"traceEvents":[` + meta + `
{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},
{"name":"b","ph":"X","ts":9.999,"dur":1,"pid":1,"tid":1}]}`},
		{name: "overlap on other threads is fine", ok: true, trace: `{"traceEvents":[` + meta + `
{"name":"thread_name","ph":"M","ts":0,"pid":1,"tid":2,"args":{"name":"u"}},
{"name":"a","ph":"X","ts":0,"dur":10,"pid":1,"tid":1},
{"name":"b","ph":"X","ts":5,"dur":10,"pid":1,"tid":2}]}`},
		{name: "no tid", substr: "tid", trace: `{"traceEvents":[` + meta + `
{"name":"a","ph":"X","ts":0,"dur":10,"pid":1}]}`},
		{name: "no ts", substr: "ts", trace: `{"traceEvents":[` + meta + `
{"name":"a","ph":"X","dur":10,"pid":1,"tid":1}]}`},
		{name: "no dur", substr: "dur", trace: `{"traceEvents":[` + meta + `
{"name":"a","ph":"X","ts":0,"pid":1,"tid":1}]}`},
		{name: "no ph", substr: "ph", trace: `{"traceEvents":[{"name":"a","ts":0,"pid":1,"tid":1}]}`},
		{name: "no thread name", substr: "metadata", trace: `{"traceEvents":[` + meta + `
{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":3}]}`},
		{name: "no events array", substr: "traceEvents", trace: `{"events":[]}`},
		{name: "not json", substr: "validate trace", trace: `{"traceEvents":[`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateTrace([]byte(tt.trace))
			if tt.ok {
				if err != nil {
					t.Errorf("got %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.substr) {
				t.Errorf("got %v, want an error about %q", err, tt.substr)
			}
		})
	}
}

// TestWriteTraceMemoryTrack checks the live-bytes counters of devices
// with a memory track: one event at the start and one per change, every
// category a series, on the tracked step's time axis, their largest
// total the step's peak.
func TestWriteTraceMemoryTrack(t *testing.T) {
	rec := memoryTestRecord()
	data, doc := writeTestTrace(t, rec)
	live := map[int][]traceTestEvent{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "C" && e.Name == traceLiveCounter {
			live[e.PID] = append(live[e.PID], e)
		}
	}
	for _, dev := range rec.Devices {
		tr := dev.MemoryTrack
		events := live[dev.Index+1]
		if len(events) != len(tr.Changes)+1 {
			t.Fatalf("device %d: %d live-bytes events, want %d (the start and every change)", dev.Index, len(events), len(tr.Changes)+1)
		}
		var peak, last int64
		for i, e := range events {
			ts, err := traceNanos(e.TS)
			if err != nil {
				t.Fatal(err)
			}
			// Step 1 is the first on the trace's axis: its offset is 0.
			if ts < last || ts > rec.Steps[0].WallNanos {
				t.Errorf("device %d: event %d at %d ns, want in order within step 1's %d ns", dev.Index, i, ts, rec.Steps[0].WallNanos)
			}
			last = ts
			if len(e.Args) != len(tr.Categories) {
				t.Errorf("device %d: event %d has series %v, want one per category", dev.Index, i, e.Args)
			}
			var total int64
			for _, v := range e.Args {
				n, err := v.(json.Number).Int64()
				if err != nil {
					t.Fatal(err)
				}
				total += n
			}
			peak = max(peak, total)
		}
		if peak != tr.PeakBytes {
			t.Errorf("device %d: largest live total %d, want the step's peak %d", dev.Index, peak, tr.PeakBytes)
		}
	}
	checkGolden(t, "trace_memory.json", data)
}
