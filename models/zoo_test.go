package models

import (
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

func TestDescribeMLP(t *testing.T) {
	m, err := Describe("mlp", Config{})
	if err != nil {
		t.Fatal(err)
	}
	wantParams := int64(784*1024 + 1024 + 1024*1024 + 1024 + 1024*10 + 10)
	if got := m.Params(); got != wantParams {
		t.Errorf("params: got %d, want %d", got, wantParams)
	}
	if got, want := m.MACs(), int64(784*1024+1024*1024+1024*10); got != want {
		t.Errorf("MACs: got %d, want %d", got, want)
	}
	// Block 0 keeps its input (784) for the weight gradient; its ReLU
	// keeps its output too, but that is the block's output, counted as
	// block 1's kept input; the linear output is freed once the ReLU has
	// consumed it.
	for i, want := range []int64{4 * 784, 4 * 1024, 4 * 1024} {
		if got := m.Blocks[i].Cost.SavedBytes; got != want {
			t.Errorf("block %d saved bytes: got %d, want %d", i, got, want)
		}
	}
	if got, want := m.ActivationBytes(), int64(4*(784+1024+1024+10)); got != want {
		t.Errorf("activation bytes: got %d, want %d", got, want)
	}
	if got, want := m.Blocks[0].Cost.OutputBytes, int64(4*1024); got != want {
		t.Errorf("block 0 output bytes: got %d, want %d", got, want)
	}
	if got := len(m.Blocks); got != 3 {
		t.Errorf("blocks: got %d, want 3", got)
	}
	if !m.Blocks[2].Out.Equal(tensor.Shape{10}) {
		t.Errorf("output shape: got %v, want [10]", m.Blocks[2].Out)
	}
	names := []string{}
	for _, p := range Params(m.Net) {
		names = append(names, p.Name)
	}
	want := []string{"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}
	if len(names) != len(want) {
		t.Fatalf("names: got %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names: got %v, want %v", names, want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name, model string
		cfg         Config
	}{
		{"unknown model", "alexnet", Config{}},
		{"negative width", "mlp", Config{Width: -1}},
		{"one size", "mlp", Config{Sizes: []int{10}}},
		{"zero size", "mlp", Config{Sizes: []int{10, 0, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Describe(tc.model, tc.cfg); err == nil {
				t.Error("got no error")
			}
		})
	}
}
