package predictor

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/runner"
	"github.com/pipecast/pipecast/schedule"
)

// seqCost is a block's known time t = a + b·m·S + c·m·S² that synthetic
// language-model records follow.
type seqCost struct{ a, b, c float64 }

func (s seqCost) at(m, seq int) float64 {
	x := float64(m * seq)
	return s.a + s.b*x + s.c*x*float64(seq)
}

// seqCosts are a decoder layer's forward, whose attention grows with
// m·S², and an LM head's, which grows with the tokens alone; the loss
// follows lossCost in the tokens.
var (
	seqCosts = []seqCost{{a: 2000, b: 30, c: 0.05}, {a: 500, b: 50}}
	lossCost = seqCost{a: 300, b: 4}
)

// seqRecord returns a measured K = 1 record of a two-block language model
// (vocabulary 64, 2 layers, width 0.125) at sequence length seq, batch 8
// in micro micro-batches, whose blocks' forwards and backwards (twice the
// forward) and loss follow seqCosts and lossCost exactly.
func seqRecord(seq, micro int) profiler.Record {
	const batch = 8
	m := batch / micro
	r := profiler.Record{
		Schema: profiler.SchemaVersion, Kind: profiler.KindMeasured,
		ID: fmt.Sprintf("seq%d-m%d", seq, micro), CreatedUTC: "2026-01-01T00:00:00Z",
		Env: profiler.Environment{Backend: "cpu"},
		Config: profiler.RunConfig{
			Model: "lm", Batch: batch, Threads: 1, Steps: 2,
			RecordOptions: schedule.RecordOptions{Devices: 1, Micro: micro, Schedule: schedule.GPipe},
			SizeRecord:    models.SizeRecord{Classes: 64, Width: 0.125, Seq: seq, Vocab: 64, Layers: 2},
		},
		Steps:     []profiler.Step{{Step: 1, WallNanos: 100}, {Step: 2, WallNanos: 100}},
		Partition: []profiler.Stage{{Device: 0, FirstBlock: 0, EndBlock: 2, Params: 1000}},
	}
	for b, c := range seqCosts {
		f := c.at(m, seq)
		r.Blocks = append(r.Blocks, profiler.BlockTiming{Block: b, Name: fmt.Sprintf("b%d", b), Samples: m,
			ForwardNanos: int64(math.Round(f)), BackwardNanos: int64(math.Round(2 * f))})
	}
	r.Events = append(r.Events, profiler.Event{Step: 1, Op: "loss", Micro: 0, Shard: -1, Peer: -1, Block: -1,
		EndNanos: int64(math.Round(lossCost.at(m, seq)))})
	return r
}

// seqRecords returns seqRecord at every sequence length of seqs and M ∈
// {1, 2, 4, 8}.
func seqRecords(seqs ...int) []profiler.Record {
	var out []profiler.Record
	for _, s := range seqs {
		for _, micro := range []int{1, 2, 4, 8} {
			out = append(out, seqRecord(s, micro))
		}
	}
	return out
}

// TestFitAcrossSequenceLengths checks that a language model's records at
// three sequence lengths fit one cost model, keyed without the sequence
// length, whose blocks recover t = a + b·m·S + c·m·S² and forecast
// sequence lengths and micro-batch sizes never measured, between the
// measured ones and beyond them; and that records of one sequence length
// alone, where m·S² is m·S times a constant, fit a line in the tokens.
func TestFitAcrossSequenceLengths(t *testing.T) {
	// The synthetic times are rounded to whole nanoseconds.
	const tol = 1e-4
	c := onlyModel(t, mustFit(t, seqRecords(32, 64, 128)))
	if c.Key.Seq != 0 || !c.Key.SpansSeq() {
		t.Errorf("key %+v: want one without a sequence length, spanning them", c.Key)
	}
	if got, want := fmt.Sprint(c.Seqs()), "[32 64 128]"; got != want {
		t.Errorf("Seqs() = %s, want %s", got, want)
	}
	if q := c.blocks[0].lines[PhaseForward].Quad; !closeTo(q, seqCosts[0].c, 1e-3) {
		t.Errorf("layer forward: m·S² coefficient %g, want %g", q, seqCosts[0].c)
	}
	for _, tc := range []struct{ m, seq int }{{3, 96}, {8, 128}, {1, 16}, {2, 256}} {
		for b, cost := range seqCosts {
			for _, p := range []Phase{PhaseForward, PhaseBackward} {
				want := cost.at(tc.m, tc.seq)
				if p == PhaseBackward {
					want *= 2
				}
				got, err := c.Block(b, p, tc.m, tc.seq)
				if err != nil {
					t.Fatal(err)
				}
				if !closeTo(got, want, tol) {
					t.Errorf("block %d %s at m=%d S=%d: %.1f ns, want %.1f", b, p, tc.m, tc.seq, got, want)
				}
			}
		}
		if got, want := c.Loss(tc.m, tc.seq), lossCost.at(tc.m, tc.seq); !closeTo(got, want, tol) {
			t.Errorf("loss at m=%d S=%d: %.1f ns, want %.1f", tc.m, tc.seq, got, want)
		}
	}
	for _, r := range c.Reports() {
		if r.Name == "loss" && r.Variable != "tokens" {
			t.Errorf("loss fitted in %q, want tokens", r.Variable)
		}
	}

	one := onlyModel(t, mustFit(t, seqRecords(64)))
	for b := range seqCosts {
		if q := one.blocks[b].lines[PhaseForward].Quad; q != 0 {
			t.Errorf("one sequence length: block %d has an m·S² coefficient %g, want none", b, q)
		}
	}
	// At its own sequence length it is exact; elsewhere it prices every
	// token alike.
	for _, m := range []int{1, 3, 8} {
		if got, want := one.blocks[0].lines[PhaseForward].AtSeq(callSize(m, 64), 64), seqCosts[0].at(m, 64); !closeTo(got, want, tol) {
			t.Errorf("one sequence length: layer at m=%d S=64: %.1f ns, want %.1f", m, got, want)
		}
	}
}

