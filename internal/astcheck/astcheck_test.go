package astcheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

const src = `package p

type Kind int

const (
	A Kind = iota
	B
	numKinds
)

const Other = 3

func f(k Kind, x int) {
	switch k {
	case A:
	case q.B, q.A:
	}
	switch {
	case x > 0:
	}
}
`

func TestConstantsAndCases(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Constants(file, "Kind")
	if err != nil || !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("Constants = %v, %v; want [A B]", got, err)
	}
	if _, err := Constants(file, "Missing"); err == nil {
		t.Error("Constants of a type with none: no error")
	}
	cases, err := CaseSelectors(file, "f", "q")
	if err != nil || !slices.Equal(cases, []string{"A", "B"}) {
		t.Errorf("CaseSelectors = %v, %v; want [A B]", cases, err)
	}
	if _, err := CaseSelectors(file, "g", "q"); err == nil {
		t.Error("CaseSelectors of a missing function: no error")
	}
}
