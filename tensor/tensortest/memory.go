package tensortest

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func testMemory(t *testing.T, dev tensor.Device) {
	dev.ResetPeak()
	base := dev.Memory()
	w := dev.Alloc(tensor.Weights, 3, 5)     // 60 bytes
	a := dev.Alloc(tensor.Activations, 2, 7) // 56 bytes
	if got := tensor.ToHost(a); len(got) != 14 || got[0] != 0 || got[13] != 0 {
		t.Errorf("Alloc: got %v, want 14 zeros", got)
	}
	m := dev.Memory()
	if got, want := m.LiveBytes[tensor.Weights]-base.LiveBytes[tensor.Weights], int64(60); got != want {
		t.Errorf("live weights: got %d, want %d", got, want)
	}
	if got, want := m.LiveTotalBytes-base.LiveTotalBytes, int64(116); got != want {
		t.Errorf("live total: got %d, want %d", got, want)
	}
	a.Release()
	b := dev.Alloc(tensor.Activations, 4) // 16 bytes: below the peak of 56
	m = dev.Memory()
	if got, want := m.LiveBytes[tensor.Activations], int64(16); got != want {
		t.Errorf("live activations after release: got %d, want %d", got, want)
	}
	if got, want := m.PeakBytes[tensor.Activations], int64(56); got != want {
		t.Errorf("peak activations: got %d, want %d", got, want)
	}
	if got, want := m.PeakTotalBytes, int64(116); got != want {
		t.Errorf("peak total: got %d, want %d", got, want)
	}
	dev.Retag(b, tensor.Boundary)
	m = dev.Memory()
	if m.LiveBytes[tensor.Activations] != 0 || m.LiveBytes[tensor.Boundary] != 16 || b.Category() != tensor.Boundary {
		t.Errorf("retag: activations %d, boundary %d, category %v; want 0, 16, boundary",
			m.LiveBytes[tensor.Activations], m.LiveBytes[tensor.Boundary], b.Category())
	}
	dev.ResetPeak()
	m = dev.Memory()
	if m.PeakTotalBytes != m.LiveTotalBytes || m.PeakBytes[tensor.Activations] != 0 {
		t.Errorf("ResetPeak: peak total %d, live total %d, peak activations %d", m.PeakTotalBytes, m.LiveTotalBytes, m.PeakBytes[tensor.Activations])
	}
	w.Release()
	b.Release()
	if m := dev.Memory(); m.LiveTotalBytes != 0 {
		t.Errorf("after releasing all: %d bytes live", m.LiveTotalBytes)
	}
}

func testViews(t *testing.T, dev tensor.Device) {
	data := make([]float32, 24)
	for i := range data {
		data[i] = float32(i)
	}
	x := upload(dev, tensor.Activations, tensor.Shape{4, 2, 3}, data)
	mid := x.Slice(1, 3)
	if !mid.Shape().Equal(tensor.Shape{2, 2, 3}) {
		t.Errorf("Slice shape: got %v, want [2 2 3]", mid.Shape())
	}
	if got := tensor.ToHost(mid); got[0] != 6 || got[11] != 17 {
		t.Errorf("Slice data: got %v, want 6..17", got)
	}
	flat := mid.Reshape(12)
	dev.Fill(flat, 9)
	if got := tensor.ToHost(x); got[5] != 5 || got[6] != 9 || got[17] != 9 || got[18] != 18 {
		t.Errorf("Fill through a view wrote outside it: %v", got)
	}
	before := dev.Memory().LiveTotalBytes
	x.Release()
	if dev.Memory().LiveTotalBytes != before {
		t.Errorf("storage freed while views still hold it")
	}
	if x.Refs() != 2 {
		t.Errorf("refs: got %d, want 2", x.Refs())
	}
	mid.Release()
	flat.Release()
}

func testCopy(t *testing.T, dev tensor.Device) {
	rng := newRand(1)
	for _, n := range []int{1, 2, 3, 5, 10, 11, 50, 1001} {
		src := randSlice(rng, n)
		x := upload(dev, tensor.Activations, tensor.Shape{n}, src)
		g := newGuarded(dev, tensor.Activations, tensor.Shape{n}, nil)
		dev.Copy(g.T, x)
		compare(t, "Copy", g.check(t, "Copy"), widen(src), 0, 0)
		g2 := newGuarded(dev, tensor.Comm, tensor.Shape{n}, nil)
		dev.CopyFrom(g2.T, x)
		compare(t, "CopyFrom", g2.check(t, "CopyFrom"), widen(src), 0, 0)
		x.Release()
		g.release()
		g2.release()
	}
}

func testCrossDeviceCopy(t *testing.T, a, b tensor.Device) {
	src := randSlice(newRand(2), 37)
	x := upload(a, tensor.Activations, tensor.Shape{37}, src)
	g := newGuarded(b, tensor.Comm, tensor.Shape{37}, nil)
	b.CopyFrom(g.T, x)
	compare(t, "CopyFrom across devices", g.check(t, "CopyFrom across devices"), widen(src), 0, 0)
	if got := b.Memory().LiveBytes[tensor.Comm]; got != int64(4*(37+2*guardElems)) {
		t.Errorf("receiver's comm bytes: got %d, want %d", got, 4*(37+2*guardElems))
	}
	x.Release()
	g.release()
}
