package reports

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/schedule"
)

// exportTestRecord returns a small measured gpipe run on two devices with
// two micro-batches and two measured steps, timed per block: stage 0
// holds blocks conv1 and layer1.0, stage 1 layer2.0 and fc. Times are
// nanoseconds with odd digits so that µs conversions show their decimals.
func exportTestRecord() profiler.Record {
	rec := profiler.Record{
		Schema: profiler.SchemaVersion, Kind: profiler.KindMeasured,
		ID: "r1", CreatedUTC: "2025-03-01T10:00:00Z",
		Env: profiler.Environment{
			Backend: "cpu",
			Devices: []profiler.DeviceInfo{{Name: "cpu:0", Threads: 1}, {Name: "cpu:1", Threads: 1}},
		},
		Config: profiler.RunConfig{Model: "resnet50", Batch: 8, Steps: 2, Warmup: 1, RecordOptions: schedule.RecordOptions{Devices: 2, Micro: 2, Schedule: "gpipe"}},
		Partition: []profiler.Stage{
			{Device: 0, FirstBlock: 0, EndBlock: 2, Blocks: []string{"conv1", "layer1.0"}},
			{Device: 1, FirstBlock: 2, EndBlock: 4, Blocks: []string{"layer2.0", "fc"}},
		},
		Steps: []profiler.Step{{Step: 1, WallNanos: 700_001, Loss: 2.3}, {Step: 2, WallNanos: 690_003, Loss: 2.2}},
		Devices: []profiler.Device{
			{Index: 0, Name: "cpu:0", Stage: 0, PeakBytesByCategory: map[string]int64{"weights": 4000, "activations": 9000}},
			{Index: 1, Name: "cpu:1", Stage: 1, PeakBytesByCategory: map[string]int64{"weights": 6000, "activations": 5000}},
		},
	}
	for step := 1; step <= 2; step++ {
		j := int64(step * 7) // jitter, so steps differ
		add := func(dev, stage int, op string, micro, peer int, start, end, bytes int64) {
			rec.Events = append(rec.Events, profiler.Event{
				Step: step, Device: dev, Stage: stage, Op: op, Micro: micro, Shard: -1, Peer: peer,
				Block: -1, StartNanos: start*1000 + j, EndNanos: end*1000 + j - 3, Bytes: bytes,
			})
		}
		// blocks adds per-block events for blocks first and first+1
		// splitting [start, end] with a little of the op left over.
		blocks := func(dev, stage int, op string, micro, first int, start, end int64) {
			mid := (start + end) / 2
			for i, span := range [][2]int64{{start + 2, mid}, {mid + 1, end - 2}} {
				rec.Events = append(rec.Events, profiler.Event{
					Step: step, Device: dev, Stage: stage, Op: op, Micro: micro, Shard: -1, Peer: -1,
					Block: first + i, StartNanos: span[0]*1000 + j + 11, EndNanos: span[1]*1000 + j,
				})
			}
		}
		const act = 4096
		// Device 0, stage 0.
		add(0, 0, "forward", 0, -1, 0, 100, 0)
		blocks(0, 0, "forward", 0, 0, 0, 100)
		add(0, 0, "send", 0, 1, 100, 110, act)
		add(0, 0, "forward", 1, -1, 110, 200, 0)
		blocks(0, 0, "forward", 1, 0, 110, 200)
		add(0, 0, "send", 1, 1, 200, 210, act)
		add(0, 0, "recv", 1, 1, 400, 410, act)
		add(0, 0, "backward", 1, -1, 410, 500, 0)
		blocks(0, 0, "backward", 1, 0, 410, 500)
		add(0, 0, "recv", 0, 1, 500, 510, act)
		add(0, 0, "backward", 0, -1, 510, 600, 0)
		blocks(0, 0, "backward", 0, 0, 510, 600)
		add(0, 0, "update", -1, -1, 600, 620, 0)
		// Device 1, stage 1.
		add(1, 1, "recv", 0, 0, 0, 110, act)
		add(1, 1, "forward", 0, -1, 110, 200, 0)
		blocks(1, 1, "forward", 0, 2, 110, 200)
		add(1, 1, "recv", 1, 0, 200, 215, act)
		add(1, 1, "forward", 1, -1, 215, 300, 0)
		blocks(1, 1, "forward", 1, 2, 215, 300)
		add(1, 1, "loss", 0, -1, 300, 305, 0)
		add(1, 1, "loss", 1, -1, 305, 310, 0)
		add(1, 1, "backward", 1, -1, 320, 390, 0)
		blocks(1, 1, "backward", 1, 2, 320, 390)
		add(1, 1, "send", 1, 0, 390, 400, act)
		add(1, 1, "backward", 0, -1, 400, 490, 0)
		blocks(1, 1, "backward", 0, 2, 400, 490)
		add(1, 1, "send", 0, 0, 490, 500, act)
		add(1, 1, "update", -1, -1, 500, 520, 0)
	}
	return rec
}

