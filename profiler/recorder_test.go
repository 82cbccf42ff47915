package profiler

import (
	"reflect"
	"testing"
)

func TestRecorder(t *testing.T) {
	r := NewRecorder(3)
	want := []Event{
		{Step: 1, Op: "forward", Micro: 0, Block: -1, StartNanos: 1000, EndNanos: 1500},
		{Step: 1, Op: "send", Micro: 0, Peer: 1, Block: -1, StartNanos: 1500, EndNanos: 1600, Bytes: 64},
		{Step: 1, Op: "backward", Micro: 0, Block: 2, StartNanos: 1700, EndNanos: 2000},
	}
	for _, e := range want {
		r.Record(e)
	}
	if !reflect.DeepEqual(r.Events(), want) || r.Len() != 3 || r.Growths() != 0 {
		t.Fatalf("Events() = %v (len %d, growths %d), want %v without growing", r.Events(), r.Len(), r.Growths(), want)
	}
	rel := r.AppendRelative(nil, 1000)
	if rel[0].StartNanos != 0 || rel[0].EndNanos != 500 || rel[2].StartNanos != 700 || rel[2].EndNanos != 1000 {
		t.Errorf("AppendRelative(nil, 1000) = %v, want times shifted by −1000", rel)
	}
	if r.Events()[0].StartNanos != 1000 {
		t.Errorf("AppendRelative changed the recorder's events")
	}
	r.Record(Event{Op: "update"})
	if r.Growths() != 1 || r.Len() != 4 {
		t.Errorf("a fourth event in a buffer of 3: growths %d, len %d; want 1, 4", r.Growths(), r.Len())
	}
	r.Reset()
	if r.Len() != 0 || len(r.Events()) != 0 || r.Growths() != 1 {
		t.Errorf("after Reset: len %d, growths %d; want 0, 1", r.Len(), r.Growths())
	}
	// The grown buffer is kept: four more events fit without growing.
	for range 4 {
		r.Record(Event{Op: "forward"})
	}
	if r.Growths() != 1 {
		t.Errorf("refilling the kept buffer grew it: growths %d, want 1", r.Growths())
	}
}

func TestRecorderNilIsOff(t *testing.T) {
	var r *Recorder
	r.Record(Event{Op: "forward"})
	r.Reset()
	if r.Enabled() || r.Events() != nil || r.Len() != 0 || r.Growths() != 0 || r.AppendRelative(nil, 5) != nil {
		t.Errorf("a nil Recorder recorded something")
	}
	if !NewRecorder(0).Enabled() {
		t.Errorf("NewRecorder(0).Enabled() = false, want true")
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	const n = 1000
	r := NewRecorder(n)
	e := Event{Op: "forward", Block: -1, StartNanos: 1, EndNanos: 2}
	allocs := testing.AllocsPerRun(5, func() {
		r.Reset()
		for range n {
			r.Record(e)
		}
	})
	if allocs != 0 || r.Growths() != 0 {
		t.Errorf("recording %d events in a buffer of %d: %v allocations, %d growths; want 0, 0", n, n, allocs, r.Growths())
	}
}

// benchmarkRecord records b.N events in buffers of 4096, resetting when
// full as the runner does every step.
func benchmarkRecord(b *testing.B, r *Recorder) {
	e := Event{Step: 1, Op: "forward", Micro: 3, Shard: -1, Peer: -1, Block: -1, StartNanos: 10, EndNanos: 20}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%4096 == 0 {
			r.Reset()
		}
		e.StartNanos = int64(i)
		r.Record(e)
	}
	if r.Growths() != 0 {
		b.Fatalf("the buffer grew %d times", r.Growths())
	}
}

func BenchmarkRecord(b *testing.B)    { benchmarkRecord(b, NewRecorder(4096)) }
func BenchmarkRecordOff(b *testing.B) { benchmarkRecord(b, nil) }
