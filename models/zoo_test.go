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
