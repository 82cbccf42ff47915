package tensor

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ErrNotImplemented is returned by backends for what they do not support
// yet.
var ErrNotImplemented = errors.New("not implemented")

// Names of backends that other packages reach through the registry
// rather than by importing them.
const (
	// CPUBackend is the name of the pure-Go backend, package tensor/cpu.
	CPUBackend = "cpu"
	// MetaBackend is the name of the backend without storage or compute,
	// package tensor/meta, on which models are described and memory is
	// forecast.
	MetaBackend = "meta"
)

// Options configure one device of a backend.
type Options struct {
	// Index numbers the device within its process (cpu:0, cpu:1, …); on
	// a GPU backend it also selects the physical device, modulo the count.
	Index int
	// Threads is the number of worker threads the device's kernels use;
	// at least 1.
	Threads int
}

// Backend is a named way to open devices.
type Backend struct {
	Name        string
	Description string
	// Open returns a new device.
	Open func(Options) (Device, error)
	// Memory, when set, returns the free bytes of each physical device
	// the backend's devices are placed on (device k on entry k mod the
	// count): a GPU backend's memory, which the checks before a run
	// compare forecast peaks with. Nil for backends whose devices use
	// host memory.
	Memory func() ([]int64, error)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Backend{}
)

// Register makes a backend available by name; backends call it from init.
// Registering a name twice panics.
func Register(b Backend) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if b.Name == "" || b.Open == nil {
		panic("tensor: Register of a backend without a name or Open")
	}
	if _, dup := registry[b.Name]; dup {
		panic("tensor: backend " + b.Name + " registered twice")
	}
	registry[b.Name] = b
}

// Backends returns the registered backends sorted by name.
func Backends() []Backend {
	registryMu.Lock()
	defer registryMu.Unlock()
	bs := make([]Backend, 0, len(registry))
	for _, b := range registry {
		bs = append(bs, b)
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	return bs
}

// Lookup returns the backend registered under name.
func Lookup(name string) (Backend, error) {
	registryMu.Lock()
	b, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		names := make([]string, 0)
		for _, b := range Backends() {
			names = append(names, b.Name)
		}
		return Backend{}, fmt.Errorf("unknown backend %q (available: %s)", name, strings.Join(names, ", "))
	}
	return b, nil
}

// Open opens a device of the named backend.
func Open(name string, opts Options) (Device, error) {
	b, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if opts.Threads < 1 {
		return nil, fmt.Errorf("open %s device %d: threads must be ≥ 1, got %d", name, opts.Index, opts.Threads)
	}
	d, err := b.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("open %s device %d: %w", name, opts.Index, err)
	}
	return d, nil
}
