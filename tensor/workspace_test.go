package tensor_test

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

type constWorkspace int

func (c constWorkspace) ConvWorkspaceElems(tensor.ConvPass, tensor.Shape, tensor.Shape, tensor.Shape, tensor.Conv2DParams, int) int {
	return int(c)
}

func (c constWorkspace) GemmWorkspaceElems(m, n, k, threads int) int { return int(c) }

func TestWorkspaceModelRegistry(t *testing.T) {
	if _, ok := tensor.LookupWorkspaceModel(tensor.CPUBackend); !ok {
		t.Errorf("the cpu backend registered no workspace model")
	}
	name := uniqueName("workspace")
	if m, ok := tensor.LookupWorkspaceModel(name); ok || m != nil {
		t.Errorf("%s before registration: got %v, %v; want nil, false", name, m, ok)
	}
	tensor.RegisterWorkspaceModel(name, constWorkspace(7))
	m, ok := tensor.LookupWorkspaceModel(name)
	if !ok || m.GemmWorkspaceElems(1, 1, 1, 1) != 7 {
		t.Errorf("%s after registration: got %v, %v; want the registered model", name, m, ok)
	}
	for _, tc := range []struct {
		name    string
		backend string
		model   tensor.WorkspaceModel
	}{
		{name: "twice", backend: name, model: constWorkspace(8)},
		{name: "nil model", backend: uniqueName("workspace"), model: nil},
		{name: "no name", backend: "", model: constWorkspace(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("got no panic")
				}
			}()
			tensor.RegisterWorkspaceModel(tc.backend, tc.model)
		})
	}
}

// symbolicDevice is a device that reports whether it is symbolic; its
// other methods are never called.
type symbolicDevice struct {
	tensor.Device
	symbolic bool
}

func (d symbolicDevice) Symbolic() bool { return d.symbolic }

func TestIsSymbolic(t *testing.T) {
	dev := cpu.New(tensor.Options{Threads: 1})
	defer dev.Close()
	for _, tc := range []struct {
		name string
		dev  tensor.Device
		want bool
	}{
		{name: "cpu", dev: dev, want: false},
		{name: "symbolic", dev: symbolicDevice{symbolic: true}, want: true},
		{name: "says it holds values", dev: symbolicDevice{symbolic: false}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tensor.IsSymbolic(tc.dev); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
