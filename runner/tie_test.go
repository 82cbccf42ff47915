package runner

import (
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
	"github.com/pipecast/pipecast/tensor"
)

// tieTrainer opens a trainer of the mlp of faultConfig with one more
// hidden layer (five blocks, the middle three of the same shapes) at
// bounds on the backend, and ties the parameters named by ties (block, index of the
// parameter in the block) as a model that declared them would: the
// trainer's ties and its program's all-reduces. The mlp's blocks are
// initialised apart, so the tie is not a model's, but the all-reduce's
// sum does not care.
func tieTrainer(t *testing.T, backend string, o schedule.Options, bounds []int, ties [][][2]int) *Trainer {
	t.Helper()
	cfg := faultConfig(o)
	cfg.Backend = backend
	cfg.ModelConfig.Sizes = []int{48, 32, 32, 32, 32, 5}
	cfg.Bounds = bounds
	tr := testTrainer(t, cfg)
	for _, uses := range ties {
		var tie models.Tie
		for _, u := range uses {
			tie.Blocks = append(tie.Blocks, u[0])
			tie.Names = append(tie.Names, models.Params(tr.model.Blocks[u[0]].Layer)[u[1]].Name)
		}
		tr.ties = append(tr.ties, tie)
		stages, err := tie.Stages(tr.bounds)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.program.Tie(stages); err != nil {
			t.Fatal(err)
		}
	}
	if err := schedule.Check(tr.program); err != nil {
		t.Fatal(err)
	}
	for _, w := range tr.workers {
		w.ops = tr.program.Devices[w.k]
	}
	tr.setRecording(true, false)
	return tr
}

// TestAllReduceSumsTiedGradients checks the worker's all-reduce on both
// of its paths, transfers between a subset of the devices and copies on
// one device: after it every copy of a tied parameter holds the sum of
// all copies' gradients from before it, the same bits on every device,
// and its event counts the bytes it received.
func TestAllReduceSumsTiedGradients(t *testing.T) {
	weights := [][2]int{{1, 0}, {3, 0}}
	tests := []struct {
		name   string
		o      schedule.Options
		bounds []int
		ties   [][][2]int
	}{
		{"gpipe K=4, devices 1 and 3", schedule.Options{Name: schedule.GPipe, Devices: 4, Micro: 2}, []int{0, 1, 2, 3, 5}, [][][2]int{weights}},
		{"1f1b K=3, three uses", schedule.Options{Name: schedule.OneF1B, Devices: 3, Micro: 3}, []int{0, 2, 3, 5}, [][][2]int{{{1, 0}, {2, 0}, {3, 0}}}},
		{"zb-h1 K=2, weights and biases", schedule.Options{Name: schedule.ZBH1, Devices: 2, Micro: 2}, []int{0, 2, 5}, [][][2]int{weights, {{1, 1}, {3, 1}}}},
		{"interleaved K=1, one device", schedule.Options{Name: schedule.Interleaved, Devices: 1, Micro: 2, Virtual: 2}, []int{0, 2, 5}, [][][2]int{weights}},
		{"interleaved K=2, two copies on device 1", schedule.Options{Name: schedule.Interleaved, Devices: 2, Micro: 2, Virtual: 2}, []int{0, 1, 2, 3, 5}, [][][2]int{{{0, 1}, {1, 1}, {3, 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := watch(t, time.Minute)
			tr := tieTrainer(t, tensor.CPUBackend, tt.o, tt.bounds, tt.ties)
			var mu sync.Mutex
			before := map[int][][]float32{} // by tie: every copy's gradient
			after := map[int][][]float32{}
			tr.fault = func(d int, op schedule.Op) error {
				w := tr.workers[d]
				var ops []schedule.Op
				switch op.Kind {
				case schedule.AllReduce:
					ops = []schedule.Op{op}
				case schedule.Update:
					for _, o := range w.ops {
						if o.Kind == schedule.AllReduce {
							ops = append(ops, o)
						}
					}
				default:
					return nil
				}
				mu.Lock()
				defer mu.Unlock()
				for _, o := range ops {
					tps, err := w.tiedCopies(o)
					if err != nil {
						return err
					}
					for _, tp := range tps {
						for _, p := range tp.copies {
							if op.Kind == schedule.AllReduce {
								before[tp.index] = append(before[tp.index], tensor.ToHost(p.Grad))
							} else {
								after[tp.index] = append(after[tp.index], tensor.ToHost(p.Grad))
							}
						}
					}
				}
				return nil
			}
			for step := range 2 {
				clear(before)
				clear(after)
				res, err := tr.Step(ctx)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for i := range tt.ties {
					checkTiedSum(t, step, i, before[i], after[i], len(tt.ties[i]))
				}
				for d, dev := range res.Devices {
					var got, want int64
					for _, e := range dev.Events {
						if e.Op == schedule.AllReduce.String() {
							got += e.Bytes
						}
					}
					for _, o := range tr.program.Devices[d] {
						if o.Kind == schedule.AllReduce {
							tps, _ := tr.workers[d].tiedCopies(o)
							for _, tp := range tps {
								want += int64(len(tr.program.GroupOf(o))-1) * tp.copies[0].Value.Bytes()
							}
						}
					}
					if got != want {
						t.Errorf("step %d device %d: all-reduce events of %d bytes, want %d", step, d, got, want)
					}
				}
			}
		})
	}
}

// checkTiedSum checks that every copy of tie i after the all-reduce holds
// the sum of the copies before it, in the same bits: one copy a stage
// that uses it, of the uses.
func checkTiedSum(t *testing.T, step, i int, before, after [][]float32, uses int) {
	t.Helper()
	if len(before) == 0 || len(before) != len(after) || len(before) > uses {
		t.Fatalf("step %d tie %d: %d copies before the all-reduce and %d after, want the same, at most %d", step, i, len(before), len(after), uses)
	}
	var worst float64
	for e := range before[0] {
		var sum, scale float64
		for _, g := range before {
			sum += float64(g[e])
			scale += math.Abs(float64(g[e]))
		}
		// Summed in float32 over at most three copies: a few units of
		// round-off of the terms' magnitude.
		if d := math.Abs(float64(after[0][e]) - sum); d > 4e-7*scale+1e-30 {
			worst = max(worst, d)
		}
	}
	if worst > 0 {
		t.Errorf("step %d tie %d: gradients differ from the sum of the copies by up to %.3g", step, i, worst)
	}
	for c := 1; c < len(after); c++ {
		if !slices.Equal(after[c], after[0]) {
			t.Errorf("step %d tie %d: copy %d's gradient differs from copy 0's", step, i, c)
		}
	}
}

// TestAllReduceOnMeta checks that the all-reduce runs on the meta
// backend, as the predictor's memory replay (MetaStep) runs it, and that
// its buffers count as communication memory: on each device of a pair
// its own part and the other's, both at once.
func TestAllReduceOnMeta(t *testing.T) {
	ctx := watch(t, time.Minute)
	o := schedule.Options{Name: schedule.GPipe, Devices: 4, Micro: 2}
	tr := tieTrainer(t, tensor.MetaBackend, o, []int{0, 1, 2, 3, 5}, [][][2]int{{{1, 0}, {3, 0}}})
	res, err := tr.Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	part := int64(32*32) * 4
	for _, d := range []int{1, 3} {
		if got := res.Devices[d].Memory.PeakBytes[tensor.Comm]; got < 2*part {
			t.Errorf("device %d: communication peak %d bytes, want at least the two parts' %d", d, got, 2*part)
		}
	}
}
