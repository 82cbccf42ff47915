package cuda

import (
	"fmt"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// fakeBLAS records its products.
type fakeBLAS struct{ calls []string }

func (b *fakeBLAS) Sgemm(transA, transB bool, m, n, k int, alpha float32, a Ptr, lda int, bp Ptr, ldb int, beta float32, c Ptr, ldc int) error {
	b.calls = append(b.calls, fmt.Sprintf("sgemm %v %v m=%d n=%d k=%d alpha=%v lda=%d ldb=%d beta=%v ldc=%d",
		transA, transB, m, n, k, alpha, lda, ldb, beta, ldc))
	return nil
}

func (b *fakeBLAS) SgemmStridedBatched(transA, transB bool, m, n, k int, alpha float32, a Ptr, lda int, strideA int64,
	bp Ptr, ldb int, strideB int64, beta float32, c Ptr, ldc int, strideC int64, batch int) error {
	b.calls = append(b.calls, fmt.Sprintf("sgemm batched %v %v m=%d n=%d k=%d alpha=%v lda=%d/%d ldb=%d/%d beta=%v ldc=%d/%d batch=%d",
		transA, transB, m, n, k, alpha, lda, strideA, ldb, strideB, beta, ldc, strideC, batch))
	return nil
}

// fakeDNN records its convolutions; each asks for wsBytes of workspace
// and notes the device's live Workspace bytes while it holds it.
type fakeDNN struct {
	dev     *Device
	wsBytes int64
	calls   []string
	held    []int64
}

func (n *fakeDNN) call(what string, s ConvShape, ws func(int64) (Ptr, error)) error {
	n.calls = append(n.calls, fmt.Sprintf("%s %+v", what, s))
	if _, err := ws(n.wsBytes); err != nil {
		return err
	}
	n.held = append(n.held, n.dev.Memory().LiveBytes[tensor.Workspace])
	return nil
}

func (n *fakeDNN) ConvForward(s ConvShape, x, w, y Ptr, ws func(int64) (Ptr, error)) error {
	return n.call("forward", s, ws)
}

func (n *fakeDNN) ConvBackwardData(s ConvShape, dy, w, dx Ptr, ws func(int64) (Ptr, error)) error {
	return n.call("backward data", s, ws)
}

func (n *fakeDNN) ConvBackwardFilter(s ConvShape, x, dy, dw Ptr, ws func(int64) (Ptr, error)) error {
	return n.call("backward filter", s, ws)
}

func TestGridHelpers(t *testing.T) {
	tests := []struct {
		name      string
		got, want [3]uint32
	}{
		{"stride, nothing", gridStride(0), [3]uint32{0, 1, 1}},
		{"stride, one element", gridStride(1), [3]uint32{1, 1, 1}},
		{"stride, one block", gridStride(256), [3]uint32{1, 1, 1}},
		{"stride, just past", gridStride(257), [3]uint32{2, 1, 1}},
		{"stride, at the cap", gridStride(4096 * 256), [3]uint32{4096, 1, 1}},
		{"stride, past the cap", gridStride(1 << 40), [3]uint32{4096, 1, 1}},
		{"per item", gridPerItem(70), [3]uint32{70, 1, 1}},
		{"per item, capped", gridPerItem(70000), [3]uint32{65535, 1, 1}},
		{"tiles 130×200", gridTiles(130, 200), [3]uint32{4, 3, 1}},
		{"tiles 64×64", gridTiles(64, 64), [3]uint32{1, 1, 1}},
		{"tiles, empty", gridTiles(0, 5), [3]uint32{0, 0, 1}},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// launchWant is a launch a test expects: its kernel and grid, and some
// of its arguments.
type launchWant struct {
	k    Kernel
	grid [3]uint32
	args map[string]any
}

// checkLaunches compares f's launches with want.
func checkLaunches(t *testing.T, what string, f *fakeDriver, want []launchWant) {
	t.Helper()
	if len(f.launches) != len(want) {
		t.Errorf("%s: launched %v, want %d launches", what, f.kernels(), len(want))
		return
	}
	for i, w := range want {
		r := f.launches[i]
		wantBlock := block1D
		switch w.k {
		case KernelSgemm, KernelSgemmBatched, KernelConvFwd, KernelConvBwdData, KernelConvBwdFilterAcc, KernelConvBwdFilterPart:
			wantBlock = blockTile
		}
		if r.k != w.k || r.grid != w.grid || r.block != wantBlock {
			t.Errorf("%s: launch %d is %s grid %v block %v, want %s grid %v block %v",
				what, i, r.k.Name(), r.grid, r.block, w.k.Name(), w.grid, wantBlock)
		}
		for name, v := range w.args {
			if r.args[name] != v {
				t.Errorf("%s: %s's %s: got %v (%T), want %v (%T)", what, r.k.Name(), name, r.args[name], r.args[name], v, v)
			}
		}
	}
}

func TestGemmChoosesBLASOrKernel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		blas   bool
		env    string
		kernel bool
	}{
		{name: "no BLAS", kernel: true},
		{name: "BLAS", blas: true},
		{name: "BLAS forced off", blas: true, env: "kernel", kernel: true},
		{name: "another value keeps BLAS", blas: true, env: "cublas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(gemmEnv, tc.env)
			f := newFakeDriver()
			b := &fakeBLAS{}
			if tc.blas {
				f.blas = b
			}
			d := New(f, "cudafake", "cudafake:0")
			defer d.Close()
			a, bt, c := d.Alloc(tensor.Activations, 70, 130), d.Alloc(tensor.Activations, 200, 70), d.Alloc(tensor.Activations, 130, 200)
			defer a.Release()
			defer bt.Release()
			defer c.Release()
			d.Gemm(true, true, -0.5, a, bt, 1, c)
			if !tc.kernel {
				checkLaunches(t, "gemm", f, nil)
				if want := "sgemm true true m=130 n=200 k=70 alpha=-0.5 lda=130 ldb=70 beta=1 ldc=200"; len(b.calls) != 1 || b.calls[0] != want {
					t.Errorf("BLAS calls: got %q, want [%q]", b.calls, want)
				}
				return
			}
			if len(b.calls) != 0 {
				t.Errorf("BLAS called %q, want the kernel", b.calls)
			}
			checkLaunches(t, "gemm", f, []launchWant{{KernelSgemm, [3]uint32{4, 3, 1}, map[string]any{
				"transA": int32(1), "transB": int32(1), "m": int32(130), "n": int32(200), "k": int32(70),
				"lda": int32(130), "ldb": int32(70), "ldc": int32(200), "alpha": float32(-0.5), "beta": float32(1),
				"a": PtrOf(a), "b": PtrOf(bt), "c": PtrOf(c),
			}}})
		})
	}
}

