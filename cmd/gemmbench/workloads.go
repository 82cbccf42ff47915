package main

import (
	"fmt"
	"slices"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cpu"
	"github.com/pipecast/pipecast/tensor/meta"
)

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
