package modeltest

import (
	"testing"
)

// Run runs the suite on the model c describes, each check a subtest.
func Run(t *testing.T, c Case) {
	tests := []struct {
		name string
		fn   func(t *testing.T, c *Case)
	}{
		{"Describe", testDescribe},
		{"Sizes", testSizes},
		{"Structure", testStructure},
		{"StateDict", testStateDict},
		{"Init", testInit},
		{"TrainStep", testTrainStep},
		{"Gradients", testGradients},
		{"ExportImport", testExportImport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, &c) })
	}
}