func TestLinearLaunches(t *testing.T) {
	d, f := newFake(t)
	x, w, bias, y := d.Alloc(tensor.Activations, 5, 3), d.Alloc(tensor.Weights, 70000, 3), d.Alloc(tensor.Weights, 70000), d.Alloc(tensor.Activations, 5, 70000)
	for _, tt := range []*tensor.Tensor{x, w, bias, y} {
		defer tt.Release()
	}
	d.LinearForward(x, w, bias, y)
	checkLaunches(t, "linear forward", f, []launchWant{
		{KernelSgemm, [3]uint32{1094, 1, 1}, map[string]any{"transA": int32(0), "transB": int32(1), "m": int32(5), "n": int32(70000), "k": int32(3), "beta": float32(0)}},
		{KernelBiasRows, [3]uint32{1368, 1, 1}, map[string]any{"y": PtrOf(y), "bias": PtrOf(bias), "rows": int64(5), "cols": int32(70000)}},
	})
	f.launches = nil
	d.LinearBackwardParams(x, y, w, bias)
	checkLaunches(t, "linear backward params", f, []launchWant{
		{KernelSgemm, [3]uint32{1, 1094, 1}, map[string]any{"transA": int32(1), "transB": int32(0), "m": int32(70000), "n": int32(3), "k": int32(5), "beta": float32(1)}},
		{KernelColSumsAcc, [3]uint32{65535, 1, 1}, map[string]any{"dy": PtrOf(y), "dbias": PtrOf(bias), "rows": int32(5), "cols": int32(70000)}},
	})
	f.launches = nil
	d.LinearBackwardData(y, w, x)
	checkLaunches(t, "linear backward data", f, []launchWant{
		{KernelSgemm, [3]uint32{1, 1, 1}, map[string]any{"transA": int32(0), "transB": int32(0), "m": int32(5), "n": int32(3), "k": int32(70000)}},
	})
}

