package profiler

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/pipecast/pipecast/tensor"
)

// MemoryTrack is a device's live memory over one measured step: the live
// bytes by category when the step began and every change after, so that
// replaying the changes gives the live bytes at any time of the step.
// Replaying them reproduces the step's peaks, PeakBytesByCategory and
// PeakBytes, exactly (unless DroppedChanges is positive). Those are the
// step's own peaks; the device's peaks are the largest over all measured
// steps, so they may be larger.
type MemoryTrack struct {
	// Step is the measured step the track covers (a Step.Step value).
	Step int `json:"step"`
	// Categories names the memory categories a change refers to by index.
	Categories []string `json:"categories"`
	// StartLiveBytesByCategory are the live bytes when the step began,
	// before its batch was uploaded.
	StartLiveBytesByCategory map[string]int64 `json:"start_live_bytes_by_category"`
	// PeakBytesByCategory and PeakBytes are the step's own peaks.
	PeakBytesByCategory map[string]int64 `json:"peak_bytes_by_category"`
	PeakBytes           int64            `json:"peak_bytes"`
	// Changes are the changes of the live bytes in the order they
	// happened.
	Changes []MemoryChange `json:"changes"`
	// CoalescedChanges counts changes merged into the one before them
	// (same category and sign, less than tensor.MemCoalesceNanos apart:
	// merging them loses no peak); DroppedChanges counts changes left
	// out because the device's buffer was full, in which case Changes
	// end early and do not replay to the peaks.
	CoalescedChanges int64 `json:"coalesced_changes"`
	DroppedChanges   int64 `json:"dropped_changes"`
}

// MemoryChange is one change of a device's live bytes. In JSON it is an
// array [nanos, category, bytes, event], to keep long tracks small.
type MemoryChange struct {
	// Nanos is the time from the step's start; changes before it (the
	// batch's upload) are at 0.
	Nanos int64
	// Category indexes the track's Categories.
	Category int
	// Bytes is the change: positive for bytes allocated into the
	// category (or moved into it), negative for bytes released (or moved
	// out).
	Bytes int64
	// Event indexes the record's Events: the innermost event (a block
	// within an op, or the op) whose span holds the change, what the
	// device was running when the bytes changed; −1 for none.
	Event int
}

// MarshalJSON writes c as [nanos, category, bytes, event].
func (c MemoryChange) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32)
	b = append(b, '[')
	b = strconv.AppendInt(b, c.Nanos, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(c.Category), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, c.Bytes, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(c.Event), 10)
	return append(b, ']'), nil
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (c *MemoryChange) UnmarshalJSON(data []byte) error {
	var a []int64
	if err := json.Unmarshal(data, &a); err != nil {
		return fmt.Errorf("memory change: %w", err)
	}
	if len(a) != 4 {
		return fmt.Errorf("memory change %s: want [nanos, category, bytes, event]", data)
	}
	*c = MemoryChange{Nanos: a[0], Category: int(a[1]), Bytes: a[2], Event: int(a[3])}
	return nil
}

// MemoryTrackOf returns a device's timeline in the form Build takes:
// times from origin (the step's start on the timeline's clock), events
// not yet attributed. Build fills in the step, its peaks and the events.
func MemoryTrackOf(tl tensor.MemTimeline, origin int64) *MemoryTrack {
	t := &MemoryTrack{
		Categories:               make([]string, tensor.NumCategories),
		StartLiveBytesByCategory: make(map[string]int64, tensor.NumCategories),
		Changes:                  make([]MemoryChange, len(tl.Changes)),
		CoalescedChanges:         tl.Coalesced,
		DroppedChanges:           tl.Dropped,
	}
	for c := range tensor.NumCategories {
		name := tensor.Category(c).String()
		t.Categories[c] = name
		t.StartLiveBytesByCategory[name] = tl.StartLiveBytes[c]
	}
	for i, ch := range tl.Changes {
		t.Changes[i] = MemoryChange{Nanos: max(ch.Nanos-origin, 0), Category: int(ch.Category), Bytes: ch.Bytes, Event: -1}
	}
	return t
}

// Shift moves every change by ns, as moving the step's events onto
// another clock does.
func (t *MemoryTrack) Shift(ns int64) {
	for i := range t.Changes {
		t.Changes[i].Nanos += ns
	}
}

