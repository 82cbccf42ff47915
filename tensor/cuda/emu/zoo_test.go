//go:build cudaemu

package emu

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
	"github.com/pipecast/pipecast/tensor/cuda"
)

// TestZooTrainsLikeTheCPU trains each network of the zoo through the
// runner for one warm-up and one measured step, under gpipe (K = 2, M =
// 2) and coop (K = 2, M = 2, d = 1), on two emulated GPUs and on two CPU
// devices, and compares them in two ways.
//
// Kernel by kernel: the emulated run is on checkedBackend, the GPU
// backend's Device over the emulator, whose allocations, transfers and
// results the run goes on with as on "cuda-emu", except that every kernel
// it launches is run again on a CPU device on copies of the same inputs
// and the outputs are compared element by element (see checkedDevice). So
// every kernel of the run (forwards, gpipe's recomputations, coop's
// predictions, backwards, losses, SGD steps) is compared with the CPU's
// on the zoo's own shapes and values: convolutions 7×7 stride 2, 3×3
// stride 1 and 2 with and without padding, 1×1 stride 1 and 2, 5×5 and
// inceptionv3's 1×7, 7×1, 1×3 and 3×1 (the test asserts it saw each),
// max and average pooling with and without padding, the Inception
// modules' channel concatenations and splits, residual additions, batch
// norm in training mode, dropout (vgg16bn's classifier) and the linear
// heads.
//
// Run against run: the warm-up step's losses must agree within
// zooLossTol; that step starts from the same weights on both, so its
// loss checks the forward through the devices and the transfers between
// them (coop's all-gathered weights and all-to-all predictions
// included). The measured step's loss and trained weights (the first and
// last parameter tensors of each stage) are compared at zooLossTol for
// vgg16bn and only logged for resnet50 and inceptionv3, because after a
// training step those two no longer compute the same function on the
// two backends. Batch norm and ReLU make them chaotic in float32: a ReLU
// input within rounding of 0 passes its gradient on one backend and not
// on the other, and that one element moves some batch-norm gradients by
// whole percents; the next forward then amplifies the weights'
// differences 20–200× through the layers. Measured while this test was
// written, at widths 1/16 and 1/4: after the measured step the sampled
// weights of resnet50 and inceptionv3 differed by up to 0.4 of their
// largest (other batch-norm biases by up to 2.7) and the losses by 3e-4
// to 8e-2, while every kernel agreed with the CPU's to 1e-6 of its bound;
// after one step the CPU's own gradients moved by as much as the
// emulator's (up to 7e-2) when its input was perturbed by one ulp, and
// with the emulator's weights loaded on both, the two forward losses
// agreed to a few 1e-6. A comparison of those trained weights at 1e-3
// would fail, or pass by luck, and say nothing of the kernels. vgg16bn's
// measured step agreed to 1e-5 (seeds 1–5 and 11, widths 1/16 to 1/4).
//
// The inputs are the smallest at which the deepest batch norms see 8
// values per channel (2 samples of 2×2 maps) rather than 2: vgg16bn's
// minimum, 32 px, resnet50 at 33 px and inceptionv3 at 107 px (75 px,
// its minimum, leaves it 1×1 maps, as 32 px does resnet50). With 2
// values a channel's normalised outputs are ±1 up to eps whatever its
// inputs, and rounding differences are amplified even in the warm-up
// forward (its losses differed by 1e-2 at width 1/4).
func TestZooTrainsLikeTheCPU(t *testing.T) {
	zoo := []struct {
		name string
		mc   models.Config
		// trained: compare the measured step's loss and weights too.
		trained bool
	}{
		{"vgg16bn", models.Config{Width: zooWidth, Image: 32, Classes: 10}, true},
		{"resnet50", models.Config{Width: zooWidth, Image: 33, Classes: 10}, false},
		{"inceptionv3", models.Config{Width: zooWidth, Image: 107, Classes: 10}, false},
	}
	schedules := []schedule.Options{
		{Name: schedule.GPipe, Devices: 2, Micro: 2},
		{Name: schedule.Coop, Devices: 2, Micro: 2, Prefetch: 1},
	}
	var before [cuda.NumKernels]int64
	for k := range before {
		before[k] = launches[k].Load()
	}
	seen, ran := map[string]bool{}, 0
	for _, m := range zoo {
		t.Run(m.name, func(t *testing.T) {
			start := time.Now()
			for _, o := range schedules {
				t.Run(o.Name, func(t *testing.T) {
					cfg := config.Config{
						Model: m.name, ModelConfig: m.mc, Batch: 4, Seed: 11,
						Schedule: o, Threads: 1, SGD: config.DefaultSGD(),
					}
					cfg.Backend = checkedBackend
					checks.reset()
					begin := time.Now()
					emu := train(t, cfg, 1, 1, 5*time.Minute)
					took := time.Since(begin)
					report := checks.take()
					report.check(t)
					for g := range report.convs {
						seen[g] = true
					}
					if g := emu.GPUs; len(g) != 2 || g[0] == nil || g[0].Model != "pipecast CUDA emulator" {
						t.Errorf("the run records GPUs %v, want the emulator's twice", g)
					}
					cfg.Backend = tensor.CPUBackend
					cpu := train(t, cfg, 1, 1, 5*time.Minute)
					t.Logf("%s: %.1fs on the checked emulator, %d kernel launches compared", emu.Config, took.Seconds(), report.launches())
					compareZooRuns(t, emu, cpu, m.trained)
					ran++
				})
			}
			t.Logf("%s: %.1fs", m.name, time.Since(start).Seconds())
		})
	}
	if ran < len(zoo)*len(schedules) || t.Failed() {
		return
	}
	// The zoo's convolution geometries (kernel/stride, padding) that the
	// runs must have compared.
	for _, g := range []string{
		"7x7/2 pad 3x3", "3x3/1 pad 1x1", "3x3/2 pad 0x0", "3x3/1 pad 0x0", "1x1/1 pad 0x0", "1x1/2 pad 0x0",
		"3x3/2 pad 1x1", "5x5/1 pad 2x2", "1x7/1 pad 0x3", "7x1/1 pad 3x0", "1x3/1 pad 0x1", "3x1/1 pad 1x0",
	} {
		if !seen[g] {
			t.Errorf("no %s convolution was compared", g)
		}
	}
	var all []string
	for g := range seen {
		all = append(all, g)
	}
	sort.Strings(all)
	t.Logf("convolutions compared: %s", strings.Join(all, ", "))
	var counts []string
	for k := range before {
		if n := launches[k].Load() - before[k]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", cuda.Kernel(k).Name(), n))
		}
	}
	t.Logf("CUDA kernels launched: %s", strings.Join(counts, ", "))
}