// pprofWall sums the wall values of the samples that pass keep.
func pprofWall(p *profile.Profile, keep func(*profile.Sample) bool) (wall, moved int64) {
	for _, s := range p.Sample {
		if keep(s) {
			wall += s.Value[0]
			moved += s.Value[1]
		}
	}
	return wall, moved
}

// pprofHasFrame reports whether sample s has a frame called name.
func pprofHasFrame(s *profile.Sample, name string) bool {
	for _, l := range s.Location {
		for _, ln := range l.Line {
			if ln.Function.Name == name {
				return true
			}
		}
	}
	return false
}

func pprofParse(t *testing.T, data []byte) *profile.Profile {
	t.Helper()
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	return p
}

func TestWritePprof(t *testing.T) {
	rec := exportTestRecord()
	var buf bytes.Buffer
	if err := WritePprof(&buf, []profiler.Record{rec}); err != nil {
		t.Fatal(err)
	}
	p := pprofParse(t, buf.Bytes())

	if len(p.SampleType) != 2 || p.SampleType[0].Type != "wall" || p.SampleType[0].Unit != "nanoseconds" ||
		p.SampleType[1].Type != "moved" || p.SampleType[1].Unit != "bytes" {
		t.Errorf("sample types %v %v, want wall/nanoseconds moved/bytes", p.SampleType[0], p.SampleType[1])
	}
	if p.DefaultSampleType != "wall" {
		t.Errorf("default sample type %q, want wall", p.DefaultSampleType)
	}

	// The two steps' identical stacks merge.
	if len(p.Sample) >= len(rec.Events) {
		t.Errorf("%d samples for %d events, want fewer (merged steps)", len(p.Sample), len(rec.Events))
	}

	// Frames with time.
	for _, frame := range []string{
		"device cpu:0", "device cpu:1", "stage 0", "stage 1",
		"op forward", "op backward", "op send", "op recv", "op loss", "op update", "op idle",
		"block conv1", "block layer1.0", "block layer2.0", "block fc", "(op overhead)",
		"schedule gpipe K=2 M=2 resnet50",
	} {
		if w, _ := pprofWall(p, func(s *profile.Sample) bool { return pprofHasFrame(s, frame) }); w <= 0 {
			t.Errorf("frame %q: wall %d, want > 0", frame, w)
		}
	}

	// Stacks are leaf first, rooted at the schedule.
	for _, s := range p.Sample {
		n := len(s.Location)
		if got := s.Location[n-1].Line[0].Function.Name; got != "schedule gpipe K=2 M=2 resnet50" {
			t.Errorf("root frame %q, want the schedule", got)
		}
		if got := s.Location[n-2].Line[0].Function.Name; !strings.HasPrefix(got, "device ") {
			t.Errorf("frame under root %q, want a device", got)
		}
	}

	// Totals: every whole op counted once, plus idle, fills each step
	// on each device (no device is busy for a whole step here).
	var stepWall, wholeOps, bytesMoved int64
	for _, s := range rec.Steps {
		stepWall += s.WallNanos * 2
	}
	byOp := map[string]int64{}
	byBlock := map[string]int64{}
	for _, e := range rec.Events {
		if e.Block < 0 {
			wholeOps += e.EndNanos - e.StartNanos
			byOp[e.Op] += e.EndNanos - e.StartNanos
		} else {
			byBlock[rec.Partition[e.Stage].Blocks[e.Block-rec.Partition[e.Stage].FirstBlock]] += e.EndNanos - e.StartNanos
		}
		bytesMoved += e.Bytes
	}
	wall, moved := pprofWall(p, func(*profile.Sample) bool { return true })
	if wall != stepWall {
		t.Errorf("wall total %d, want %d (steps × devices)", wall, stepWall)
	}
	if moved != bytesMoved {
		t.Errorf("moved total %d, want %d", moved, bytesMoved)
	}
	busy, _ := pprofWall(p, func(s *profile.Sample) bool { return s.Label["op"][0] != "idle" })
	if busy != wholeOps {
		t.Errorf("busy total %d, want %d (the whole ops' durations)", busy, wholeOps)
	}
	for op, want := range byOp {
		got, _ := pprofWall(p, func(s *profile.Sample) bool { return s.Label["op"][0] == op })
		if got != want {
			t.Errorf("op %s: wall %d, want %d", op, got, want)
		}
	}
	for block, want := range byBlock {
		got, _ := pprofWall(p, func(s *profile.Sample) bool { return pprofHasFrame(s, "block "+block) })
		if got != want {
			t.Errorf("block %s: wall %d, want %d", block, got, want)
		}
	}

	// Labels: one value per key; the common ones on every sample.
	for _, s := range p.Sample {
		for k, v := range s.Label {
			if len(v) != 1 {
				t.Errorf("label %s has %d values, want 1", k, len(v))
			}
		}
		for _, k := range []string{"run", "schedule", "device", "stage", "op"} {
			if len(s.Label[k]) == 0 {
				t.Errorf("sample %v: no %s label", s.Label, k)
			}
		}
		if op := s.Label["op"][0]; op != "idle" && op != "update" && len(s.Label["microbatch"]) == 0 {
			t.Errorf("sample %v: no microbatch label", s.Label)
		}
	}
	if got := p.Sample[0].Label["run"][0]; got != "r1" {
		t.Errorf("run label %q, want r1", got)
	}

	// A write → read → write round trip keeps everything.
	var again bytes.Buffer
	if err := p.Write(&again); err != nil {
		t.Fatal(err)
	}
	if got, want := pprofParse(t, again.Bytes()).String(), p.String(); got != want {
		t.Errorf("round trip differs:\n%s\nwant:\n%s", got, want)
	}
	checkGolden(t, "pprof_sample.txt", []byte(p.String()))
}

