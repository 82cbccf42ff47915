package cli

import "testing"

// TestModelsTokenFlagsIgnored checks that the models table notes a
// language model's size flags as not applying to the models of images
// and vectors, whose numbers they leave unchanged, and that a flag at 0,
// each model's default, gets no note.
func TestModelsTokenFlagsIgnored(t *testing.T) {
	def := modelsJSON(t)
	rows := modelsJSON(t, "--seq", "64", "--layers", "2")
	for _, name := range []string{"resnet50", "mlp"} {
		r := rows[name]
		want := name + " takes no token sequences: --seq and --layers do not apply"
		if r.Note == nil || *r.Note != want {
			t.Errorf("%s note: got %v, want %q", name, deref(r.Note), want)
		}
		if r.Params == nil || def[name].Params == nil || *r.Params != *def[name].Params {
			t.Errorf("%s params: got %v, want %v", name, deref(r.Params), deref(def[name].Params))
		}
	}
	rows = modelsJSON(t, "--image", "64", "--vocab", "256")
	if want := "mlp takes flat vectors: --image does not apply; mlp takes no token sequences: --vocab does not apply"; rows["mlp"].Note == nil || *rows["mlp"].Note != want {
		t.Errorf("mlp note: got %v, want %q", deref(rows["mlp"].Note), want)
	}
	if r := modelsJSON(t, "--seq", "0")["resnet50"]; r.Note != nil {
		t.Errorf("resnet50 with --seq 0: note %q, want none", *r.Note)
	}
}