// zooWidth scales the zoo's channel counts: at 1/4 each network takes
// about 10 s on the emulator (both schedules, checked, on 2 cores).
const zooWidth = 0.25

// zooLossTol bounds the relative differences between the emulated and
// the CPU run that are compared (see TestZooTrainsLikeTheCPU): losses,
// and weights relative to their tensor's largest magnitude. The same
// weights and data go through 16 (vgg16bn) to 95 (inceptionv3) layers
// whose float32 reductions (the convolutions' and products' sums, batch
// norm's statistics over N·H·W values, the pools') sum in other orders
// on the two backends, with and without fused multiply-adds; each layer
// adds some ulps of relative error, which batch norm's division by the
// batch's standard deviation and the softmax carry on. The measured
// differences are 1e-9 to 3e-5 (vgg16bn's weights 1e-5); 1e-3 leaves
// room for any summation order in any kernel, and a wrong index,
// padding, transfer or reduction moves them by far more.
const zooLossTol = 1e-3

// compareZooRuns compares the warm-up losses of an emulated and a CPU run
// at zooLossTol and, if trained, the measured step's loss and the first
// and last parameter tensors of each stage; otherwise it only logs how
// far those moved apart (see TestZooTrainsLikeTheCPU for why).
func compareZooRuns(t *testing.T, emu, cpu *runner.Result, trained bool) {
	t.Helper()
	if len(emu.Warmup) != 1 || len(cpu.Warmup) != 1 || len(emu.Steps) != 1 || len(cpu.Steps) != 1 {
		t.Fatalf("steps: %d+%d on the emulator, %d+%d on the CPU, want 1+1", len(emu.Warmup), len(emu.Steps), len(cpu.Warmup), len(cpu.Steps))
	}
	rel := func(got, want float64) float64 { return math.Abs(got-want) / math.Abs(want) }
	got, want := emu.Warmup[0].Loss, cpu.Warmup[0].Loss
	if d := rel(got, want); !(d <= zooLossTol) {
		t.Errorf("warm-up loss %v on the emulator, %v on the CPU: relative difference %.3g", got, want, d)
	}
	got1, want1 := emu.Steps[0].Loss, cpu.Steps[0].Loss
	if d := rel(got1, want1); math.IsNaN(d) || math.IsInf(got1, 0) || trained && d > zooLossTol {
		t.Errorf("measured loss %v on the emulator, %v on the CPU: relative difference %.3g", got1, want1, d)
	}
	var moved []string
	for _, n := range stageEnds(t, cpu) {
		d, at := weightDiff(emu.Weights[n], cpu.Weights[n])
		if trained && !(d <= zooLossTol) {
			t.Errorf("%s: trained weights differ by %.3g of their largest (at %d)", n, d, at)
		}
		moved = append(moved, fmt.Sprintf("%s %.2g", n, d))
	}
	what := "apart (not compared)"
	if trained {
		what = "apart"
	}
	t.Logf("warm-up loss %.7g (CPU %.7g, %.2g apart); measured loss %.7g (CPU %.7g, %.2g %s); stage ends: %s",
		got, want, rel(got, want), got1, want1, rel(got1, want1), what, strings.Join(moved, ", "))
}

// checkedBackend is the emulator's backend with every kernel checked
// against the CPU's (see checkedDevice).
const checkedBackend = "cuda-emu-checked"

func init() {
	tensor.Register(tensor.Backend{
		Name:        checkedBackend,
		Description: "the CUDA emulator, every kernel compared with the CPU's on the same inputs (tests only)",
		Open: func(o tensor.Options) (tensor.Device, error) {
			cpu, err := tensor.Open(tensor.CPUBackend, tensor.Options{Index: o.Index, Threads: 1})
			if err != nil {
				return nil, err
			}
			return &checkedDevice{Device: Open(o.Index), cpu: cpu}, nil
		},
	})
}

// kernelTol bounds each output element's difference between the
// emulator and the CPU, relative to the element's bound (launch.bound): the
// sum of the magnitudes of what was added up to make it (|a|·|b| for a
// product, Σ|x| for a mean, and for batch norm the same through its
// normalisation). Either backend's rounding of a sum of k terms is at
// most k·2⁻²⁴ of that (and typically √k·2⁻²⁴, ~1e-6 here); 1e-4 allows
// for the largest reductions of these runs in any order, with or
// without fused multiply-adds, while a missed or misplaced term of a
// k-term sum shows as ~1/k of the bound, above 1e-4 for the zoo's sums
// at this width (at most a few thousand terms).
const kernelTol = 1e-4
