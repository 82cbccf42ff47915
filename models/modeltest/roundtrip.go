package modeltest

import (
	"bytes"
	"slices"
	"testing"

	"github.com/pipecast/pipecast/models"
)

// testExportImport writes the state_dict of a model that has run one
// training forward (so that running statistics and counters have moved
// off their initial values) to an .npz archive in the field's format
// (models.WriteStateDict: a tied parameter once, GPT-2's Conv1D weights
// transposed, its config.json beside), reads it back into a fresh model
// with models.Import, and checks that every entry and the evaluation
// forward are the same.
func testExportImport(t *testing.T, c *Case) {
	dev := NewDevice(t)
	rng := NewRand(6)
	m, err := models.Build(dev, c.Model, c.Config, rng)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		m.Release()
		CheckNoLeak(t, dev)
	}()
	x, _ := uploadInput(dev, rng, m, c.batch())
	defer x.Release()
	y, _ := m.Net.Forward(&models.Pass{Dev: dev, Train: true, Seed: 1}, x)
	y.Release()

	var buf bytes.Buffer
	w := models.NewNPZWriter(&buf, false)
	sd := models.StateDict(m.Net)
	var names []string
	for _, e := range sd {
		names = append(names, e.Name)
	}
	if err := models.WriteStateDict(w, m); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := models.OpenNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Keys(); !slices.Equal(got, names) {
		t.Errorf("archive keys:\ngot  %q\nwant %q", got, names)
	}
	imp, err := models.Import(dev, r, c.Model, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Model.Release()
	if imp.Loaded != len(sd) || len(imp.Converted) != 0 {
		t.Errorf("loaded %d, converted %v; want %d and none", imp.Loaded, imp.Converted, len(sd))
	}
	got := models.StateDict(imp.Model.Net)
	if len(got) != len(sd) {
		t.Fatalf("imported %d entries, want %d", len(got), len(sd))
	}
	for i, e := range sd {
		switch {
		case got[i].Name != e.Name:
			t.Errorf("entry %d: got %s, want %s", i, got[i].Name, e.Name)
		case e.Kind == models.Int64Scalar:
			if g, w := *got[i].Buffer.Count, *e.Buffer.Count; g != w || g != 1 {
				t.Errorf("%s: got %d, want %d, the one forward counted", e.Name, g, w)
			}
		default:
			EqualValues(t, e.Name, Host(got[i].Tensor()), Host(e.Tensor()))
		}
	}
	eval := &models.Pass{Dev: dev}
	a, _ := m.Net.Forward(eval, x)
	b, _ := imp.Model.Net.Forward(eval, x)
	EqualValues(t, "evaluation logits of the imported model", Host(b), Host(a))
	a.Release()
	b.Release()
}
