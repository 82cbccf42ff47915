//go:build cudaemu

package emu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
)

// TestTransformerFamilyRunsOnTheDevice checks that package tensor's
// functions of the transformer family and AdamWSteps reach the device's
// own kernels rather than the host fallback: the device implements both
// capabilities, and each function launches its kernels (the shared suite
// then checks what they compute, on this same route).
func TestTransformerFamilyRunsOnTheDevice(t *testing.T) {
	dev := Open(0)
	defer dev.Close()
	var d tensor.Device = dev
	if _, ok := d.(tensor.TransformerKernels); !ok {
		t.Fatal("the cuda device does not implement tensor.TransformerKernels")
	}
	if _, ok := d.(tensor.AdamWStepper); !ok {
		t.Fatal("the cuda device does not implement tensor.AdamWStepper")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var live []*tensor.Tensor
	alloc := func(s ...int) *tensor.Tensor {
		n := tensor.Shape(s).Numel()
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32() - 0.5
		}
		x := tensor.FromHost(d, tensor.Activations, tensor.Shape(s), v)
		live = append(live, x)
		return x
	}
	defer func() {
		for _, x := range live {
			x.Release()
		}
	}()
	const b, s, h, hkv, hd = 2, 5, 4, 2, 6
	ap := tensor.AttentionParams{Seq: s, Heads: h, KVHeads: hkv, HeadDim: hd, Scale: 0.4, Causal: true}
	ids := tensor.FromHost(d, tensor.Activations, tensor.Shape{3}, []float32{2, 0, 2})
	live = append(live, ids)
	x, y, dx, g, beta, stat, stat2 := alloc(3, 8), alloc(3, 8), alloc(3, 8), alloc(8), alloc(8), alloc(3), alloc(3)
	table := alloc(4, 8)
	q, k, v, probs := alloc(b, s, h, hd), alloc(b, s, hkv, hd), alloc(b, s, hkv, hd), alloc(b, h, s, s)
	out, dq, dk, dv, dprobs := alloc(b, s, h, hd), alloc(b, s, h, hd), alloc(b, s, hkv, hd), alloc(b, s, hkv, hd), alloc(b, h, s, s)
	m, vs := tensor.FromHost(d, tensor.Optimizer, tensor.Shape{3, 8}, make([]float32, 24)), tensor.FromHost(d, tensor.Optimizer, tensor.Shape{3, 8}, make([]float32, 24))
	live = append(live, m, vs)
	for _, c := range []struct {
		name    string
		fn      func()
		kernels []cuda.Kernel
	}{
		{"EmbeddingForward", func() { tensor.EmbeddingForward(d, ids, table, y) }, []cuda.Kernel{cuda.KernelEmbeddingFwd}},
		{"EmbeddingBackward", func() { tensor.EmbeddingBackward(d, ids, y, table) }, []cuda.Kernel{cuda.KernelEmbeddingBwdAcc}},
		{"LayerNormForward", func() { tensor.LayerNormForward(d, x, g, beta, y, stat, stat2, 1e-5) }, []cuda.Kernel{cuda.KernelLayernormFwd}},
		{"LayerNormBackward", func() { tensor.LayerNormBackward(d, x, y, g, stat, stat2, dx, g, beta) },
			[]cuda.Kernel{cuda.KernelLayernormBwdData, cuda.KernelNormParamGradsAcc}},
		{"RMSNormForward", func() { tensor.RMSNormForward(d, x, g, y, stat2, 1e-5) }, []cuda.Kernel{cuda.KernelRmsnormFwd}},
		{"RMSNormBackward", func() { tensor.RMSNormBackward(d, x, y, g, stat2, dx, g) },
			[]cuda.Kernel{cuda.KernelRmsnormBwdData, cuda.KernelNormParamGradsAcc}},
		{"GELUTanhForward", func() { tensor.GELUTanhForward(d, x, y) }, []cuda.Kernel{cuda.KernelGeluTanhFwd}},
		{"GELUTanhBackward", func() { tensor.GELUTanhBackward(d, x, y, dx) }, []cuda.Kernel{cuda.KernelGeluTanhBwd}},
		{"SwiGLUForward", func() { tensor.SwiGLUForward(d, x, y, dx) }, []cuda.Kernel{cuda.KernelSwigluFwd}},
		{"SwiGLUBackward", func() { tensor.SwiGLUBackward(d, x, y, dx, x, nil) }, []cuda.Kernel{cuda.KernelSwigluBwd}},
		{"RoPE", func() { tensor.RoPE(d, q, q, tensor.RoPEParams{Seq: s, Heads: h, HeadDim: hd, Theta: 10000}) }, []cuda.Kernel{cuda.KernelRope}},
		{"AttentionScores", func() { tensor.AttentionScores(d, q, k, probs, ap) }, []cuda.Kernel{cuda.KernelSgemmBatched, cuda.KernelAttnSoftmax}},
		{"AttentionContext", func() { tensor.AttentionContext(d, probs, v, out, ap) }, []cuda.Kernel{cuda.KernelSgemmBatched}},
		{"AttentionContextBackward", func() { tensor.AttentionContextBackward(d, probs, v, out, dprobs, dv, ap) },
			[]cuda.Kernel{cuda.KernelSgemmBatched, cuda.KernelAttnMask}},
		{"AttentionScoresBackward", func() { tensor.AttentionScoresBackward(d, q, k, probs, dprobs, dq, dk, ap) },
			[]cuda.Kernel{cuda.KernelAttnSoftmaxBwd, cuda.KernelSgemmBatched}},
		{"AdamWSteps", func() {
			tensor.AdamWSteps(d, []tensor.AdamWParamStep{{W: x, G: y, ExpAvg: m, ExpAvgSq: vs, Step: 1}}, tensor.DefaultAdamW(), true)
		}, []cuda.Kernel{cuda.KernelAdamw}},
	} {
		var before [cuda.NumKernels]int64
		for i := range before {
			before[i] = launches[i].Load()
		}
		c.fn()
		for _, kn := range c.kernels {
			if launches[kn].Load() == before[kn] {
				t.Errorf("%s did not launch %s: it took the host fallback", c.name, kn.Name())
			}
		}
	}
}

