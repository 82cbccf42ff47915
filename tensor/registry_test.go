package tensor_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// The registry is process-wide and keeps what is registered, so every
// backend these tests register gets a fresh name no real backend uses:
// the tests must pass again under -count=N.
var registered atomic.Int64

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, registered.Add(1))
}

func TestRegisterDuplicatePanics(t *testing.T) {
	b := tensor.Backend{Name: uniqueName("registry-test-duplicate"), Description: "a test backend",
		Open: func(tensor.Options) (tensor.Device, error) { return nil, tensor.ErrNotImplemented }}
	tensor.Register(b)
	mustPanic(t, "tensor: backend "+b.Name+" registered twice", func() { tensor.Register(b) })
	mustPanic(t, "tensor: backend cpu registered twice", func() {
		tensor.Register(tensor.Backend{Name: cpu.BackendName, Open: b.Open})
	})
}

func TestRegisterIncompletePanics(t *testing.T) {
	open := func(tensor.Options) (tensor.Device, error) { return nil, nil }
	tests := []struct {
		name string
		b    tensor.Backend
	}{
		{name: "no name", b: tensor.Backend{Open: open}},
		{name: "no open", b: tensor.Backend{Name: "registry-test-no-open"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustPanic(t, "tensor: Register of a backend without a name or Open", func() { tensor.Register(tc.b) })
		})
	}
	if _, err := tensor.Lookup("registry-test-no-open"); err == nil {
		t.Error("a backend whose registration panicked is registered")
	}
}

func TestBackendsSorted(t *testing.T) {
	aaa := uniqueName("registry-test-aaa")
	tensor.Register(tensor.Backend{Name: aaa, Description: "sorts first",
		Open: func(tensor.Options) (tensor.Device, error) { return nil, tensor.ErrNotImplemented }})
	bs := tensor.Backends()
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Errorf("Backends not sorted by name: %v", names)
		}
	}
	for _, want := range []string{"cpu", aaa} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("Backends: got %v, want it to include %s", names, want)
		}
	}
}

func TestLookup(t *testing.T) {
	b, err := tensor.Lookup("cpu")
	if err != nil || b.Name != "cpu" || b.Description == "" || b.Open == nil {
		t.Errorf("Lookup(cpu): got %+v, %v", b, err)
	}
	_, err = tensor.Lookup("nosuch")
	if err == nil {
		t.Fatal("Lookup(nosuch): got no error")
	}
	for _, want := range []string{`unknown backend "nosuch"`, "available:", "cpu"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Lookup(nosuch) error %q does not contain %q", err, want)
		}
	}
}

func TestOpen(t *testing.T) {
	errBroken := errors.New("no such hardware")
	broken := uniqueName("registry-test-broken")
	tensor.Register(tensor.Backend{Name: broken, Description: "fails to open",
		Open: func(tensor.Options) (tensor.Device, error) { return nil, errBroken }})
	tests := []struct {
		name    string
		backend string
		opts    tensor.Options
		wantErr []string
		wantIs  error
	}{
		{name: "cpu", backend: "cpu", opts: tensor.Options{Index: 1, Threads: 2}},
		{name: "zero threads", backend: "cpu", opts: tensor.Options{Index: 3, Threads: 0},
			wantErr: []string{"open cpu device 3", "threads must be ≥ 1, got 0"}},
		{name: "negative threads", backend: "cpu", opts: tensor.Options{Threads: -2},
			wantErr: []string{"threads must be ≥ 1, got -2"}},
		{name: "unknown backend", backend: "nosuch", opts: tensor.Options{Threads: 1},
			wantErr: []string{`unknown backend "nosuch"`}},
		{name: "backend fails", backend: broken, opts: tensor.Options{Index: 2, Threads: 1},
			wantErr: []string{"open " + broken + " device 2: no such hardware"}, wantIs: errBroken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tensor.Open(tc.backend, tc.opts)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if d.Name() != "cpu:1" || d.Threads() != 2 {
					t.Errorf("got %s with %d threads, want cpu:1 with 2", d.Name(), d.Threads())
				}
				return
			}
			if err == nil {
				d.Close()
				t.Fatal("got no error")
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %q does not wrap %q", err, tc.wantIs)
			}
		})
	}
}
