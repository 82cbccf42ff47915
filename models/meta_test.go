package models

import (
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/meta"
)

// Describe opens the meta backend by name and the package does not import
// it: importing it here links it into the package's tests.

func TestOpenCountingNeedsTheBackend(t *testing.T) {
	_, _, err := openCounting("no-such-backend")
	if err == nil {
		t.Fatal("got no error for an unregistered backend")
	}
	for _, want := range []string{`"no-such-backend"`, `import _ "github.com/pipecast/pipecast/tensor/meta"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, _, err := openCounting(tensor.CPUBackend); err == nil || !strings.Contains(err.Error(), "multiply-accumulates") {
		t.Errorf("cpu backend: got %v, want an error saying it counts no multiply-accumulates", err)
	}
}

// convCounter is a meta device that counts the convolutions run on it, as
// a wrapper that records kernels (gemmbench's) does.
type convCounter struct {
	*meta.Device
	convs int
}

func (c *convCounter) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	c.convs++
	c.Device.Conv2DForward(x, w, bias, y, p)
}

// TestBuildLeavesTheDeviceAlone checks that Build measures costs on a
// device of its own: nothing runs on the device it builds on, even when
// that device counts multiply-accumulates itself, and the costs equal
// Describe's.
func TestBuildLeavesTheDeviceAlone(t *testing.T) {
	dev := &convCounter{Device: meta.New()}
	cfg := Config{Image: 32, Classes: 10, Width: 1.0 / 16}
	m, err := Build(dev, "resnet50", cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	if dev.convs != 0 || dev.MACs() != 0 {
		t.Errorf("Build ran %d convolutions (%d MACs) on the device, want none", dev.convs, dev.MACs())
	}
	d, err := Describe("resnet50", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range m.Blocks {
		if got, want := b.Cost, d.Blocks[i].Cost; got != want {
			t.Errorf("block %s: cost %+v, Describe's %+v", b.Name, got, want)
		}
	}
	if m.MACs() == 0 {
		t.Error("the built model has no MACs")
	}
}