// MemoryPoint is the live bytes after one change of a track.
type MemoryPoint struct {
	Nanos int64
	// LiveBytes holds the live bytes by the track's categories, in the
	// order of Categories; TotalBytes their sum.
	LiveBytes  []int64
	TotalBytes int64
	// Change indexes the track's Changes (−1: the start).
	Change int
}

// Points replays the track: the live bytes at the start, then after
// every change. Changes naming a category outside Categories are skipped.
func (t *MemoryTrack) Points() []MemoryPoint {
	live := make([]int64, len(t.Categories))
	var total int64
	for i, name := range t.Categories {
		live[i] = t.StartLiveBytesByCategory[name]
		total += live[i]
	}
	out := make([]MemoryPoint, 0, len(t.Changes)+1)
	out = append(out, MemoryPoint{LiveBytes: slices.Clone(live), TotalBytes: total, Change: -1})
	for i, ch := range t.Changes {
		if ch.Category < 0 || ch.Category >= len(live) {
			continue
		}
		live[ch.Category] += ch.Bytes
		total += ch.Bytes
		out = append(out, MemoryPoint{Nanos: ch.Nanos, LiveBytes: slices.Clone(live), TotalBytes: total, Change: i})
	}
	return out
}

// ReplayPeaks returns the peaks that replaying the track gives: by
// category name and of the total. For a track without dropped changes
// they equal PeakBytesByCategory and PeakBytes.
func (t *MemoryTrack) ReplayPeaks() (byCategory map[string]int64, total int64) {
	byCategory = make(map[string]int64, len(t.Categories))
	for i, p := range t.Points() {
		for c, name := range t.Categories {
			if i == 0 || p.LiveBytes[c] > byCategory[name] {
				byCategory[name] = p.LiveBytes[c]
			}
		}
		total = max(total, p.TotalBytes)
	}
	return byCategory, total
}

// PeakPoint returns the first point of the track's replay at which the
// total live bytes are largest.
func (t *MemoryTrack) PeakPoint() MemoryPoint {
	points := t.Points()
	best := points[0]
	for _, p := range points[1:] {
		if p.TotalBytes > best.TotalBytes {
			best = p
		}
	}
	return best
}

// memoryTrack returns device d's track for the record: the first
// measured step's that has one, with that step's number and peaks, and
// each change attributed to the record's events. It returns nil if no
// step tracked the device's memory.
func (r *Run) memoryTrack(d int) *MemoryTrack {
	offset := 0 // index in the record's Events of this step's device d's first event
	for _, s := range r.Steps {
		for dd, ds := range s.Devices {
			if dd == d && ds.MemoryTrack != nil {
				t := *ds.MemoryTrack
				t.Step = s.Step
				t.Categories = slices.Clone(t.Categories)
				t.StartLiveBytesByCategory = maps.Clone(t.StartLiveBytesByCategory)
				t.PeakBytesByCategory = maps.Clone(ds.PeakBytesByCategory)
				t.PeakBytes = ds.PeakBytes
				t.Changes = attributeChanges(t.Changes, ds.Events, offset)
				return &t
			}
			offset += len(ds.Events)
		}
	}
	return nil
}

// attributeChanges returns a copy of changes, each naming the innermost
// of events (indexed from offset) whose span holds its time. Events of
// one device are disjoint or nested (blocks within their op), so a sweep
// over events sorted by start with a stack of the open ones finds it.
// changes are in time order.
func attributeChanges(changes []MemoryChange, events []Event, offset int) []MemoryChange {
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		x, y := events[order[a]], events[order[b]]
		if x.StartNanos != y.StartNanos {
			return x.StartNanos < y.StartNanos
		}
		return x.EndNanos > y.EndNanos // outer first
	})
	out := make([]MemoryChange, len(changes))
	var open []int
	next := 0
	for i, ch := range changes {
		for next < len(order) && events[order[next]].StartNanos <= ch.Nanos {
			e := order[next]
			for len(open) > 0 && events[open[len(open)-1]].EndNanos < events[e].StartNanos {
				open = open[:len(open)-1]
			}
			open = append(open, e)
			next++
		}
		for len(open) > 0 && events[open[len(open)-1]].EndNanos < ch.Nanos {
			open = open[:len(open)-1]
		}
		ch.Event = -1
		if len(open) > 0 {
			ch.Event = offset + open[len(open)-1]
		}
		out[i] = ch
	}
	return out
}
