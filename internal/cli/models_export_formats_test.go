package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/models"
)

// tokenArgs size the transformers so that an export takes a fraction of
// a second.
var tokenArgs = map[string][]string{
	"gpt2":           {"--model", "gpt2", "--layers", "1", "--seq", "8", "--vocab", "40", "--width", "0.0833333"},
	"tinyllama-1.1b": {"--model", "tinyllama-1.1b", "--layers", "1", "--seq", "8", "--vocab", "40", "--width", "0.0625"},
}

func TestModelsExportImportFormats(t *testing.T) {
	for _, model := range []string{"gpt2", "tinyllama-1.1b"} {
		for _, ext := range []string{".safetensors", ".npz"} {
			t.Run(model+ext, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), model+ext)
				args := append(append([]string{}, tokenArgs[model]...), "--out", path, "--threads", "2")
				code, stdout, stderr, err := runCmd(t, newCmdModelsExport, args...)
				if code != ExitOK {
					t.Fatalf("export: exit %d: %v %s", code, err, stderr)
				}
				if !strings.HasPrefix(stdout, "wrote "+path+": ") || !strings.Contains(stdout, "4 of the step") {
					t.Errorf("export stdout %q", stdout)
				}
				f, err := models.OpenWeightsFile(path)
				if err != nil {
					t.Fatal(err)
				}
				_, isSafetensors := f.(*models.SafetensorsReader)
				if config, err := f.FieldConfig(); err != nil || !json.Valid(config) || isSafetensors != (ext == ".safetensors") {
					t.Errorf("file: config %q (%v), a safetensors reader %v", config, err, isSafetensors)
				}
				f.Close()

				args = append(append([]string{}, tokenArgs[model]...), "--threads", "2", "--output", "json", path)
				code, stdout, stderr, err = runCmd(t, newCmdModelsImport, args...)
				if code != ExitOK || stderr != "" {
					t.Fatalf("import: exit %d: %v %s", code, err, stderr)
				}
				var doc importDoc
				if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
					t.Fatalf("json: %v\n%s", err, stdout)
				}
				if c := doc.Check; c == nil || c.Logits != 0 || c.Loss != 0 || c.Grads != 0 || c.GradsCompared != doc.Loaded || c.Batch != 2 {
					t.Errorf("check: got %+v, want zero differences over %d gradients at batch 2", c, doc.Loaded)
				}
			})
		}
	}
}

func TestModelsExportImportFormatErrors(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "w.safetensors")
	if err := os.WriteFile(other, []byte("not safetensors"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cmd  func(*IOStreams) *cobra.Command
		args []string
		want string
	}{
		{"export to an unknown format", newCmdModelsExport, []string{"--model", "mlp", "--out", filepath.Join(dir, "w.pt")}, `unknown format ".pt"`},
		{"import an unknown format", newCmdModelsImport, []string{"--model", "mlp", filepath.Join(dir, "w.bin")}, `unknown format ".bin"`},
		{"import a corrupt safetensors file", newCmdModelsImport, []string{"--model", "mlp", other}, "read safetensors"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, _, err := runCmd(t, tc.cmd, tc.args...)
			if code != ExitUsage || err == nil || !strings.Contains(err.Error(), tc.want) || stdout != "" {
				t.Fatalf("got exit %d, error %v, stdout %q; want %d and an error containing %q", code, err, stdout, ExitUsage, tc.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d files, want the one written by the test", len(entries))
	}
}
