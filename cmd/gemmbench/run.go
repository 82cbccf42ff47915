package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/pipecast/pipecast/internal/cpucache"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
)

// refBackend is the backend the openblas build tag registers (see
// tensor/cpu/openblas.go); without the tag only pipecast is measured.
const refBackend = "openblas"

func run(out, progress io.Writer, o options) error {
	sides := []side{{name: "pipecast", dev: cpu.New(tensor.Options{Threads: o.threads}), settle: pipecastSettle}}
	refDesc := "not in this build (build with -tags openblas)"
	if b, err := tensor.Lookup(refBackend); err == nil {
		dev, err := b.Open(tensor.Options{Index: 1, Threads: o.threads})
		if err != nil {
			return err
		}
		sides = append(sides, side{name: "OpenBLAS", dev: dev, settle: openblasSettle})
		refDesc = b.Description
	}
	defer func() {
		for _, s := range sides {
			s.dev.Close()
		}
	}()

	var loads []workload
	for _, m := range o.models {
		for _, ib := range workloadsFor(m, o) {
			w, err := stepProducts(m, ib[0], ib[1], o.threads)
			if err != nil {
				return err
			}
			loads = append(loads, w)
		}
	}

	// The header: aligned lines, or a markdown list.
	head := func(key, format string, args ...any) {
		if o.markdown {
			fmt.Fprintf(out, "- %s: %s\n", key, fmt.Sprintf(format, args...))
			return
		}
		fmt.Fprintf(out, "%-10s %s\n", key+":", fmt.Sprintf(format, args...))
	}
	head("CPU", "%s (%d logical CPUs)", cpuModel(), runtime.NumCPU())
	head("ISA", "%s", cpu.InstructionSets())
	head("caches", "%s", cpucache.Format(cpucache.Levels()))
	head("date", "%s", time.Now().Format("2006-01-02 15:04 MST"))
	head("go", "%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	mr, nr, kc, mc, nc := cpu.GemmBlocking()
	head("pipecast", "GEMM kernel %s (%d×%d; KC %d, MC %d, NC %d from the caches), %d threads", cpu.GemmKernel(), mr, nr, kc, mc, nc, o.threads)
	head("OpenBLAS", "%s", refDesc)
	head("timing", "median over %d repetitions per product and side (each ≥ %v, sides alternating) of each repetition's median call", o.reps, o.minTime)
	if len(sides) > 1 {
		head("ratio", "pipecast's GFLOP/s over OpenBLAS's (above 1: pipecast is faster)")
	}
	fmt.Fprintln(out)

	t := newTable(out, o.markdown, sides)
	// A model's largest products are indented under its aggregate; a
	// markdown cell would drop leading spaces.
	indent := "  "
	if o.markdown {
		indent = "↳ "
	}
	b := &bench{sides: sides, o: o, progress: progress}
	for _, s := range o.squares {
		p := product{m: s, n: s, k: s}
		tm, err := b.time(p)
		if err != nil {
			return err
		}
		t.row(fmt.Sprintf("square %d", s), p.String(), "", "", p.flops(), tm)
	}
	for _, w := range loads {
		times := make(map[product]timing, len(w.uses))
		var total float64
		agg := make(timing, len(sides))
		for _, u := range w.uses {
			tm, err := b.time(u.product)
			if err != nil {
				return err
			}
			times[u.product] = tm
			total += float64(u.count) * u.flops()
			for i := range agg {
				agg[i] += float64(u.count) * tm[i]
			}
		}
		t.row(w.String(), fmt.Sprintf("all %d products", len(w.uses)), "", "100%", total, agg)
		byWork := slices.Clone(w.uses)
		slices.SortStableFunc(byWork, func(a, b use) int {
			return cmp.Compare(float64(b.count)*b.flops(), float64(a.count)*a.flops())
		})
		for _, u := range byWork[:min(o.top, len(byWork))] {
			share := float64(u.count) * u.flops() / total
			tm := slices.Clone(times[u.product])
			t.row(indent+strings.Join(u.what, ", "), u.String(), fmt.Sprintf("×%d", u.count),
				fmt.Sprintf("%.0f%%", 100*share), u.flops(), tm)
		}
	}
	fmt.Fprint(progress, "\r\033[K")
	t.flush()
	return nil
}

// cpuModel names the processor, or its architecture where the system
// does not say.
func cpuModel() string {
	if m := profiler.CPUModel(); m != "" {
		return m
	}
	return runtime.GOARCH
}
