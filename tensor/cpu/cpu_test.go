package cpu_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/tensortest"
)

func TestSuite(t *testing.T) {
	tensortest.Run(t, func(index, threads int) tensor.Device {
		return cpu.New(tensor.Options{Index: index, Threads: threads})
	})
}

func TestRegistered(t *testing.T) {
	d, err := tensor.Open("cpu", tensor.Options{Index: 2, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Name() != "cpu:2" || d.Threads() != 2 || d.Backend() != "cpu" {
		t.Errorf("got %s with %d threads on %s, want cpu:2 with 2 threads on cpu", d.Name(), d.Threads(), d.Backend())
	}
	if _, err := tensor.Open("nosuch", tensor.Options{Threads: 1}); err == nil {
		t.Error("Open of an unknown backend: got no error")
	}
}