// TestFitSeqKeepsCNNLine checks that records without a sequence length
// fit as they always have: a line in the samples, with no m·S² term.
func TestFitSeqKeepsCNNLine(t *testing.T) {
	c := onlyModel(t, mustFit(t, synthRecords(testCosts, 1, false, false)))
	if c.Key.SpansSeq() || len(c.Seqs()) != 0 {
		t.Errorf("key %v spans sequence lengths %v, want none", c.Key, c.Seqs())
	}
	for b := range c.blocks {
		for p := range phaseNames {
			if q := c.blocks[b].lines[p].Quad; q != 0 {
				t.Errorf("block %d %s: m·S² coefficient %g", b, Phase(p), q)
			}
		}
	}
	for _, r := range c.Reports() {
		if r.Variable == "tokens" {
			t.Errorf("%s fitted in tokens", r.Name)
		}
	}
}

// TestQuadNeedsSupport checks that the m·S² term is kept only where
// held-out points support it (each point at two sequence lengths, each
// length at three): times that grow with m·S² keep it, times linear in
// the tokens with ±3 % of noise (in a pattern a quadratic fits better
// in-sample) do not.
func TestQuadNeedsSupport(t *testing.T) {
	none := func(int) float64 { return 0 }
	alternating := func(i int) float64 { return 0.03 * float64(1-2*(i%2)) }
	for _, tc := range []struct {
		name  string
		seqs  []int
		noise func(i int) float64
		cost  seqCost
		quad  bool
	}{
		{name: "attention", seqs: []int{64, 128}, cost: seqCost{a: 2000, b: 30, c: 0.05}, noise: none, quad: true},
		{name: "attention at three lengths", seqs: []int{32, 64, 128}, cost: seqCost{a: 2000, b: 30, c: 0.05}, noise: none, quad: true},
		{name: "linear with noise", seqs: []int{64, 128}, cost: seqCost{a: 2000, b: 30}, noise: alternating},
		{name: "linear with noise at three lengths", seqs: []int{32, 64, 128}, cost: seqCost{a: 2000, b: 30}, noise: alternating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pts points
			i := 0
			for _, seq := range tc.seqs {
				for _, m := range []int{1, 2, 4, 8} {
					pts.addBlock(m, seq, tc.cost.at(m, seq)*(1+tc.noise(i)))
					i++
				}
			}
			l, err := fitLine(&pts, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Quad > 0; got != tc.quad {
				t.Errorf("m·S² coefficient %g: kept %v, want %v", l.Quad, got, tc.quad)
			}
			if xs, ss, ts := typicalByX(&pts); !tc.quad {
				// The in-sample fit takes the term: what drops it is
				// the held-out points.
				if q, err := nnlsLine(xs, ss, ts); err != nil || q.Quad <= 0 {
					t.Errorf("in-sample m·S² coefficient %g (%v): the noise no longer tempts the quadratic", q.Quad, err)
				}
			}
		})
	}
}

// lmConfig is a small GPT-2 (2 layers of width 0.125, vocabulary 64) at
// sequence length seq, batch 4, under sched on k devices with m
// micro-batches.
func lmConfig(seq int, sched string, k, m int) config.Config {
	return config.Config{Model: "gpt2", ModelConfig: models.Config{Width: 0.125, Seq: seq, Vocab: 64, Layers: 2}, Batch: 4,
		Schedule: schedule.Options{Name: sched, Devices: k, Micro: m, Checkpoint: schedule.ExceptLast}, Balance: config.BalanceMACs,
		Threads: 1, Dataset: "synthetic", Seed: 1}
}

// lmRuns runs lmConfig at every sequence length of seqs on one device,
// M ∈ {1, 2}, under gpipe and zb-h1.
func lmRuns(t *testing.T, seqs ...int) []profiler.Record {
	t.Helper()
	var recs []profiler.Record
	for _, seq := range seqs {
		for _, sched := range []string{schedule.GPipe, schedule.ZBH1} {
			for _, m := range []int{1, 2} {
				res, err := runner.Run(context.Background(), lmConfig(seq, sched, 1, m),
					runner.RunOptions{Warmup: 1, Steps: 2, BlockTiming: true, Calibrate: true})
				if err != nil {
					t.Fatal(err)
				}
				recs = append(recs, res.Record())
			}
		}
	}
	return recs
}

