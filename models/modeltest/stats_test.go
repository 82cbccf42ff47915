package modeltest

import "testing"

// TestMomentErrHasPower checks that the moment test rejects samples whose
// scale is 5 % off or whose mean is shifted by a tenth of a standard
// deviation, so that the initialiser tests can fail.
func TestMomentErrHasPower(t *testing.T) {
	rng := NewRand(3)
	v := make([]float32, 20000)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	if err := MomentErr(v, 0, 1); err != nil {
		t.Errorf("N(0, 1) against itself: %v", err)
	}
	if MomentErr(v, 0, 1.05) == nil {
		t.Error("N(0, 1) against std 1.05: no error")
	}
	if MomentErr(v, 0.1, 1) == nil {
		t.Error("N(0, 1) against mean 0.1: no error")
	}
}
