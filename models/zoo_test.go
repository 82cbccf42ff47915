package models

import (
	"testing"
)

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

// TestResolved checks that Resolved fills a model's defaults as Build
// does, keeps what is set, and rejects an unknown model.
func TestResolved(t *testing.T) {
	got, err := Resolved("resnet50", Config{Image: 32, Width: 0.25})
	if err != nil || got.Image != 32 || got.Classes != 1000 || got.Width != 0.25 {
		t.Errorf("resnet50 at 32 px, width 0.25: %+v, %v", got, err)
	}
	if got, err := Resolved("resnet50", Config{}); err != nil || got.Image != 224 || got.Width != 1 || got.Classes != 1000 {
		t.Errorf("resnet50 by default: %+v, %v", got, err)
	}
	if _, err := Resolved("resnet51", Config{}); err == nil {
		t.Error("resnet51: no error")
	}
}
