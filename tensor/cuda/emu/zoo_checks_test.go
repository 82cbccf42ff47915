//go:build cudaemu

package emu

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// checks collects the comparisons of the checked devices of the run under
// way (they may run on several goroutines at once).
var checks kernelChecks

type kernelChecks struct {
	mu    sync.Mutex
	ops   map[string]*opCheck
	convs map[string]bool
}

// opCheck is what the comparisons of one kernel (and convolution
// geometry) found: how many launches, the largest difference relative to
// its bound and where, and the launches that failed.
type opCheck struct {
	launches int
	worst    float64
	where    string
	failed   int
	first    []string
}

func (k *kernelChecks) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops, k.convs = map[string]*opCheck{}, map[string]bool{}
}

// take returns what was recorded since reset.
func (k *kernelChecks) take() *kernelChecks {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := &kernelChecks{ops: k.ops, convs: k.convs}
	k.ops, k.convs = map[string]*opCheck{}, map[string]bool{}
	return out
}

func (k *kernelChecks) conv(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.convs[name] = true
}

func (k *kernelChecks) op(name string) *opCheck {
	c := k.ops[name]
	if c == nil {
		c = &opCheck{}
		k.ops[name] = c
	}
	return c
}

// record compares output out of a launch of op: got is the emulator's,
// want the CPU's, bound each element's bound (nil: they must be equal).
func (k *kernelChecks) record(op string, out int, args []*tensor.Tensor, got, want []float32, bound []float64) {
	worst, at, bad, badAt := 0.0, 0, 0, -1
	for i := range want {
		diff := math.Abs(float64(got[i]) - float64(want[i]))
		var b float64
		if bound != nil {
			b = bound[i]
		}
		r := 0.0
		switch {
		case diff == 0:
		case b > 0:
			r = diff / b
		default:
			r = math.Inf(1)
		}
		if math.IsNaN(diff) {
			r = math.Inf(1)
		}
		if r > worst {
			worst, at = r, i
		}
		if !(r <= kernelTol) {
			if badAt < 0 {
				badAt = i
			}
			bad++
		}
	}
	var shapes []string
	for _, a := range args {
		if a != nil {
			shapes = append(shapes, fmt.Sprint(a.Shape()))
		} else {
			shapes = append(shapes, "nil")
		}
	}
	where := fmt.Sprintf("%s, output %d element %d", strings.Join(shapes, " "), out, at)
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.op(op)
	if worst > c.worst {
		c.worst, c.where = worst, where
	}
	if bad > 0 {
		c.failed++
		if len(c.first) < 3 {
			b := 0.0
			if bound != nil {
				b = bound[badAt]
			}
			c.first = append(c.first, fmt.Sprintf("args %s: output %d differs in %d of %d elements, first at %d: %v on the emulator, %v on the CPU (bound %.3g)",
				strings.Join(shapes, " "), out, bad, len(want), badAt, got[badAt], want[badAt], b))
		}
	}
}

// launched counts a launch of op.
func (k *kernelChecks) launched(op string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.op(op).launches++
}

// recordScalar compares a kernel's returned value.
func (k *kernelChecks) recordScalar(op, where string, got, want, bound float64) {
	diff := math.Abs(got - want)
	r := 0.0
	if diff > 0 || math.IsNaN(diff) {
		r = diff / bound
		if math.IsNaN(r) {
			r = math.Inf(1)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.op(op)
	c.launches++
	if r > c.worst {
		c.worst, c.where = r, where
	}
	if !(r <= kernelTol) {
		c.failed++
		if len(c.first) < 3 {
			c.first = append(c.first, fmt.Sprintf("%s: %v on the emulator, %v on the CPU (bound %.3g)", where, got, want, bound))
		}
	}
}

// launches returns the kernel launches compared.
func (k *kernelChecks) launches() int {
	n := 0
	for name, c := range k.ops {
		if !strings.HasSuffix(name, " loss") {
			n += c.launches
		}
	}
	return n
}

// check fails t for every kernel whose outputs differed beyond kernelTol
// and logs the largest relative difference of every kernel.
func (k *kernelChecks) check(t *testing.T) {
	t.Helper()
	names := make([]string, 0, len(k.ops))
	for n := range k.ops {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		c := k.ops[n]
		if c.failed > 0 {
			t.Errorf("%s: %d comparisons beyond %.0e of the bound: %s", n, c.failed, kernelTol, strings.Join(c.first, "; "))
		}
		lines = append(lines, fmt.Sprintf("%s ×%d %.2g", n, c.launches, c.worst))
	}
	if len(names) == 0 {
		t.Errorf("no kernel was compared")
	}
	t.Logf("largest difference / bound by kernel: %s", strings.Join(lines, ", "))
}