// TestAdamWMatchesStepIn checks the contract of tensor.AdamWStepper on the
// emulator: pc_adamw gives tensor.AdamWStepIn's values bit for bit, over
// steps where the bias corrections are large and small, for torch's
// defaults and for settings where every term weighs. (On a GPU the same
// holds as long as nvcc fuses none of the kernel's operations, which its
// round-to-nearest intrinsics forbid.)
func TestAdamWMatchesStepIn(t *testing.T) {
	dev := Open(0)
	defer dev.Close()
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 1000
	vals := func(scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = (rng.Float32()*2 - 1) * scale
		}
		v[0], v[1] = 0, float32(math.Copysign(0, -1))
		return v
	}
	for _, p := range []tensor.AdamWParams{
		tensor.DefaultAdamW(),
		{LR: 0.05, Beta1: 0.5, Beta2: 0.9, Eps: 1e-2, WeightDecay: 0.5},
		{LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1},
	} {
		w, m, v := vals(2), make([]float32, n), make([]float32, n)
		wT := tensor.FromHost(dev, tensor.Weights, tensor.Shape{n}, w)
		mT := tensor.FromHost(dev, tensor.Optimizer, tensor.Shape{n}, m)
		vT := tensor.FromHost(dev, tensor.Optimizer, tensor.Shape{n}, v)
		gT := dev.Alloc(tensor.Gradients, n)
		for step := 1; step <= 7; step++ {
			g := vals(float32(math.Pow(10, float64(step%4-2))))
			dev.Upload(gT, g)
			tensor.AdamWSteps(dev, []tensor.AdamWParamStep{{W: wT, G: gT, ExpAvg: mT, ExpAvgSq: vT, Step: step}}, p, step%2 == 0)
			tensor.AdamWStepIn(w, g, m, v, p, step)
			for _, c := range []struct {
				name string
				got  *tensor.Tensor
				want []float32
			}{{"w", wT, w}, {"exp_avg", mT, m}, {"exp_avg_sq", vT, v}} {
				for i, x := range tensor.ToHost(c.got) {
					if math.Float32bits(x) != math.Float32bits(c.want[i]) {
						t.Fatalf("%+v step %d: %s[%d] = %v (%#x), AdamWStepIn gives %v (%#x)",
							p, step, c.name, i, x, math.Float32bits(x), c.want[i], math.Float32bits(c.want[i]))
					}
				}
			}
			for i, x := range tensor.ToHost(gT) {
				if want := map[bool]float32{true: 0, false: g[i]}[step%2 == 0]; x != want {
					t.Fatalf("step %d: g[%d] = %v, want %v", step, i, x, want)
				}
			}
		}
		for _, x := range []*tensor.Tensor{wT, mT, vT, gT} {
			x.Release()
		}
	}
}

