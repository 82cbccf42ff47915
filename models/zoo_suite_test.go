package models_test

import (
	"testing"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/models/modeltest"
)

// zooCases describe every network of the zoo to the suite.
func zooCases() []modeltest.Case {
	cnns := []modeltest.Case{mlpCase(), vgg16BNCase(), vgg16Case(), resNet50Case(), inceptionV3Case()}
	return append(cnns, transformerCases()...)
}

// TestZoo runs the suite on every network of the zoo.
func TestZoo(t *testing.T) {
	for _, c := range zooCases() {
		t.Run(c.Model, func(t *testing.T) { modeltest.Run(t, c) })
	}
}

// TestZooHasCases checks that every registered network has a case, so
// that a new one cannot go untested.
func TestZooHasCases(t *testing.T) {
	have := map[string]bool{}
	for _, c := range zooCases() {
		have[c.Model] = true
	}
	for _, a := range models.Archs() {
		if !have[a.Name] {
			t.Errorf("zoo network %s has no modeltest.Case", a.Name)
		}
	}
}