// TestPredictUnseenSeq checks that a cost model fitted to a small GPT-2's
// runs at 8 and 16 tokens forecasts 12 and 32 tokens on two devices, its
// record of the forecast's sequence length and its memory the meta
// replay's at that length, and that the data's sweep lists the measured
// lengths; and that validation holds each length out in turn.
func TestPredictUnseenSeq(t *testing.T) {
	recs := lmRuns(t, 8, 16)
	fits := mustFit(t, recs)
	c := onlyModel(t, fits)
	if got := DataSweep(recs, c.Key).SizeVariants.Seqs; !slices.Equal(got, []int{8, 16}) {
		t.Errorf("the data's sweep has sequence lengths %v, want [8 16]", got)
	}
	if got := c.ExtrapolatedSeqs([]int{32, 12, 8, 32, 4}); !slices.Equal(got, []int{4, 32}) {
		t.Errorf("ExtrapolatedSeqs = %v, want [4 32]", got)
	}
	for _, seq := range []int{12, 16, 32} {
		cfg := lmConfig(seq, schedule.GPipe, 2, 2)
		rec, err := Predict(context.Background(), c, cfg)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if rec.Config.Seq != seq {
			t.Errorf("forecast of seq %d records seq %d", seq, rec.Config.Seq)
		}
		cfg.Bounds = rec.Bounds()
		mem, err := PeakMemory(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for d, dev := range rec.Devices {
			if want := mem[d].PeakTotalBytes; dev.PeakBytes != want {
				t.Errorf("seq %d device %d: forecast peak %d bytes, the meta replay's at seq %d %d", seq, d, dev.PeakBytes, seq, want)
			}
		}
	}

	v, err := Validate(context.Background(), recs, HoldoutSeq, 1)
	if err != nil {
		t.Fatal(err)
	}
	folds := map[string]int{}
	for _, p := range v.Pairs {
		folds[p.Fold]++
		if want := fmt.Sprintf("S=%d", p.Config.Seq); p.Fold != want {
			t.Errorf("pair of seq %d in fold %q", p.Config.Seq, p.Fold)
		}
	}
	if folds["S=8"] == 0 || folds["S=16"] == 0 {
		t.Errorf("folds %v: want both sequence lengths held out", folds)
	}
	if v.Memory.DeviceMaxErr > 0.05 {
		t.Errorf("held-out sequence lengths: peak memory off by %.1f %%", 100*v.Memory.DeviceMaxErr)
	}

	// A CNN's records have one sequence length, 0: nothing is left to fit
	// on.
	if _, err := Validate(context.Background(), synthRecords(testCosts, 1, false, false), HoldoutSeq, 1); !errors.Is(err, ErrNoneForecast) {
		t.Errorf("seq holdout of a CNN's records: %v, want ErrNoneForecast", err)
	}
}

// TestKeyOfLanguageModel checks that a language model's key leaves its
// sequence length out and says so, and a CNN's keeps its size whole.
func TestKeyOfLanguageModel(t *testing.T) {
	lm := seqRecord(64, 2)
	k := KeyOf(&lm)
	if k.Seq != 0 || k.Vocab != 64 || k.Layers != 2 {
		t.Errorf("KeyOf = %+v, want vocab 64, 2 layers, no sequence length", k)
	}
	if got, want := k.String(), "lm (vocab 64, 2 layers, width 0.125, any sequence length) on cpu with 1 thread(s) per device"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	cnn := synthRecord(testCosts, 1, 1, 1, false, false)
	if k := KeyOf(&cnn); k.SizeRecord != cnn.Config.SizeRecord || k.SpansSeq() {
		t.Errorf("KeyOf(CNN) = %+v, want its size %+v whole", k, cnn.Config.SizeRecord)
	}
}

// TestQuadBlocks checks that the m·S² term is open to the blocks whose
// multiply-accumulates grow with it: GPT-2's and Llama's decoder layers,
// not their embeddings or LM heads; and to every block of a model this
// build cannot describe, and to none of a CNN's.
func TestQuadBlocks(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  []bool
	}{
		{"gpt2", []bool{false, true, true, false}},
		{"tinyllama-1.1b", []bool{false, true, true, false}},
		{"lm", nil},
	} {
		k := Key{Model: tc.model, SizeRecord: models.SizeRecord{Width: 0.0625, Vocab: 64, Layers: 2}, Backend: "cpu", Threads: 1}
		if got := quadBlocks(k); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.model, got, tc.want)
		}
	}
	cnn := synthRecord(testCosts, 1, 1, 1, false, false)
	if got := quadBlocks(KeyOf(&cnn)); got != nil {
		t.Errorf("a CNN's blocks: %v, want nil", got)
	}
}
