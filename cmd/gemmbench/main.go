// Command gemmbench measures the CPU backend's matrix products (GFLOP/s)
// on square matrices and on the products one training step of the zoo's
// convolutional networks runs, and, in a build with the openblas tag,
// OpenBLAS's on the same products with as many threads, side by side:
//
//	go run ./cmd/gemmbench                  # pipecast alone
//	go run -tags openblas ./cmd/gemmbench   # pipecast against OpenBLAS
//	go run -tags openblas ./cmd/gemmbench --quick --markdown
//
// Every product is timed reps times on each side, the two sides
// alternating (which goes first alternates too) so that noise from other
// processes hits both; a table row gives the medians. A model's row
// aggregates all of its step's products (convolutions forward, backward
// data and backward filter, as cpu.ConvGemmShapes lists them, and the
// linear layers): their total floating-point operations over their total
// time, each distinct product timed once per repetition and weighted by
// how often the step runs it. The model's largest products follow.
// Every product is timed as one call of Device.Gemm on all threads,
// including those the convolutions run one per thread side by side on
// several groups of samples: the table measures GEMM speed on the
// step's shapes, not the convolutions' own time. Before a product's row
// counts, the two sides' results must agree to float32 rounding.
package main

import (
	"bufio"
	"cmp"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/meta"
)

// refBackend is the backend the openblas build tag registers (see
// tensor/cpu/openblas.go); without the tag only pipecast is measured.
const refBackend = "openblas"

// Both sides keep their threads polling for a while after a product so
// that back-to-back products start at once — OpenBLAS for 2^28 cycles
// (its THREAD_TIMEOUT, a tenth of a second at 2.6 GHz), pipecast's pool
// for 0.5 ms — and a side's polling threads would take the cores from the
// other side's repetition that follows: each repetition waits for the
// previous side's threads to park first. Then each side runs its product
// untimed for a while to wake its own threads, so that each is timed at
// its best, as in a training step's stream of products.
const (
	openblasSettle = 120 * time.Millisecond
	pipecastSettle = 2 * time.Millisecond
)

// warmTime is the least time each side runs its product untimed before a
// repetition (see warm in bench.time).
const warmTime = 20 * time.Millisecond

type options struct {
	threads  int
	reps     int
	minTime  time.Duration
	top      int
	squares  []int
	models   []string
	images   []int // empty: each model's defaults (see workloadsFor)
	batches  []int
	markdown bool
	quick    bool
}

func main() {
	var o options
	var squares, modelList, images, batches string
	flag.IntVar(&o.threads, "threads", 2, "worker threads of each side (pipecast's pool, OpenBLAS's threads)")
	flag.IntVar(&o.reps, "reps", 0, "timed repetitions of each product on each side (0: 5, or 3 with --quick)")
	flag.DurationVar(&o.minTime, "min-time", 0, "shortest time of one repetition; short products repeat within it (0: 20ms, or 5ms with --quick)")
	flag.IntVar(&o.top, "top", 0, "largest products listed per model (0: 5, or 3 with --quick)")
	flag.StringVar(&squares, "squares", "", "sizes of the square products (default 256,512,1024,2048; with --quick 256,512,1024)")
	flag.StringVar(&modelList, "models", "resnet50,vgg16bn,inceptionv3", "models whose step products are measured (empty: none)")
	flag.StringVar(&images, "image", "", "input sizes for every model (default per model: a small one at batch 32 and torchvision's at batch 8; --quick only the small one)")
	flag.StringVar(&batches, "batch", "", "batch sizes for every model, with --image (default 32,8 paired with the default sizes)")
	flag.BoolVar(&o.markdown, "markdown", false, "print markdown tables")
	flag.BoolVar(&o.quick, "quick", false, "a short run (about half a minute): fewer shapes and repetitions")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: gemmbench [flags]\n\nMeasures pipecast's GEMM (and OpenBLAS's, built with -tags openblas) on square and\nconvolution products. Flags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	o.reps = pick(o.reps, 5, 3, o.quick)
	o.top = pick(o.top, 5, 3, o.quick)
	if o.minTime == 0 {
		o.minTime = 20 * time.Millisecond
		if o.quick {
			o.minTime = 5 * time.Millisecond
		}
	}
	var err error
	if o.squares, err = ints(squares, "256,512,1024,2048", "256,512,1024", o.quick); err != nil {
		fail(fmt.Errorf("--squares: %w", err))
	}
	if o.images, err = ints(images, "", "", false); err != nil {
		fail(fmt.Errorf("--image: %w", err))
	}
	if o.batches, err = ints(batches, "", "", false); err != nil {
		fail(fmt.Errorf("--batch: %w", err))
	}
	if (len(o.images) == 0) != (len(o.batches) == 0) {
		fail(fmt.Errorf("--image and --batch go together"))
	}
	for _, m := range strings.Split(modelList, ",") {
		if m = strings.TrimSpace(m); m != "" {
			o.models = append(o.models, m)
		}
	}
	if o.threads < 1 || o.reps < 1 || o.top < 0 {
		fail(fmt.Errorf("--threads and --reps must be at least 1, --top at least 0"))
	}
	// Progress (the product being timed) overwrites one line of a
	// terminal; elsewhere it would only clutter a log.
	var progress io.Writer = io.Discard
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		progress = os.Stderr
	}
	if err := run(os.Stdout, progress, o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gemmbench:", err)
	os.Exit(2)
}

