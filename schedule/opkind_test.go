package schedule

import "testing"

// TestOpKinds checks the table of op kinds: every kind is named, the
// names parse back, and each kind either computes or moves data, with
// the kinds that run blocks or are fitted among those that compute.
func TestOpKinds(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range OpKinds() {
		name := k.String()
		if name == "" || seen[name] {
			t.Errorf("kind %d: name %q empty or repeated", int(k), name)
		}
		seen[name] = true
		if got, err := ParseOpKind(name); err != nil || got != k {
			t.Errorf("ParseOpKind(%q) = %v, %v; want %v", name, got, err, k)
		}
		if k.Computes() == k.MovesData() {
			t.Errorf("%s: computes %v, moves data %v: want exactly one", name, k.Computes(), k.MovesData())
		}
		if (k.RunsBlocks() || k.Fitted()) && !k.Computes() {
			t.Errorf("%s runs blocks or is fitted but does not compute", name)
		}
		if k.Collective() && !k.MovesData() {
			t.Errorf("%s is a collective that does not move data", name)
		}
	}
	if _, err := ParseOpKind("sideways"); err == nil {
		t.Error("ParseOpKind(\"sideways\"): no error")
	}
	for _, k := range []OpKind{-1, numOpKinds} {
		if k.Computes() || k.MovesData() || k.RunsBlocks() || k.Fitted() || k.Collective() {
			t.Errorf("out-of-range kind %d answers true", int(k))
		}
	}
}
