package datasets

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pipecast/pipecast/tensor"
)

// TestOpenTokens checks Open for a model of token sequences: synthetic
// tokens and text, and the refusals of image data, of text for a
// vocabulary below a byte's and of text for a model of images.
func TestOpenTokens(t *testing.T) {
	dir := t.TempDir()
	text := writeFile(t, filepath.Join(dir, "t.txt"), []byte(strings.Repeat("to be or not to be ", 10))) // 190 bytes
	writeFile(t, filepath.Join(dir, "short.txt"), []byte("abc"))
	tokens := func(seq, vocab int) Input { return Input{Shape: tensor.Shape{seq}, Classes: vocab, Tokens: true} }
	tests := []struct {
		name    string
		spec    string
		in      Input
		wantLen int
		wantErr string // a substring of the error; "" for success
	}{
		{"default", "", tokens(8, 50257), DefaultSyntheticSamples, ""},
		{"synthetic N", "synthetic:5", tokens(8, 10), 5, ""},
		{"synthetic bad N", "synthetic:x", tokens(8, 10), 0, "not a positive integer"},
		{"text", "text:" + text, tokens(8, 256), 189 / 8, ""},
		{"text at a larger vocabulary", "text:" + text, tokens(16, 32000), 189 / 16, ""},
		{"text without file", "text:", tokens(8, 256), 0, "want text:FILE"},
		{"text below a byte's vocabulary", "text:" + text, tokens(8, 255), 0, "text is byte-level, 256 tokens, more than the model's vocabulary of 255"},
		{"text too short", "text:" + filepath.Join(dir, "short.txt"), tokens(8, 256), 0, "3 bytes, fewer than the 9"},
		{"text missing", "text:" + filepath.Join(dir, "missing"), tokens(8, 256), 0, "no such file"},
		{"cifar10", "cifar10:" + dir, tokens(8, 256), 0, "cifar10 is images"},
		{"mnist", "mnist:" + dir, tokens(8, 256), 0, "mnist is images"},
		{"unknown kind", "wikitext:" + dir, tokens(8, 256), 0, "unknown kind"},
		{"not a sequence", "synthetic", Input{Shape: tensor.Shape{2, 8}, Classes: 10, Tokens: true}, 0, "samples of shape [S]"},
		{"vocabulary beyond float32", "synthetic", tokens(8, MaxVocab+1), 0, "not exact as float32"},
		{"no vocabulary", "synthetic", tokens(8, 0), 0, "0 classes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := Open(tc.spec, tc.in, 1)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error %q spans lines", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			seq := tc.in.Shape[0]
			if ds.Len() != tc.wantLen || !ds.Shape().Equal(tc.in.Shape) || ds.LabelsPerSample() != seq || ds.Classes() > tc.in.Classes {
				t.Fatalf("got %d samples of %v, %d labels each, %d classes; want %d of %v, %d, at most %d",
					ds.Len(), ds.Shape(), ds.LabelsPerSample(), ds.Classes(), tc.wantLen, tc.in.Shape, seq, tc.in.Classes)
			}
			// The loader hands out a label a position.
			b := mustBatch(t, newTestLoader(t, ds, 2, 0), 0)
			if len(b.X) != 2*seq || len(b.Labels) != 2*seq || b.PerSample != seq {
				t.Fatalf("batch of %d values, %d labels, %d a sample; want %d, %d, %d", len(b.X), len(b.Labels), b.PerSample, 2*seq, 2*seq, seq)
			}
		})
	}
}

func TestShapeBatchLabels(t *testing.T) {
	b := ShapeBatch(3, 4, tensor.Shape{16}, 16)
	if b.Len() != 4 || len(b.Labels) != 64 || b.PerSample != 16 || len(b.LabelsRange(1, 3)) != 32 {
		t.Errorf("got %d samples, %d labels, %d a sample; want 4, 64, 16", b.Len(), len(b.Labels), b.PerSample)
	}
	if b := ShapeBatch(0, 4, tensor.Shape{3, 8, 8}, 0); len(b.Labels) != 4 || b.PerSample != 1 {
		t.Errorf("classified samples: %d labels, %d a sample; want 4, 1", len(b.Labels), b.PerSample)
	}
}