func TestConvChoosesDNNOrKernels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dnn    bool
		env    string
		kernel bool
	}{
		{name: "no DNN", kernel: true},
		{name: "DNN", dnn: true},
		{name: "DNN forced off", dnn: true, env: "kernel", kernel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(convEnv, tc.env)
			f := newFakeDriver()
			dnn := &fakeDNN{wsBytes: 1000}
			if tc.dnn {
				f.dnn = dnn
			}
			d := New(f, "cudafake", "cudafake:0")
			dnn.dev = d
			defer d.Close()
			// N=2, C=3, 8×8, O=70, 3×3, stride 1, padding 1: y [2, 70, 8, 8].
			p := tensor.Conv2DParams{StrideH: 1, StrideW: 1, PadH: 1, PadW: 1}
			x, w, b, y := d.Alloc(tensor.Activations, 2, 3, 8, 8), d.Alloc(tensor.Weights, 70, 3, 3, 3), d.Alloc(tensor.Weights, 70), d.Alloc(tensor.Activations, 2, 70, 8, 8)
			for _, tt := range []*tensor.Tensor{x, w, b, y} {
				defer tt.Release()
			}
			d.Conv2DForward(x, w, b, y, p)
			d.Conv2DBackwardData(y, w, x, p)
			d.Conv2DBackwardFilter(x, y, w, b, p)
			bias := launchWant{KernelBiasNchw, [3]uint32{35, 1, 1}, map[string]any{"n": int32(2), "c": int32(70), "hw": int32(64)}}
			sums := launchWant{KernelChannelSumsAcc, [3]uint32{70, 1, 1}, map[string]any{"n": int32(2), "c": int32(70), "hw": int32(64)}}
			if !tc.kernel {
				checkLaunches(t, "conv", f, []launchWant{bias, sums})
				s := "{N:2 C:3 H:8 W:8 O:70 KH:3 KW:3 StrideH:1 StrideW:1 PadH:1 PadW:1 OH:8 OW:8}"
				want := fmt.Sprint([]string{"forward " + s, "backward data " + s, "backward filter " + s})
				if fmt.Sprint(dnn.calls) != want {
					t.Errorf("DNN calls: got %v, want %v", dnn.calls, want)
				}
				if fmt.Sprint(dnn.held) != "[1000 1000 1000]" {
					t.Errorf("workspace live during the calls: got %v, want 1000 bytes each", dnn.held)
				}
				if m := d.Memory(); m.LiveBytes[tensor.Workspace] != 0 {
					t.Errorf("workspace live after the calls: %d bytes", m.LiveBytes[tensor.Workspace])
				}
				return
			}
			if len(dnn.calls) != 0 {
				t.Errorf("DNN called %v, want the kernels", dnn.calls)
			}
			checkLaunches(t, "conv", f, []launchWant{
				{KernelConvFwd, [3]uint32{2, 2, 1}, map[string]any{"n": int32(2), "o": int32(70), "kh": int32(3), "ph": int32(1), "oh": int32(8), "ow": int32(8)}},
				bias,
				{KernelConvBwdData, [3]uint32{2, 1, 1}, map[string]any{"c": int32(3), "h": int32(8)}}, // C=3 by N·H·W=128
				{KernelConvBwdFilterAcc, [3]uint32{1, 2, 1}, nil},                                     // O=70 by C·KH·KW=27
				sums,
			})
		})
	}
}

