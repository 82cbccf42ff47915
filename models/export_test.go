package models

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// exportCases are small configurations of every network: narrow and at
// small inputs, so that an export takes well under a second.
var exportCases = []struct {
	name  string
	model string
	cfg   Config
	batch int
}{
	{"mlp", "mlp", Config{Sizes: []int{12, 16, 5}}, 3},
	{"mlp batch 1", "mlp", Config{Sizes: []int{6, 4}}, 1},
	{"vgg16bn", "vgg16bn", Config{Image: 32, Width: 1.0 / 16, Classes: 10}, 2},
	{"resnet50", "resnet50", Config{Image: 32, Width: 1.0 / 16, Classes: 10}, 2},
	{"inceptionv3", "inceptionv3", Config{Image: 75, Width: 1.0 / 16, Classes: 10}, 2},
}

// export runs Export into memory.
func export(t *testing.T, dev tensor.Device, opts ExportOptions) ([]byte, ExportResult) {
	t.Helper()
	var buf bytes.Buffer
	res, err := Export(dev, opts, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != int64(buf.Len()) {
		t.Errorf("Bytes: got %d, want %d", res.Bytes, buf.Len())
	}
	return buf.Bytes(), res
}

func TestExportImportReplay(t *testing.T) {
	for _, tc := range exportCases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LookupArch(tc.model); err != nil {
				t.Skipf("%s is not in the zoo yet", tc.model)
			}
			dev := newDevice(t)
			opts := ExportOptions{Model: tc.model, Config: tc.cfg, Batch: tc.batch, Seed: 7}
			b, res := export(t, dev, opts)
			r := openNPZBytes(t, b)

			// The file holds the state_dict, then the step.
			cfg := tc.cfg
			cfg.NoDropout = true
			want, err := Build(dev, tc.model, cfg, rand.New(rand.NewPCG(7, initStream)))
			if err != nil {
				t.Fatal(err)
			}
			defer want.Release()
			entries := StateDict(want.Net)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name)
			}
			names = append(names, ExportInput, ExportTarget, ExportLogits, ExportLoss)
			for _, np := range Params(want.Net) {
				names = append(names, ExportGradPrefix+np.Name)
			}
			if got := strings.Join(r.Keys(), " "); got != strings.Join(names, " ") || strings.Join(res.Names, " ") != got {
				t.Fatalf("keys:\n got %s\n res %v\nwant %s", got, res.Names, strings.Join(names, " "))
			}
			if !IsExport(r) {
				t.Error("IsExport: got false")
			}

			// Importing into a fresh model gives the weights an
			// independent build from the same seed has.
			imp, err := Import(dev, r, tc.model, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer imp.Model.Release()
			if imp.Loaded != len(entries) || len(imp.Converted) != 0 {
				t.Errorf("Loaded %d, Converted %v; want %d and none", imp.Loaded, imp.Converted, len(entries))
			}
			got := StateDict(imp.Model.Net)
			for i, e := range entries {
				if e.Kind == Int64Scalar {
					if *got[i].Buffer.Count != 0 {
						t.Errorf("%s: got %d, want 0 (exported before training)", e.Name, *got[i].Buffer.Count)
					}
					continue
				}
				equalValues(t, e.Name, host(got[i].Tensor()), host(e.Tensor()))
			}

			// The step reproduces exactly: same code, same data, same
			// device.
			rep, err := Replay(dev, imp.Model, r)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Logits != 0 || rep.Loss != 0 || rep.Grads != 0 {
				t.Errorf("replay: got differences logits %g, loss %g, grads %g (%s); want 0", rep.Logits, rep.Loss, rep.Grads, rep.WorstGrad)
			}
			if n := len(Params(want.Net)); rep.GradsCompared != n {
				t.Errorf("replay compared %d gradients, want %d", rep.GradsCompared, n)
			}
			// The replayed step is one training forward: every batch
			// norm counted it.
			for _, e := range StateDict(imp.Model.Net) {
				if e.Kind == Int64Scalar && *e.Buffer.Count != 1 {
					t.Errorf("%s after the replay: got %d, want 1", e.Name, *e.Buffer.Count)
				}
			}

			// The loss is the mean cross entropy of the recorded logits,
			// computed here in float64.
			logits, _ := r.Read(ExportLogits)
			target, _ := r.Read(ExportTarget)
			loss, _ := r.Read(ExportLoss)
			classes := logits.Shape[1]
			ce := 0.0
			for i, c := range target.Int64 {
				if c < 0 || int(c) >= classes {
					t.Fatalf("target %d outside [0, %d)", c, classes)
				}
				row := widen(logits.Float32[i*classes : (i+1)*classes])
				m := math.Inf(-1)
				for _, v := range row {
					m = max(m, v)
				}
				s := 0.0
				for _, v := range row {
					s += math.Exp(v - m)
				}
				ce += m + math.Log(s) - row[c]
			}
			ce /= float64(tc.batch)
			if math.Abs(float64(loss.Float32[0])-ce) > 1e-5*ce || math.Abs(res.Loss-ce) > 1e-5*ce {
				t.Errorf("loss: got %v (file) and %v (result), want %v", loss.Float32[0], res.Loss, ce)
			}
			input, _ := r.Read(ExportInput)
			if !input.Shape.Equal(append(tensor.Shape{tc.batch}, want.Input...)) {
				t.Errorf("input shape: got %v, want [%d %v]", input.Shape, tc.batch, want.Input)
			}
			checkLive(t, dev, "activations after export and replay", tensor.Activations, 0)
		})
	}
}

