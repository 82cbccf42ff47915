package cuda

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/pipecast/pipecast/tensor"
)

// The launches of the transformer family and AdamW on the fake driver:
// which kernels, on which grids, with which arguments. What the kernels
// compute is the emulator's to test (package emu runs the shared suite on
// them).

func TestTransformerLaunches(t *testing.T) {
	d, f := newFake(t)
	alloc := func(s ...int) *tensor.Tensor {
		x := d.Alloc(tensor.Activations, s...)
		t.Cleanup(x.Release)
		return x
	}
	x, y, dx := alloc(5, 7), alloc(5, 7), alloc(5, 7)
	g7, b7, dg7, db7 := alloc(7), alloc(7), alloc(7), alloc(7)
	m5, r5 := alloc(5), alloc(5)
	q := alloc(2, 3, 4, 6) // [B, S, H, hd]
	rope := tensor.RoPEParams{Seq: 3, Heads: 4, HeadDim: 6, Theta: 500000.5, Inverse: true}
	tests := []struct {
		name string
		fn   func()
		want []launchWant
	}{
		{"layer norm forward, a block per row", func() { d.LayerNormForward(x, g7, b7, y, m5, r5, 1e-5) }, []launchWant{
			{KernelLayernormFwd, [3]uint32{5, 1, 1}, map[string]any{"x": PtrOf(x), "beta": PtrOf(b7), "mean": PtrOf(m5),
				"rows": int32(5), "dim": int32(7), "eps": float32(1e-5)}},
		}},
		{"layer norm backward", func() { d.LayerNormBackward(x, y, g7, m5, r5, dx, dg7, db7) }, []launchWant{
			{KernelLayernormBwdData, [3]uint32{5, 1, 1}, map[string]any{"dy": PtrOf(y), "dx": PtrOf(dx), "rows": int32(5)}},
			{KernelNormParamGradsAcc, [3]uint32{7, 1, 1}, map[string]any{"mean": PtrOf(m5), "dgamma": PtrOf(dg7), "dbeta": PtrOf(db7), "dim": int32(7)}},
		}},
		{"layer norm backward, parameters only, dbeta only", func() { d.LayerNormBackward(x, y, g7, m5, r5, nil, nil, db7) }, []launchWant{
			{KernelNormParamGradsAcc, [3]uint32{7, 1, 1}, map[string]any{"dgamma": Ptr(0), "dbeta": PtrOf(db7)}},
		}},
		{"layer norm backward, input only", func() { d.LayerNormBackward(x, y, g7, m5, r5, dx, nil, nil) }, []launchWant{
			{KernelLayernormBwdData, [3]uint32{5, 1, 1}, nil},
		}},
		{"rms norm forward", func() { d.RMSNormForward(x, g7, y, r5, 1e-6) }, []launchWant{
			{KernelRmsnormFwd, [3]uint32{5, 1, 1}, map[string]any{"rstd": PtrOf(r5), "eps": float32(1e-6)}},
		}},
		{"rms norm backward: no mean, no dbeta", func() { d.RMSNormBackward(x, y, g7, r5, dx, dg7) }, []launchWant{
			{KernelRmsnormBwdData, [3]uint32{5, 1, 1}, map[string]any{"dx": PtrOf(dx)}},
			{KernelNormParamGradsAcc, [3]uint32{7, 1, 1}, map[string]any{"mean": Ptr(0), "dgamma": PtrOf(dg7), "dbeta": Ptr(0)}},
		}},
		{"gelu", func() { d.GELUTanhForward(x, y); d.GELUTanhBackward(x, y, dx) }, []launchWant{
			{KernelGeluTanhFwd, [3]uint32{1, 1, 1}, map[string]any{"n": int64(35)}},
			{KernelGeluTanhBwd, [3]uint32{1, 1, 1}, map[string]any{"dx": PtrOf(dx)}},
		}},
		{"swiglu backward without dgate", func() { d.SwiGLUBackward(x, y, x, nil, dx) }, []launchWant{
			{KernelSwigluBwd, [3]uint32{1, 1, 1}, map[string]any{"dgate": Ptr(0), "dup": PtrOf(dx)}},
		}},
		{"swiglu backward of nothing", func() { d.SwiGLUBackward(x, y, x, nil, nil) }, nil},
		{"rope: a thread per pair, theta in double", func() { d.RoPE(q, q, rope) }, []launchWant{
			{KernelRope, [3]uint32{1, 1, 1}, map[string]any{"x": PtrOf(q), "y": PtrOf(q), "rows": int64(6), "seq": int32(3),
				"heads": int32(4), "headDim": int32(6), "theta": 500000.5, "inverse": int32(1)}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.launches = nil
			tc.fn()
			checkLaunches(t, tc.name, f, tc.want)
		})
	}
}

// TestAttentionBatchesEachHead checks that every attention product is one
// strided batch over the sequences per query head, reading its key/value
// head (GQA: heads 0, 1 read 0; heads 2, 3 read 1), and that dk and dv
// sum a group's heads in order: the first overwrites, the next adds.
func TestAttentionBatchesEachHead(t *testing.T) {
	const b, s, h, hkv, hd = 3, 5, 4, 2, 6
	p := tensor.AttentionParams{Seq: s, Heads: h, KVHeads: hkv, HeadDim: hd, Scale: 0.5, Causal: true}
	f := newFakeDriver()
	blas := &fakeBLAS{}
	f.blas = blas
	d := New(f, "cudafake", "cudafake:0")
	defer d.Close()
	q, k, probs := d.Alloc(tensor.Activations, b, s, h, hd), d.Alloc(tensor.Activations, b, s, hkv, hd), d.Alloc(tensor.Activations, b, h, s, s)
	dq, dk := d.Alloc(tensor.Gradients, b, s, h, hd), d.Alloc(tensor.Gradients, b, s, hkv, hd)
	for _, x := range []*tensor.Tensor{q, k, probs, dq, dk} {
		defer x.Release()
	}

	d.AttentionScores(q, k, probs, p)
	var want []string
	for range h {
		want = append(want, fmt.Sprintf("sgemm batched false true m=%d n=%d k=%d alpha=0.5 lda=%d/%d ldb=%d/%d beta=0 ldc=%d/%d batch=%d",
			s, s, hd, h*hd, s*h*hd, hkv*hd, s*hkv*hd, s, h*s*s, b))
	}
	if strings.Join(blas.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("scores' products:\n%s\nwant:\n%s", strings.Join(blas.calls, "\n"), strings.Join(want, "\n"))
	}
	checkLaunches(t, "scores", f, []launchWant{{KernelAttnSoftmax, [3]uint32{b * h * s, 1, 1},
		map[string]any{"probs": PtrOf(probs), "rows": int64(b * h * s), "seq": int32(s), "causal": int32(1)}}})

	// Each product's pointers: record them through the kernel instead.
	d.blas = nil
	f.launches = nil
	d.AttentionScoresBackward(q, k, probs, probs, nil, dk, p)
	if len(f.launches) != 1+h {
		t.Fatalf("scores backward, dk only: launched %v, want the softmax backward and %d products", f.kernels(), h)
	}
	checkLaunches(t, "softmax backward", &fakeDriver{launches: f.launches[:1]}, []launchWant{{KernelAttnSoftmaxBwd, [3]uint32{b * h * s, 1, 1}, nil}})
	for i, r := range f.launches[1:] {
		g := i / (h / hkv)
		beta := float32(1)
		if i%(h/hkv) == 0 {
			beta = 0
		}
		checkLaunches(t, fmt.Sprintf("dk, head %d", i), &fakeDriver{launches: []launchRec{r}}, []launchWant{{KernelSgemmBatched,
			[3]uint32{1, 1, b}, map[string]any{
				"transA": int32(1), "transB": int32(0), "m": int32(s), "n": int32(hd), "k": int32(s), "alpha": float32(0.5),
				"a": PtrOf(probs).Add(i * s * s), "lda": int32(s), "strideA": int64(h * s * s),
				"b": PtrOf(q).Add(i * hd), "ldb": int32(h * hd), "strideB": int64(s * h * hd),
				"beta": beta, "c": PtrOf(dk).Add(g * hd), "ldc": int32(hkv * hd), "strideC": int64(s * hkv * hd),
			}}})
	}
	f.launches = nil
	d.AttentionScoresBackward(q, k, probs, probs, nil, nil, p)
	if len(f.launches) != 0 {
		t.Errorf("scores backward without dq or dk launched %v", f.kernels())
	}
}

func TestSgemmBatchedSplitsTheGrid(t *testing.T) {
	d, f := newFake(t)
	const batch = maxGridBlocks + 3
	a, b, c := Ptr(1<<30), Ptr(1<<31), Ptr(1<<32)
	d.sgemmBatched("test", false, false, 70, 10, 4, 1, a, 4, 280, b, 10, 40, 0, c, 10, 700, batch)
	checkLaunches(t, "a batch past the grid's z", f, []launchWant{
		{KernelSgemmBatched, [3]uint32{1, 2, maxGridBlocks}, map[string]any{"a": a, "b": b, "c": c, "strideC": int64(700)}},
		{KernelSgemmBatched, [3]uint32{1, 2, 3}, map[string]any{"a": a.Add(maxGridBlocks * 280), "b": b.Add(maxGridBlocks * 40), "c": c.Add(maxGridBlocks * 700)}},
	})
}

// TestEmbeddingBackwardGroupsTokens checks the index lists the embedding
// backward hands its kernel: the rows sorted by token, ascending within
// a token, and where each token's rows start, in a Workspace released
// when the kernel returns.
func TestEmbeddingBackwardGroupsTokens(t *testing.T) {
	d, f := newFake(t)
	ids := []float32{4, 0, 4, 4, 2, 0, 1}
	idT := d.Alloc(tensor.Activations, 7)
	dy, dtable := d.Alloc(tensor.Activations, 7, 3), d.Alloc(tensor.Gradients, 5, 3)
	for _, x := range []*tensor.Tensor{idT, dy, dtable} {
		defer x.Release()
	}
	d.Upload(idT, ids)
	ints := func(p Ptr, n int) []int32 {
		b := f.bytes(p, int64(n)*4)
		return append([]int32(nil), unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), n)...)
	}
	var order, starts []int32
	f.onLaunch = func(f *fakeDriver, r launchRec) {
		order, starts = ints(r.args["order"].(Ptr), 7), ints(r.args["starts"].(Ptr), 5)
	}
	d.EmbeddingBackward(idT, dy, dtable)
	checkLaunches(t, "embedding backward", f, []launchWant{{KernelEmbeddingBwdAcc, [3]uint32{1, 1, 1},
		map[string]any{"ids": PtrOf(idT), "dy": PtrOf(dy), "dtable": PtrOf(dtable), "groups": int32(4), "dim": int32(3)}}})
	if got, want := fmt.Sprint(order, starts), "[1 5 6 4 0 2 3] [0 2 3 4 7]"; got != want {
		t.Errorf("order and starts: got %s, want %s", got, want)
	}
	if m := d.Memory(); m.LiveBytes[tensor.Workspace] != 0 || m.PeakBytes[tensor.Workspace] != (7+5)*4 {
		t.Errorf("workspace: %d bytes live, peak %d; want 0 and %d (the two lists)",
			m.LiveBytes[tensor.Workspace], m.PeakBytes[tensor.Workspace], (7+5)*4)
	}

	f.launches = nil
	d.Upload(idT, []float32{0, 1, 2, 3, 4, 5, 0})
	for _, fn := range []func(){func() { d.EmbeddingBackward(idT, dy, dtable) }, func() { d.EmbeddingForward(idT, dtable, dy) }} {
		if msg := panicMessage(fn); !strings.Contains(msg, "token id 5 outside [0, 5)") {
			t.Errorf("id 5 of 5: got panic %q, want one naming the id", msg)
		}
	}
	if len(f.launches) != 0 || d.Memory().LiveBytes[tensor.Workspace] != 0 {
		t.Errorf("bad ids launched %v and left %d workspace bytes", f.kernels(), d.Memory().LiveBytes[tensor.Workspace])
	}
}