// pick returns v, or its default for the run's length when v is 0.
func pick(v, normal, quick int, isQuick bool) int {
	switch {
	case v != 0:
		return v
	case isQuick:
		return quick
	}
	return normal
}

// ints parses a comma-separated list, or the default for the run's
// length when s is empty.
func ints(s, normal, quick string, isQuick bool) ([]int, error) {
	if s == "" {
		s = normal
		if isQuick {
			s = quick
		}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// product is one matrix product's sizes: op(A) m×k, op(B) k×n.
type product struct {
	m, n, k        int
	transA, transB bool
}

func (p product) flops() float64 { return 2 * float64(p.m) * float64(p.n) * float64(p.k) }

func (p product) String() string {
	s := fmt.Sprintf("%d×%d×%d", p.m, p.n, p.k)
	if p.transA || p.transB {
		s += " " + map[bool]string{false: "N", true: "T"}[p.transA] + map[bool]string{false: "N", true: "T"}[p.transB]
	}
	return s
}

// use is a product a workload runs count times, and what for
// ("conv fwd", "conv bwd-data", ...: several when passes share a size).
type use struct {
	product
	count int
	what  []string
}

// workload is a model's training step at one input size and batch.
type workload struct {
	model        string
	image, batch int
	uses         []use
}

func (w workload) String() string {
	return fmt.Sprintf("%s %dpx b%d", w.model, w.image, w.batch)
}

// side is one implementation under test.
type side struct {
	name string
	dev  tensor.Device
	// settle is how long the side's threads poll after a product before
	// they park: the pause the other side waits after it.
	settle time.Duration
}

// timing is a product's median seconds per call on each side.
type timing []float64

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
	head("date", "%s", time.Now().Format("2006-01-02 15:04 MST"))
	head("go", "%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	head("pipecast", "GEMM kernel %s, %d threads", cpu.GemmKernel(), o.threads)
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

// workloadsFor returns the (image, batch) pairs measured for model: those
// of --image and --batch, or a small input at batch 32 and torchvision's
// input size at batch 8 (only the small one with --quick). Inception-v3
// takes 96 px as its small input: below 75 px it does not run.
func workloadsFor(model string, o options) [][2]int {
	var out [][2]int
	if len(o.images) > 0 {
		for _, im := range o.images {
			for _, b := range o.batches {
				out = append(out, [2]int{im, b})
			}
		}
		return out
	}
	small, large := 64, 224
	if model == "inceptionv3" {
		small, large = 96, 299
	}
	out = append(out, [2]int{small, 32})
	if !o.quick {
		out = append(out, [2]int{large, 8})
	}
	return out
}

// bench times products on every side.
type bench struct {
	sides    []side
	o        options
	progress io.Writer
	data     []float32 // random operand values, shared by all products
}

// time returns p's median seconds per call on each side. Each side gets
// its own operands holding the same values; a repetition runs the
// product as many times as fit in o.minTime (the count calibrated on the
// first side's warm-up call) and the sides take turns going first.
func (b *bench) time(p product) (timing, error) {
	fmt.Fprintf(b.progress, "\r\033[K%s", p)
	aShape, bShape := []int{p.m, p.k}, []int{p.k, p.n}
	if p.transA {
		aShape = []int{p.k, p.m}
	}
	if p.transB {
		bShape = []int{p.n, p.k}
	}
	need := max(p.m*p.k, p.k*p.n, p.m*p.n)
	if len(b.data) < need {
		rng := rand.New(rand.NewPCG(1, 2))
		b.data = make([]float32, need)
		for i := range b.data {
			b.data[i] = float32(rng.Float64()*2 - 1)
		}
	}
	type operands struct{ a, b, c *tensor.Tensor }
	ops := make([]operands, len(b.sides))
	for i, s := range b.sides {
		x := operands{s.dev.Alloc(tensor.Activations, aShape...), s.dev.Alloc(tensor.Activations, bShape...), s.dev.Alloc(tensor.Activations, p.m, p.n)}
		s.dev.Upload(x.a, b.data[:x.a.Len()])
		s.dev.Upload(x.b, b.data[:x.b.Len()])
		ops[i] = x
	}
	defer func() {
		for _, x := range ops {
			x.a.Release()
			x.b.Release()
			x.c.Release()
		}
	}()
	call := func(i int) {
		b.sides[i].dev.Gemm(p.transA, p.transB, 1, ops[i].a, ops[i].b, 0, ops[i].c)
	}
	// warm runs side i's product untimed until its threads are awake: on
	// a VM the first product after an idle pause took 4–9 ms where the
	// next took 0.9 (an idle virtual CPU wakes at a timer tick).
	warm := func(i int) {
		start := time.Now()
		for n := 0; n < 3 || time.Since(start) < warmTime; n++ {
			call(i)
		}
	}
	// The calls per repetition are calibrated on the first side, awake:
	// the fastest of a few calls, so that one slow call does not shrink
	// every repetition to a single call.
	warm(0)
	fastest := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		call(0)
		fastest = min(fastest, time.Since(start))
	}
	iters := max(1, int(min(b.o.minTime/max(fastest, time.Microsecond), 10000)))
	samples := make([][]float64, len(b.sides))
	for r := range b.o.reps {
		for j := range b.sides {
			i := (j + r) % len(b.sides)
			// A collection running beside a repetition would take one of
			// its threads' processors: collect first, while nothing is
			// timed (the repetitions allocate nothing).
			runtime.GC()
			if len(b.sides) > 1 {
				prev := b.sides[(i+len(b.sides)-1)%len(b.sides)]
				time.Sleep(prev.settle)
			}
			warm(i)
			// The repetition's median call, not its mean: one call
			// stretched by the machine (a descheduled thread, a virtual
			// CPU woken late) must not stand for the product's speed.
			calls := make([]float64, 0, iters)
			for range iters {
				start := time.Now()
				call(i)
				calls = append(calls, time.Since(start).Seconds())
			}
			samples[i] = append(samples[i], profiler.Median(calls))
		}
	}
	tm := make(timing, len(b.sides))
	for i, s := range samples {
		tm[i] = profiler.Median(s)
	}
	if len(b.sides) > 1 {
		if err := sameResult(b.sides, ops[0].c, ops[1].c, p.k); err != nil {
			return nil, fmt.Errorf("%v: %w", p, err)
		}
	}
	return tm, nil
}

// sameResult checks that both sides computed the same product, up to
// float32 rounding of a k-term sum of values in [−1, 1), so that a table
// never compares a fast wrong answer.
func sameResult(sides []side, c0, c1 *tensor.Tensor, k int) error {
	x, y := make([]float32, c0.Len()), make([]float32, c1.Len())
	sides[0].dev.Download(x, c0)
	sides[1].dev.Download(y, c1)
	tol := 1e-5 * math.Sqrt(float64(k)+1)
	for i := range x {
		if d := math.Abs(float64(x[i] - y[i])); d > tol*(1+math.Abs(float64(y[i]))) || math.IsNaN(float64(x[i])) {
			return fmt.Errorf("element %d: %s %v, %s %v", i, sides[0].name, x[i], sides[1].name, y[i])
		}
	}
	return nil
}

// stepProducts lists the products of one training step of model at the
// given input size and batch (width 1, 10 classes) on the CPU backend
// with threads threads, identical products merged.
func stepProducts(model string, image, batch, threads int) (workload, error) {
	rec := &recorder{Device: meta.New()}
	m, err := models.Build(rec, model, models.Config{Image: image, Classes: 10, Width: 1}, nil)
	if err != nil {
		return workload{}, err
	}
	defer m.Release()
	x := rec.Alloc(tensor.Activations, append(tensor.Shape{batch}, m.Input...)...)
	y, _ := m.Net.Forward(&models.Pass{Dev: rec, Train: true}, x)
	x.Release()
	y.Release()

	w := workload{model: model, image: image, batch: batch}
	index := map[product]int{}
	add := func(what string, g cpu.GemmShape) {
		p := product{m: g.M, n: g.N, k: g.K, transA: g.TransA, transB: g.TransB}
		if p.m == 0 || p.n == 0 || p.k == 0 || g.Count == 0 {
			return
		}
		i, ok := index[p]
		if !ok {
			i = len(w.uses)
			index[p] = i
			w.uses = append(w.uses, use{product: p})
		}
		w.uses[i].count += g.Count
		if !slices.Contains(w.uses[i].what, what) {
			w.uses[i].what = append(w.uses[i].what, what)
		}
	}
	passes := []struct {
		pass cpu.ConvPass
		what string
	}{{cpu.ConvForward, "conv fwd"}, {cpu.ConvBackwardData, "conv bwd-data"}, {cpu.ConvBackwardFilter, "conv bwd-filter"}}
	for _, c := range rec.convs {
		for _, ps := range passes {
			for _, g := range cpu.ConvGemmShapes(ps.pass, c.x, c.w, c.y, c.p, threads) {
				add(ps.what, g)
			}
		}
	}
	// The linear layers' products, as tensor/cpu/linear.go runs them:
	// y = x·wᵀ, dx = dy·w, dw += dyᵀ·x, for x [N, in] and w [out, in].
	for _, l := range rec.linears {
		n, in, out := l[0], l[1], l[2]
		add("fc fwd", cpu.GemmShape{M: n, N: out, K: in, TransB: true, Count: 1})
		add("fc bwd-data", cpu.GemmShape{M: n, N: in, K: out, Count: 1})
		add("fc bwd-weight", cpu.GemmShape{M: out, N: in, K: n, TransA: true, Count: 1})
	}
	return w, nil
}

// recorder is a meta device (no storage, no compute) that notes the
// shapes of every convolution and linear layer a forward runs.
type recorder struct {
	*meta.Device
	convs   []convCall
	linears [][3]int // batch, in, out
}

type convCall struct {
	x, w, y tensor.Shape
	p       tensor.Conv2DParams
}

func (r *recorder) Conv2DForward(x, w, bias, y *tensor.Tensor, p tensor.Conv2DParams) {
	r.convs = append(r.convs, convCall{x: x.Shape().Clone(), w: w.Shape().Clone(), y: y.Shape().Clone(), p: p})
	r.Device.Conv2DForward(x, w, bias, y, p)
}

func (r *recorder) LinearForward(x, w, bias, y *tensor.Tensor) {
	r.linears = append(r.linears, [3]int{x.Dim(0), x.Dim(1), w.Dim(0)})
	r.Device.LinearForward(x, w, bias, y)
}

// cpuModel returns the first "model name" of /proc/cpuinfo, or GOARCH
// where there is none.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// table prints rows as aligned text or markdown, after the last row.
type table struct {
	out      io.Writer
	markdown bool
	sides    []side
	rows     [][]string
}

func newTable(out io.Writer, markdown bool, sides []side) *table {
	head := []string{"workload", "product (M×N×K op)", "count", "share", sides[0].name + " GFLOP/s"}
	if len(sides) > 1 {
		head = append(head, sides[1].name+" GFLOP/s", "ratio")
	}
	return &table{out: out, markdown: markdown, sides: sides, rows: [][]string{head}}
}

// row adds a line: flops floating-point operations took tm[i] seconds on
// side i.
func (t *table) row(name, prod, count, share string, flops float64, tm timing) {
	r := []string{name, prod, count, share, fmt.Sprintf("%.1f", flops/tm[0]/1e9)}
	if len(tm) > 1 {
		r = append(r, fmt.Sprintf("%.1f", flops/tm[1]/1e9), fmt.Sprintf("%.2f", tm[1]/tm[0]))
	}
	t.rows = append(t.rows, r)
}

func (t *table) flush() {
	widths := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	numeric := func(i int) bool { return i >= 2 }
	for ri, r := range t.rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if t.markdown {
				b.WriteString("| ")
			} else if i > 0 {
				b.WriteString("  ")
			}
			if numeric(i) && ri > 0 {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
			if t.markdown {
				b.WriteString(" ")
			}
		}
		if t.markdown {
			b.WriteString("|")
		}
		fmt.Fprintln(t.out, strings.TrimRight(b.String(), " "))
		if ri == 0 && t.markdown {
			b.Reset()
			for i, w := range widths {
				dash := strings.Repeat("-", max(w, 3))
				if numeric(i) {
					dash = dash[1:] + ":"
				}
				b.WriteString("| " + dash + " ")
			}
			fmt.Fprintln(t.out, b.String()+"|")
		}
	}
}
