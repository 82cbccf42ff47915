package config

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/schedule"
)

// llama is llama2-7b at 4096 tokens on K = 8 devices under 1f1b, M = 8:
// its first device keeps 8 micro-batches in flight, its last one.
func llama() Config {
	return Config{Model: "llama2-7b", ModelConfig: models.Config{Seq: 4096}, Batch: 8, Threads: 1,
		Schedule: schedule.Options{Name: schedule.OneF1B, Devices: 8, Micro: 8}}
}

func TestMemoryModel(t *testing.T) {
	m, err := mlp().Describe()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		opts         schedule.Options
		live, inputs []float64
		err          error
	}{
		{name: "1f1b", opts: schedule.Options{Name: schedule.OneF1B, Devices: 3, Micro: 4}, live: []float64{3, 2, 1}, inputs: []float64{0, 0, 0}},
		{name: "gpipe except-last", opts: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 4},
			live: []float64{1, 1}, inputs: []float64{3, 3}},
		{name: "gpipe never", opts: schedule.Options{Name: schedule.GPipe, Devices: 2, Micro: 4, Checkpoint: schedule.Never},
			live: []float64{4, 4}, inputs: []float64{0, 0}},
		{name: "interleaved", opts: schedule.Options{Name: schedule.Interleaved, Devices: 1, Micro: 4, Virtual: 2}, err: ErrNotSeparable},
		{name: "coop", opts: schedule.Options{Name: schedule.Coop, Devices: 2, Micro: 4}, err: ErrNotSeparable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := mlp()
			c.Schedule = tc.opts
			mm, err := c.MemoryModel(m)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(mm.Live, tc.live) || !slices.Equal(mm.Inputs, tc.inputs) {
				t.Errorf("live %v, inputs %v; want %v, %v", mm.Live, mm.Inputs, tc.live, tc.inputs)
			}
			// SGD with momentum: the value, its gradient and one slot.
			if mm.ParamBytes != 12 || mm.Micro != 2 {
				t.Errorf("%v bytes a parameter, micro-batch %d; want 12 and 2", mm.ParamBytes, mm.Micro)
			}
			var want float64
			for _, b := range m.Blocks[:2] {
				want += 12*float64(b.Cost.Params) + tc.live[0]*2*float64(b.Cost.SavedBytes)
			}
			want += tc.inputs[0] * 2 * 4 * float64(m.Blocks[0].In.Numel())
			if got := mm.Bytes(0, 0, 2); math.Abs(got-want) > 1e-6*want {
				t.Errorf("stage 0 of blocks [0, 2): %v bytes, want %v", got, want)
			}
		})
	}
}

// TestMemoryBalance checks the memory balance on llama2-7b under 1f1b:
// the model's largest device is lighter than at the split of even
// multiply-accumulates, the first stage (8 micro-batches in flight)
// holds fewer blocks than the last (one), and no split is lighter
// (models.PartitionBy is exact; here checked against moving any bound).
func TestMemoryBalance(t *testing.T) {
	c := llama()
	m, err := c.Describe()
	if err != nil {
		t.Fatal(err)
	}
	even, err := c.WithDefaults().Partition(m, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Balance = BalanceMemory
	got, err := c.WithDefaults().Partition(m, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	mm, err := c.MemoryModel(m)
	if err != nil {
		t.Fatal(err)
	}
	light, heavy := slices.Max(mm.Peaks(got)), slices.Max(mm.Peaks(even))
	if light >= heavy {
		t.Errorf("memory split %v: largest %.1f GiB, no lighter than the even split %v's %.1f GiB",
			SizesOf(got), light/(1<<30), SizesOf(even), heavy/(1<<30))
	}
	if s := SizesOf(got); s[0] >= s[7] {
		t.Errorf("memory split %v: the first stage holds no fewer blocks than the last", s)
	}
	for b := 1; b < 8; b++ {
		for _, step := range []int{-1, 1} {
			nb := slices.Clone(got)
			nb[b] += step
			if nb[b] > nb[b-1] && nb[b] < nb[b+1] && slices.Max(mm.Peaks(nb)) < light {
				t.Errorf("split %v is lighter than the balance's %v", SizesOf(nb), SizesOf(got))
			}
		}
	}
	t.Logf("even %v: %.1f GiB; memory %v: %.1f GiB (modelled)", SizesOf(even), heavy/(1<<30), SizesOf(got), light/(1<<30))

	// Interleaved's devices hold several stages: the memory balance
	// balances multiply-accumulates there.
	c.Schedule = schedule.Options{Name: schedule.Interleaved, Devices: 4, Micro: 8, Virtual: 2}
	c.Balance = BalanceMemory
	byMemory, err := c.WithDefaults().Partition(m, 8, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Balance = BalanceMACs
	if byMACs, _ := c.WithDefaults().Partition(m, 8, nil); !slices.Equal(byMemory, byMACs) {
		t.Errorf("interleaved by memory %v, want the MACs split %v", byMemory, byMACs)
	}
}

// TestMemoryCalibrate checks that calibration recovers a stage's
// in-flight count and fixed bytes from exact peaks at two splits, and
// its fixed bytes alone from one.
func TestMemoryCalibrate(t *testing.T) {
	c := llama()
	m, err := c.Describe()
	if err != nil {
		t.Fatal(err)
	}
	mm, err := c.MemoryModel(m)
	if err != nil {
		t.Fatal(err)
	}
	truth := *mm
	truth.Live = slices.Clone(mm.Live)
	truth.Fixed = slices.Clone(mm.Fixed)
	for s := range truth.Live {
		truth.Live[s] = 0.6 * mm.Live[s] // a zero-bubble schedule's devices keep less than MaxLive counts
		truth.Fixed[s] = float64(s+1) * (1 << 28)
	}
	peaks := func(bounds []int) []int64 {
		var out []int64
		for _, p := range truth.Peaks(bounds) {
			out = append(out, int64(math.Round(p)))
		}
		return out
	}
	a, b := BoundsOf([]int{5, 4, 4, 4, 4, 4, 4, 5}), BoundsOf([]int{3, 3, 3, 3, 5, 5, 5, 7}) // every stage keeps other bytes
	one := *mm
	one.Live, one.Fixed = slices.Clone(mm.Live), slices.Clone(mm.Fixed)
	one.Calibrate([]MemoryObservation{{Bounds: a, Peaks: peaks(a)}})
	for s, p := range one.Peaks(a) {
		if want := truth.Peaks(a)[s]; math.Abs(p-want) > 1 {
			t.Errorf("one observation: stage %d at the observed split %.0f bytes, want %.0f", s, p, want)
		}
	}
	mm.Calibrate([]MemoryObservation{{Bounds: a, Peaks: peaks(a)}, {Bounds: b, Peaks: peaks(b)}})
	for s := range mm.Live {
		if math.Abs(mm.Live[s]-truth.Live[s]) > 1e-6 || math.Abs(mm.Fixed[s]-truth.Fixed[s]) > 1e3 {
			t.Errorf("stage %d: live %v, fixed %.0f; want %v, %.0f", s, mm.Live[s], mm.Fixed[s], truth.Live[s], truth.Fixed[s])
		}
	}
}