func TestAdamWLaunches(t *testing.T) {
	d, f := newFake(t)
	var ts []*tensor.Tensor
	alloc := func(n int) *tensor.Tensor {
		x := d.Alloc(tensor.Weights, n)
		ts = append(ts, x)
		return x
	}
	defer func() {
		for _, x := range ts {
			x.Release()
		}
	}()
	a := tensor.AdamWParamStep{W: alloc(3), G: alloc(3), ExpAvg: alloc(3), ExpAvgSq: alloc(3), Step: 3}
	b := tensor.AdamWParamStep{W: alloc(300), G: alloc(300), ExpAvg: alloc(300), ExpAvgSq: alloc(300), Step: 1}
	p := tensor.DefaultAdamW()
	d.AdamWSteps([]tensor.AdamWParamStep{a, b}, p, true)
	c := adamwScalarsOf(p, 3)
	checkLaunches(t, "two parameters", f, []launchWant{
		{KernelAdamw, [3]uint32{1, 1, 1}, map[string]any{"w": PtrOf(a.W), "g": PtrOf(a.G), "m": PtrOf(a.ExpAvg), "v": PtrOf(a.ExpAvgSq),
			"n": int64(3), "decay": c.decay, "beta1": p.Beta1, "beta2": p.Beta2, "keep1": c.keep1, "keep2": c.keep2,
			"negStepSize": c.negStepSize, "bc2Sqrt": c.bc2Sqrt, "eps": p.Eps, "zeroGrad": int32(1)}},
		{KernelAdamw, [3]uint32{2, 1, 1}, map[string]any{"w": PtrOf(b.W), "n": int64(300), "bc2Sqrt": adamwScalarsOf(p, 1).bc2Sqrt}},
	})
	f.launches = nil
	bad := b
	bad.Step = 0
	if msg := panicMessage(func() { d.AdamWSteps([]tensor.AdamWParamStep{a, bad}, p, false) }); !strings.Contains(msg, "step 0") {
		t.Errorf("step 0: got panic %q", msg)
	}
	if len(f.launches) != 0 {
		t.Errorf("a bad entry after a good one launched %v, want nothing stepped", f.kernels())
	}
}