func TestKernelGeometry(t *testing.T) {
	d, f := newFake(t)
	alloc := func(s ...int) *tensor.Tensor {
		x := d.Alloc(tensor.Activations, s...)
		t.Cleanup(x.Release)
		return x
	}
	x, y, dx := alloc(2, 3, 16, 16), alloc(2, 3, 8, 8), alloc(2, 3, 16, 16)
	c3a, c3b, c3c, c3d, c3e, c3f := alloc(3), alloc(3), alloc(3), alloc(3), alloc(3), alloc(3)
	wide := alloc(2, 70000)
	w70k := alloc(70000)
	big := alloc(4096*256 + 1)
	part1, part2 := alloc(2, 1, 16, 16), alloc(2, 2, 16, 16)
	pool := tensor.Pool2DParams{KH: 2, KW: 2, StrideH: 2, StrideW: 2}
	bn := tensor.DefaultBatchNorm()
	tests := []struct {
		name string
		fn   func()
		want []launchWant
	}{
		{"fill past the grid cap", func() { d.Fill(big, 1) }, []launchWant{{KernelFill, [3]uint32{4096, 1, 1}, map[string]any{"n": int64(4096*256 + 1)}}}},
		{"maxpool forward over y", func() { d.MaxPool2DForward(x, y, pool) }, []launchWant{{KernelMaxpoolFwd, [3]uint32{2, 1, 1}, map[string]any{"oh": int32(8), "kw": int32(2), "sh": int32(2), "pw": int32(0)}}}},
		{"maxpool backward over dx", func() { d.MaxPool2DBackward(x, y, dx, pool) }, []launchWant{{KernelMaxpoolBwd, [3]uint32{6, 1, 1}, nil}}},
		{"avgpool backward over dx", func() { d.AvgPool2DBackward(y, dx, pool) }, []launchWant{{KernelAvgpoolBwd, [3]uint32{6, 1, 1}, nil}}},
		{"adaptive forward over y", func() { d.AdaptiveAvgPool2DForward(x, y) }, []launchWant{{KernelAdaptiveAvgpoolFwd, [3]uint32{2, 1, 1}, map[string]any{"h": int32(16), "ow": int32(8)}}}},
		{"batch norm train", func() { d.BatchNormTrain(x, c3a, c3b, dx, c3c, c3d, c3e, c3f, bn) }, []launchWant{
			{KernelBnStats, [3]uint32{3, 1, 1}, map[string]any{"mean": PtrOf(c3e), "invstd": PtrOf(c3f), "hw": int32(256), "eps": bn.Eps}},
			{KernelBnRunning, [3]uint32{1, 1, 1}, map[string]any{"runMean": PtrOf(c3c), "count": int64(512), "momentum": bn.Momentum}},
			{KernelBnApply, [3]uint32{6, 1, 1}, map[string]any{"y": PtrOf(dx), "gamma": PtrOf(c3a)}},
		}},
		{"batch norm train without running stats", func() { d.BatchNormTrain(x, c3a, c3b, dx, nil, nil, c3e, c3f, bn) }, []launchWant{
			{KernelBnStats, [3]uint32{3, 1, 1}, nil}, {KernelBnApply, [3]uint32{6, 1, 1}, nil},
		}},
		{"batch norm eval", func() { d.BatchNormEval(x, c3a, c3b, c3c, c3d, dx, bn) }, []launchWant{
			{KernelBnInvstd, [3]uint32{1, 1, 1}, map[string]any{"runVar": PtrOf(c3d)}},
			{KernelBnApply, [3]uint32{6, 1, 1}, map[string]any{"mean": PtrOf(c3c)}},
		}},
		{"batch norm backward", func() { d.BatchNormBackward(x, dx, c3a, c3e, c3f, x, c3c, c3d) }, []launchWant{
			{KernelBnBwdReduce, [3]uint32{3, 1, 1}, nil},
			{KernelBnBwdData, [3]uint32{6, 1, 1}, map[string]any{"dx": PtrOf(x)}},
			{KernelBnParamGradsAcc, [3]uint32{1, 1, 1}, map[string]any{"dgamma": PtrOf(c3c), "dbeta": PtrOf(c3d)}},
		}},
		{"batch norm of many channels", func() { d.BatchNormTrain(wide, w70k, w70k, wide, nil, nil, w70k, w70k, bn) }, []launchWant{
			{KernelBnStats, [3]uint32{65535, 1, 1}, map[string]any{"hw": int32(1), "c": int32(70000)}}, {KernelBnApply, [3]uint32{547, 1, 1}, nil},
		}},
		{"concat, a launch per part", func() { d.ConcatChannels(x, []*tensor.Tensor{part1, part2}) }, []launchWant{
			{KernelConcatPart, [3]uint32{2, 1, 1}, map[string]any{"src": PtrOf(part1), "ci": int32(1), "ctotal": int32(3), "coff": int32(0), "hw": int32(256)}},
			{KernelConcatPart, [3]uint32{4, 1, 1}, map[string]any{"src": PtrOf(part2), "ci": int32(2), "coff": int32(1)}},
		}},
		{"split, a launch per part", func() { d.SplitChannels(x, []*tensor.Tensor{part1, part2}) }, []launchWant{
			{KernelSplitPart, [3]uint32{2, 1, 1}, map[string]any{"dst": PtrOf(part1), "coff": int32(0)}},
			{KernelSplitPart, [3]uint32{4, 1, 1}, map[string]any{"dst": PtrOf(part2), "coff": int32(1)}},
		}},
		{"dropout", func() {
			d.DropoutForward(x, dx, 0.25, tensor.DropoutKey{Seed: 1, Step: 2, Layer: 3, Sample: 4})
		}, []launchWant{{KernelDropout, [3]uint32{6, 1, 1}, map[string]any{
			"rows": int32(2), "rowLen": int32(768), "seed": uint64(1), "step": uint64(2), "layer": uint64(3), "sample0": int64(4),
			"threshold": int32(1 << 22), "scale": float32(1 / 0.75),
		}}}},
		{"dropout of everything", func() { d.DropoutBackward(x, dx, 1, tensor.DropoutKey{}) }, []launchWant{
			{KernelFill, [3]uint32{6, 1, 1}, map[string]any{"y": PtrOf(dx), "v": float32(0)}},
		}},
		{"softmax, a block per row", func() {
			logits := w70k.Reshape(70000, 1)
			defer logits.Release()
			d.SoftmaxCrossEntropy(logits, make([]int32, 70000), nil, 1)
		}, []launchWant{
			{KernelSoftmaxXent, [3]uint32{65535, 1, 1}, map[string]any{"rows": int32(70000), "classes": int32(1)}},
		}},
		{"sgd without momentum", func() { d.SGDStep(c3a, c3b, nil, tensor.SGDParams{LR: 0.1}, true) }, []launchWant{
			{KernelSgd, [3]uint32{1, 1, 1}, map[string]any{"buf": Ptr(0), "lr": float32(0.1), "first": int32(1), "nesterov": int32(0)}},
		}},
		{"sgd with momentum", func() {
			d.SGDStep(c3a, c3b, c3c, tensor.SGDParams{LR: 0.1, Momentum: 0.9, Nesterov: true}, false)
		}, []launchWant{
			{KernelSgd, [3]uint32{1, 1, 1}, map[string]any{"buf": PtrOf(c3c), "momentum": float32(0.9), "first": int32(0), "nesterov": int32(1)}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f.launches = nil
			tc.fn()
			checkLaunches(t, tc.name, f, tc.want)
			if m := d.Memory(); m.LiveBytes[tensor.Workspace] != 0 {
				t.Errorf("%d workspace bytes live after the kernel", m.LiveBytes[tensor.Workspace])
			}
		})
	}
}