// TestEmbeddingBackwardSumsInRowOrder checks that the embedding's
// gradient adds a repeated token's rows as the CPU's loop does, one after
// another in row order in float32, bit for bit: values of very different
// magnitudes make any other order round differently.
func TestEmbeddingBackwardSumsInRowOrder(t *testing.T) {
	dev := Open(0)
	defer dev.Close()
	const vocab, dim, n = 3, 5, 40
	rng := rand.New(rand.NewPCG(9, 10))
	ids, dy := make([]float32, n), make([]float32, n*dim)
	for i := range ids {
		ids[i] = float32(rng.IntN(vocab))
	}
	for i := range dy {
		dy[i] = float32(math.Ldexp(rng.Float64()-0.5, rng.IntN(40)-20))
	}
	dt := make([]float32, vocab*dim)
	for i := range dt {
		dt[i] = rng.Float32()
	}
	idT := tensor.FromHost(dev, tensor.Activations, tensor.Shape{n}, ids)
	dyT := tensor.FromHost(dev, tensor.Activations, tensor.Shape{n, dim}, dy)
	dtT := tensor.FromHost(dev, tensor.Gradients, tensor.Shape{vocab, dim}, dt)
	defer idT.Release()
	defer dyT.Release()
	defer dtT.Release()
	tensor.EmbeddingBackward(dev, idT, dyT, dtT)
	for i, id := range ids {
		for c := range dim {
			dt[int(id)*dim+c] += dy[i*dim+c]
		}
	}
	for i, x := range tensor.ToHost(dtT) {
		if math.Float32bits(x) != math.Float32bits(dt[i]) {
			t.Errorf("dtable[%d][%d] = %v, the CPU's loop gives %v", i/dim, i%dim, x, dt[i])
		}
	}
}

// TestTransformersTrainLikeTheCPU trains GPT-2 and a Llama-style model
// (grouped-query attention, RoPE, RMSNorm, SwiGLU), tiny, with AdamW
// under GPipe on two emulated GPUs and on the CPU backend: every kernel
// of the transformer family and the AdamW step runs on the GPU backend's
// own kernels. The first step's loss is a forward from the same initial
// weights; the later ones follow AdamW steps, which move a weight whose
// gradient is round-off alone by up to lr in a direction the round-off
// picks, so they agree less closely.
func TestTransformersTrainLikeTheCPU(t *testing.T) {
	// firstTol: the forward's float32 products and sums in other orders
	// (measured: 1e-9 relative). laterTol: AdamW's sign-like steps on
	// near-zero gradients (lr 1e-3) may move the later losses further
	// (measured: 7e-9); a lost or doubled gradient moves them by 1e-3 and
	// more, as the loss itself moves by some 1e-2 a step.
	const firstTol, laterTol = 1e-6, 1e-5
	mc := models.Config{Seq: 8, Vocab: 64, Layers: 1, Width: 1.0 / 16, NoDropout: true}
	for _, model := range []string{"gpt2", "tinyllama-1.1b"} {
		t.Run(model, func(t *testing.T) {
			run := func(backend string) []float64 {
				cfg := config.Config{
					Model: model, ModelConfig: mc, Batch: 4, Seed: 7, Optimizer: "adamw",
					Schedule: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 2},
					Backend:  backend, Threads: 1,
				}
				res := train(t, cfg, 0, 3, 2*time.Minute)
				var losses []float64
				for _, s := range res.Steps {
					losses = append(losses, s.Loss)
				}
				return losses
			}
			emu, cpu := run(BackendName), run(tensor.CPUBackend)
			if len(emu) != len(cpu) {
				t.Fatalf("%d steps on the emulator, %d on the CPU", len(emu), len(cpu))
			}
			for i := range cpu {
				tol := laterTol
				if i == 0 {
					tol = firstTol
				}
				if d := math.Abs(emu[i] - cpu[i]); !(d <= tol*math.Abs(cpu[i])) {
					t.Errorf("step %d: loss %v on the emulator, %v on the CPU (relative difference %.2g, allowed %.0g)",
						i, emu[i], cpu[i], d/math.Abs(cpu[i]), tol)
				}
			}
			t.Logf("losses: emulator %v, CPU %v", emu, cpu)
		})
	}
}