func TestExportDeterministic(t *testing.T) {
	dev := newDevice(t)
	opts := ExportOptions{Model: "mlp", Config: Config{Sizes: []int{8, 6, 3}}, Batch: 4, Seed: 3}
	a, _ := export(t, dev, opts)
	b, _ := export(t, dev, opts)
	if !bytes.Equal(a, b) {
		t.Error("two exports with the same options differ")
	}
	opts.Seed = 4
	c, _ := export(t, dev, opts)
	if bytes.Equal(a, c) {
		t.Error("exports with different seeds are equal")
	}
}

func TestExportErrors(t *testing.T) {
	tests := []struct {
		name string
		opts ExportOptions
		want string
	}{
		{"unknown model", ExportOptions{Model: "alexnet", Batch: 2}, "unknown model"},
		{"no samples", ExportOptions{Model: "mlp", Batch: 0}, "batch 0"},
		{"batch 1 with batch norm", ExportOptions{Model: "vgg16bn", Config: Config{Image: 32, Width: 1.0 / 16}, Batch: 1}, "batch 1"},
		{"failing writer", ExportOptions{Model: "mlp", Config: Config{Sizes: []int{300, 2}}, Batch: 2}, "disk full"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := LookupArch(tc.opts.Model); err != nil && tc.opts.Model != "alexnet" {
				t.Skipf("%s is not in the zoo yet", tc.opts.Model)
			}
			dev := newDevice(t)
			_, err := Export(dev, tc.opts, failingWriter{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
			checkLive(t, dev, "weights after a failed export", tensor.Weights, 0)
		})
	}
}

// smallMLP exports an mlp and returns the archive's arrays in memory.
func smallMLP(t *testing.T, dev tensor.Device) (Arrays, *Model) {
	t.Helper()
	b, _ := export(t, dev, ExportOptions{Model: "mlp", Config: Config{Sizes: []int{4, 3, 2}}, Batch: 2, Seed: 1})
	r := openNPZBytes(t, b)
	arrays := Arrays{}
	for _, k := range r.Keys() {
		a, err := r.Read(k)
		if err != nil {
			t.Fatal(err)
		}
		arrays[k] = a
	}
	m, err := Build(dev, "mlp", Config{Sizes: []int{4, 3, 2}}, newRand(9))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Release)
	return arrays, m
}