func TestWritePprofTopLevel(t *testing.T) {
	full := exportTestRecord()
	strip := func(keep func(e profiler.Event) bool) profiler.Record {
		r := exportTestRecord()
		r.Events = nil
		for _, e := range full.Events {
			if keep(e) {
				r.Events = append(r.Events, e)
			}
		}
		return r
	}
	compute := map[string]bool{"forward": true, "backward": true}
	tests := []struct {
		name string
		rec  profiler.Record
		// overhead says whether "(op overhead)" frames appear.
		overhead bool
	}{
		{name: "with blocks", rec: full, overhead: true},
		{name: "without blocks", rec: strip(func(e profiler.Event) bool { return e.Block < 0 })},
		{name: "blocks without their ops", rec: strip(func(e profiler.Event) bool { return e.Block >= 0 || !compute[e.Op] })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// With no op holding blocks, every event is top level.
			var top int64
			for _, e := range tt.rec.Events {
				if !tt.overhead || e.Block < 0 {
					top += e.EndNanos - e.StartNanos
				}
			}
			var buf bytes.Buffer
			if err := WritePprof(&buf, []profiler.Record{tt.rec}); err != nil {
				t.Fatal(err)
			}
			p := pprofParse(t, buf.Bytes())
			busy, _ := pprofWall(p, func(s *profile.Sample) bool { return s.Label["op"][0] != "idle" })
			if busy != top {
				t.Errorf("busy %d, want %d", busy, top)
			}
			idle, _ := pprofWall(p, func(s *profile.Sample) bool { return s.Label["op"][0] == "idle" })
			if want := (tt.rec.Steps[0].WallNanos+tt.rec.Steps[1].WallNanos)*2 - top; idle != want {
				t.Errorf("idle %d, want %d", idle, want)
			}
			hasOverhead := false
			for _, s := range p.Sample {
				hasOverhead = hasOverhead || pprofHasFrame(s, pprofOverheadFrame)
			}
			if hasOverhead != tt.overhead {
				t.Errorf("overhead frames %v, want %v", hasOverhead, tt.overhead)
			}
		})
	}
}

func TestWritePprofEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePprof(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if p := pprofParse(t, buf.Bytes()); len(p.Sample) != 0 {
		t.Errorf("%d samples, want 0", len(p.Sample))
	}
}

// TestWritePprofGoTool reads the profile with the pprof that ships with
// Go, as a person would.
func TestWritePprofGoTool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	path := filepath.Join(t.TempDir(), "runs.pb.gz")
	var buf bytes.Buffer
	if err := WritePprof(&buf, []profiler.Record{exportTestRecord()}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		flag string
		want []string
	}{
		{name: "top", flag: "-top", want: []string{"op forward", "op idle", "device cpu:1", "block layer1.0"}},
		{name: "tags", flag: "-tags", want: []string{"device", "cpu:0", "cpu:1", "op", "forward", "idle", "run", "r1", "microbatch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(goTool, "tool", "pprof", tt.flag, path).CombinedOutput()
			if err != nil {
				t.Fatalf("go tool pprof %s: %v\n%s", tt.flag, err, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("go tool pprof %s output lacks %q:\n%s", tt.flag, w, out)
				}
			}
		})
	}
}
