//go:build cudaemu

package emu

import (
	"fmt"
	"math"
	"testing"
)

func TestDriverMemory(t *testing.T) {
	d := NewDriver()
	p, err := d.Alloc(40)
	if err != nil {
		t.Fatal(err)
	}
	if free, total, _ := d.MemInfo(); total != TotalBytes || free != TotalBytes-40 {
		t.Errorf("MemInfo: got %d free of %d, want %d of %d", free, total, TotalBytes-40, int64(TotalBytes))
	}
	fresh := make([]float32, 10)
	if err := d.Download(fresh, p); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(fresh[3])) {
		t.Errorf("fresh memory holds %v, want NaN", fresh[3])
	}
	if err := d.Upload(p.Add(2), []float32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := d.Memset32(p.Add(5), math.Float32bits(7), 5); err != nil {
		t.Fatal(err)
	}
	q, _ := d.Alloc(40)
	e := NewDriver()
	r, _ := e.Alloc(40)
	if err := d.Copy(q, p, 40); err != nil {
		t.Fatal(err)
	}
	if err := e.CopyFrom(r, d, q, 40); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 8)
	if err := e.Download(got, r.Add(2)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1 2 3 7 7 7 7 7]" {
		t.Errorf("after upload, memset, copy and peer copy: got %v, want [1 2 3 7 7 7 7 7]", got)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"upload past the end", d.Upload(p.Add(8), []float32{1, 2, 3})},
		{"download before the start", d.Download(got, p-4)},
		{"copy from another device's memory", d.Copy(q, r, 4)},
		{"memset of a freed block", func() error { d.Free(q); return d.Memset32(q, 0, 1) }()},
		{"free twice", d.Free(q)},
		{"free inside a block", d.Free(p.Add(1))},
	} {
		if tc.err == nil {
			t.Errorf("%s: got no error", tc.name)
		}
	}
	if err := d.Free(p); err != nil {
		t.Error(err)
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
	if err := e.Close(); err == nil {
		t.Error("close with a block still allocated: got no error")
	}
}