func TestLoadStateDictErrors(t *testing.T) {
	dev := newDevice(t)
	arrays, m := smallMLP(t, dev)
	before := map[string][]float64{}
	for _, e := range StateDict(m.Net) {
		before[e.Name] = host(e.Tensor())
	}
	delete(arrays, "2.bias")
	delete(arrays, "0.weight")
	arrays["3.weight"] = &Array{ArrayInfo: ArrayInfo{Shape: tensor.Shape{1}, DType: DTypeFloat32}, Float32: []float32{1}}
	arrays["extra"] = &Array{ArrayInfo: ArrayInfo{Shape: tensor.Shape{}, DType: DTypeInt64}, Int64: []int64{1}}
	arrays["0.bias"] = &Array{ArrayInfo: ArrayInfo{Shape: tensor.Shape{4}, DType: DTypeFloat32}, Float32: make([]float32, 4)}
	arrays["2.weight"] = &Array{ArrayInfo: ArrayInfo{Shape: tensor.Shape{2, 3}, DType: DTypeInt64}, Int64: make([]int64, 6)}

	err := LoadStateDict(m.Net, arrays)
	var serr *StateDictError
	if !errors.As(err, &serr) {
		t.Fatalf("got error %v, want a *StateDictError", err)
	}
	if got := fmt.Sprint(serr.Missing); got != "[0.weight 2.bias]" {
		t.Errorf("missing: got %s, want [0.weight 2.bias]", got)
	}
	if got := fmt.Sprint(serr.Unexpected); got != "[3.weight extra]" {
		t.Errorf("unexpected: got %s, want [3.weight extra] (the export's own arrays are not)", got)
	}
	want := "[0.bias: file float32 [4], model float32 [3] 2.weight: file int64 [2 3], model float32 [2 3]]"
	if got := fmt.Sprint(serr.Mismatched); got != want {
		t.Errorf("mismatched: got %s, want %s", got, want)
	}
	for _, name := range []string{"0.weight", "2.bias", "3.weight", "extra", "0.bias", "2.weight"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	for _, e := range StateDict(m.Net) {
		equalValues(t, e.Name+" after a failed load", host(e.Tensor()), before[e.Name])
	}
}

func TestLoadStateDictFloat64AndCounters(t *testing.T) {
	dev := newDevice(t)
	bn := NewBatchNorm2D(dev, 2, tensor.DefaultBatchNorm())
	defer ReleaseLayer(bn)
	f64 := func(v ...float32) *Array {
		return &Array{ArrayInfo: ArrayInfo{Shape: tensor.Shape{len(v)}, DType: DTypeFloat64}, Float32: v}
	}
	f32 := func(v ...float32) *Array {
		return &Array{ArrayInfo: ArrayInfo{Shape: tensor.Shape{len(v)}, DType: DTypeFloat32}, Float32: v}
	}
	arrays := Arrays{
		"weight": f32(1, 2), "bias": f64(3, 4), "running_mean": f32(5, 6), "running_var": f64(7, 8),
		"num_batches_tracked": {ArrayInfo: ArrayInfo{Shape: tensor.Shape{}, DType: DTypeInt64}, Int64: []int64{42}},
	}
	converted, err := loadStateDict(bn, arrays)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(converted) != "[bias running_var]" {
		t.Errorf("converted: got %v, want [bias running_var]", converted)
	}
	if *bn.NumBatchesTracked.Count != 42 || fmt.Sprint(host(bn.RunningVar.Value)) != "[7 8]" || fmt.Sprint(host(bn.Bias.Value)) != "[3 4]" {
		t.Errorf("loaded count %d, running_var %v, bias %v", *bn.NumBatchesTracked.Count, host(bn.RunningVar.Value), host(bn.Bias.Value))
	}
	// A counter stored as a float, or as a vector, does not load.
	arrays["num_batches_tracked"] = f32(1)
	if err := LoadStateDict(bn, arrays); err == nil || !strings.Contains(err.Error(), "num_batches_tracked: file float32 [1], model int64 []") {
		t.Errorf("float counter: got %v", err)
	}
}

func TestImportCorruptFiles(t *testing.T) {
	dev := newDevice(t)
	cfg := Config{Sizes: []int{20, 8, 3}}
	b, _ := export(t, dev, ExportOptions{Model: "mlp", Config: cfg, Batch: 2, Seed: 1})
	type corrupt struct {
		name    string
		archive []byte
		open    bool   // refused by OpenNPZ, at the zip directory
		want    string // part of Import's error otherwise
	}
	var tests []corrupt
	for _, n := range []int{0, 1, 30, 200, len(b) / 2, len(b) - 100, len(b) - 1} {
		tests = append(tests, corrupt{name: fmt.Sprintf("truncated to %d bytes", n), archive: b[:n], open: true})
	}
	// The first entry's data start after its local header (30 bytes),
	// its name and its 128-byte .npy header.
	data := 30 + len("0.weight.npy") + 128
	flipped := bytes.Clone(b)
	flipped[data+4] ^= 0x40
	tests = append(tests, corrupt{name: "bit flipped in a weight", archive: flipped, want: "checksum"})
	reshaped := bytes.Clone(b)
	i := bytes.Index(reshaped, []byte("'shape': (8, 20)"))
	copy(reshaped[i:], "'shape': (9, 20)")
	tests = append(tests, corrupt{name: "header claims more data", archive: reshaped, want: "0.weight"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenNPZ(bytes.NewReader(tc.archive), int64(len(tc.archive)))
			if tc.open {
				if err == nil {
					t.Fatal("OpenNPZ: got no error")
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenNPZ: %v", err)
			}
			imp, err := Import(dev, r, "mlp", cfg)
			if err == nil {
				imp.Model.Release()
				t.Fatal("Import: got no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Import: got error %v, want one containing %q", err, tc.want)
			}
			checkLive(t, dev, "weights after a failed import", tensor.Weights, 0)
		})
	}
}

func TestReplayErrors(t *testing.T) {
	dev := newDevice(t)
	arrays, m := smallMLP(t, dev)
	tests := []struct {
		name   string
		change func(a Arrays)
		want   string
	}{
		{"no input", func(a Arrays) { delete(a, ExportInput) }, "input"},
		{"target as float", func(a Arrays) { a[ExportTarget].DType = DTypeFloat32 }, "target is float32"},
		{"wrong sample shape", func(a Arrays) { a[ExportInput].Shape = tensor.Shape{4, 2} }, "does not fit the model"},
		{"target out of range", func(a Arrays) { a[ExportTarget].Int64 = []int64{0, 2} }, "outside [0, 2)"},
		{"gradient shape", func(a Arrays) { a["grad.0.bias"].Shape = tensor.Shape{1, 3} }, "grad.0.bias"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Arrays{}
			for k, v := range arrays {
				cp := *v
				cp.Shape = v.Shape.Clone()
				cp.Int64 = append([]int64(nil), v.Int64...)
				c[k] = &cp
			}
			tc.change(c)
			_, err := Replay(dev, m, c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// The mlp's own weights are not the export's: the replay measures
	// a difference.
	rep, err := Replay(dev, m, arrays)
	if err != nil {
		t.Fatal(err)
	}
	if !(rep.Logits > 1e-3) || rep.GradsCompared != 4 {
		t.Errorf("replay with other weights: got logits difference %g over %d gradients, want one over 1e-3 over 4", rep.Logits, rep.GradsCompared)
	}
}

func TestBiasesBeforeBatchNorm(t *testing.T) {
	m, err := Describe("vgg16bn", Config{Image: 32, Width: 1.0 / 16})
	if err != nil {
		t.Skip(err)
	}
	marked := biasesBeforeBatchNorm(m.Net)
	var names []string
	for _, np := range Params(m.Net) {
		if marked[np.Param] {
			names = append(names, np.Name)
		}
	}
	// Every convolution of VGG16-BN (13) feeds a batch norm; the linear
	// layers' biases do not.
	if len(names) != 13 || names[0] != "features.0.bias" || names[12] != "features.40.bias" {
		t.Errorf("got %d biases %v, want the 13 convolutions' features.0.bias … features.40.bias", len(names), names)
	}
	r, err := Describe("resnet50", Config{Image: 32, Width: 1.0 / 16})
	if err == nil && len(biasesBeforeBatchNorm(r.Net)) != 0 {
		t.Error("resnet50: its convolutions have no biases, got some marked")
	}
}
