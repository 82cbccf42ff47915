package cli

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/tensor"
)

// runCmd executes the command newCmd makes as Execute would under the
// root command: flag errors are usage errors, and the error maps to an
// exit code. It returns what the command printed to each stream.
func runCmd(t *testing.T, newCmd func(*IOStreams) *cobra.Command, args ...string) (code ExitCode, stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newCmd(&IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	err = cmd.Execute()
	return exitCodeFor(err), out.String(), errOut.String(), err
}

func TestNewCmdModelsExportFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     ModelsExportOptions
		wantCode ExitCode
	}{
		{name: "defaults", args: []string{"--model", "mlp", "--out", "f.npz"},
			want: ModelsExportOptions{Model: "mlp", Out: "f.npz", Batch: 2, Seed: 1, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "every flag", args: []string{"--model", "resnet50", "--out", "r.npz", "--image", "64", "--classes", "10",
			"--width", "0.5", "--batch", "4", "--seed", "9", "--threads", "3"},
			want: ModelsExportOptions{Model: "resnet50", Out: "r.npz", Batch: 4, Seed: 9, Threads: 3, Size: ModelSize{models.SizeVariants{Images: []int{64}, Classes: []int{10}, Widths: []float64{0.5}}}}},
		{name: "no model", args: []string{"--out", "f.npz"}, wantCode: ExitUsage},
		{name: "no out", args: []string{"--model", "mlp"}, wantCode: ExitUsage},
		{name: "zero batch", args: []string{"--model", "mlp", "--out", "f", "--batch", "0"}, wantCode: ExitUsage},
		{name: "negative seed", args: []string{"--model", "mlp", "--out", "f", "--seed", "-1"}, wantCode: ExitUsage},
		{name: "zero width", args: []string{"--model", "mlp", "--out", "f", "--width", "0"}, wantCode: ExitUsage},
		{name: "negative threads", args: []string{"--model", "mlp", "--out", "f", "--threads", "-2"}, wantCode: ExitUsage},
		{name: "argument", args: []string{"--model", "mlp", "--out", "f", "extra"}, wantCode: ExitUsage},
		{name: "unknown flag", args: []string{"--model", "mlp", "--out", "f", "--bogus"}, wantCode: ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *ModelsExportOptions
			var streams *IOStreams
			code, _, _, err := runCmd(t, func(s *IOStreams) *cobra.Command {
				streams = s
				return newCmdModelsExportRun(s, func(o *ModelsExportOptions) error { got = o; return nil })
			}, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit code: got %d (%v), want %d", code, err, tc.wantCode)
			}
			if tc.wantCode != ExitOK {
				if got != nil {
					t.Error("the run function ran despite the error")
				}
				return
			}
			tc.want.IO = streams
			if got == nil || !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("options: got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNewCmdModelsImportFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     ModelsImportOptions
		wantCode ExitCode
	}{
		{name: "defaults", args: []string{"--model", "mlp", "f.npz"},
			want: ModelsImportOptions{Model: "mlp", Path: "f.npz", Output: FormatText, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "json and sizes", args: []string{"--model", "vgg16bn", "--image", "32", "--width", "0.25", "--output", "json", "w.npz"},
			want: ModelsImportOptions{Model: "vgg16bn", Path: "w.npz", Output: FormatJSON, Size: ModelSize{models.SizeVariants{Images: []int{32}, Widths: []float64{0.25}}}}},
		{name: "no file", args: []string{"--model", "mlp"}, wantCode: ExitUsage},
		{name: "two files", args: []string{"--model", "mlp", "a.npz", "b.npz"}, wantCode: ExitUsage},
		{name: "no model", args: []string{"f.npz"}, wantCode: ExitUsage},
		{name: "bad output", args: []string{"--model", "mlp", "--output", "table", "f.npz"}, wantCode: ExitUsage},
		{name: "negative classes", args: []string{"--model", "mlp", "--classes", "-1", "f.npz"}, wantCode: ExitUsage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *ModelsImportOptions
			var streams *IOStreams
			code, _, _, err := runCmd(t, func(s *IOStreams) *cobra.Command {
				streams = s
				return newCmdModelsImportRun(s, func(o *ModelsImportOptions) error { got = o; return nil })
			}, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit code: got %d (%v), want %d", code, err, tc.wantCode)
			}
			if tc.wantCode != ExitOK {
				if got != nil {
					t.Error("the run function ran despite the error")
				}
				return
			}
			tc.want.IO = streams
			if got == nil || !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("options: got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// exportArgs size models so that an export takes a fraction of a second.
var exportArgs = map[string][]string{
	"mlp":     {"--model", "mlp", "--width", "0.015625", "--classes", "3"},
	"vgg16bn": {"--model", "vgg16bn", "--image", "32", "--width", "0.0625", "--classes", "5"},
}

// exportCmd runs models export and returns the file it wrote.
func exportCmd(t *testing.T, model string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), model+".npz")
	args := append(append(append([]string{}, exportArgs[model]...), "--out", path, "--threads", "2"), extra...)
	code, stdout, stderr, err := runCmd(t, newCmdModelsExport, args...)
	if code != ExitOK {
		t.Fatalf("export %v: exit %d: %v %s", args, code, err, stderr)
	}
	if !strings.HasPrefix(stdout, "wrote "+path+": ") || !strings.Contains(stdout, "loss ") || stderr != "" {
		t.Errorf("export stdout %q, stderr %q", stdout, stderr)
	}
	return path
}

func TestModelsExportImport(t *testing.T) {
	for _, model := range []string{"mlp", "vgg16bn"} {
		t.Run(model, func(t *testing.T) {
			if _, err := models.LookupArch(model); err != nil {
				t.Skipf("%s is not in the zoo yet", model)
			}
			path := exportCmd(t, model)
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("directory holds %d files, want the export alone", len(entries))
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
				t.Errorf("export file: %v, mode %v; want 0644", err, st.Mode())
			}
			args := append(append([]string{}, exportArgs[model]...), "--threads", "2", "--output", "json", path)
			code, stdout, stderr, err := runCmd(t, newCmdModelsImport, args...)
			if code != ExitOK || stderr != "" {
				t.Fatalf("import: exit %d: %v %s", code, err, stderr)
			}
			var doc importDoc
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("json: %v\n%s", err, stdout)
			}
			// Same code, same data, same thread count: the step
			// reproduces exactly.
			if doc.Check == nil || doc.Check.Logits != 0 || doc.Check.Loss != 0 || doc.Check.Grads != 0 || doc.Check.GradsCompared == 0 || doc.Check.Batch != 2 {
				t.Errorf("check: got %+v, want zero differences over every gradient at batch 2", doc.Check)
			}
			if doc.Loaded == 0 || doc.Model != model || doc.Converted == nil || len(doc.Converted) != 0 {
				t.Errorf("doc: got %+v", doc)
			}

			// Text output.
			args[len(args)-2] = "text"
			code, stdout, _, err = runCmd(t, newCmdModelsImport, args...)
			if code != ExitOK {
				t.Fatalf("import text: exit %d: %v", code, err)
			}
			for _, want := range []string{"loaded ", " tensors from " + path + " into " + model, "logits", "loss", "gradients"} {
				if !strings.Contains(stdout, want) {
					t.Errorf("text output lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

func TestModelsImportMismatch(t *testing.T) {
	path := exportCmd(t, "mlp")
	args := []string{"--model", "mlp", "--width", "0.015625", "--classes", "4", "--threads", "2", path}
	code, stdout, stderr, err := runCmd(t, newCmdModelsImport, args...)
	if code != ExitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q: want %d (a file that does not fit is bad input) and nothing", code, stdout, ExitUsage)
	}
	for _, want := range []string{"mismatched  4.weight: file float32 [3 16], model float32 [4 16]", "mismatched  4.bias: file float32 [3], model float32 [4]"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(err.Error(), "2 mismatched") {
		t.Errorf("error %q does not count the mismatches", err)
	}
}

// writeStateDictWithFloat64 writes the state_dict arrays of an export
// into a new archive, as numpy.savez writes a torch state_dict, with
// name stored as float64.
func writeStateDictWithFloat64(t *testing.T, export, name string) string {
	t.Helper()
	r, err := models.OpenNPZFile(export)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	path := filepath.Join(t.TempDir(), "state.npz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, k := range r.Keys() {
		if models.IsExportKey(k) {
			continue
		}
		a, err := r.Read(k)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := models.NewNPZWriter(&buf, false)
		if a.DType == models.DTypeInt64 {
			err = w.Int64("x", a.Shape, a.Int64)
		} else {
			err = w.Float32("x", a.Shape, a.Float32)
		}
		if err != nil || w.Close() != nil {
			t.Fatal(err)
		}
		// Rewrite the one array with a float64 .npy of our own making.
		npy := npyOf(t, buf.Bytes())
		if k == name {
			npy = float64NPY(a.Shape, a.Float32)
		}
		e, err := zw.Create(k + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Write(npy); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// npyOf returns the .npy file inside a one-entry archive.
func npyOf(t *testing.T, archive []byte) []byte {
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// float64NPY encodes a 1-d float64 .npy file by hand.
func float64NPY(shape tensor.Shape, v []float32) []byte {
	if len(shape) != 1 {
		panic("float64NPY: vectors only")
	}
	dict := "{'descr': '<f8', 'fortran_order': False, 'shape': (" + strings.TrimSuffix(strings.TrimPrefix(shape.String(), "["), "]") + ",), }"
	pad := (64 - (10+len(dict)+1)%64) % 64
	hdr := dict + strings.Repeat(" ", pad) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
	b = append(b, hdr...)
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(x)))
	}
	return b
}

func TestModelsImportPlainStateDict(t *testing.T) {
	path := writeStateDictWithFloat64(t, exportCmd(t, "mlp"), "2.bias")
	args := []string{"--model", "mlp", "--width", "0.015625", "--classes", "3", "--threads", "2", path}
	code, stdout, stderr, err := runCmd(t, newCmdModelsImport, args...)
	if code != ExitOK {
		t.Fatalf("exit %d: %v %s", code, err, stderr)
	}
	if !strings.Contains(stderr, "rounded 1 float64 arrays to float32 (2.bias)") {
		t.Errorf("stderr %q: want a note on the conversion", stderr)
	}
	if !strings.Contains(stdout, "loaded 6 tensors") || strings.Contains(stdout, "replayed") {
		t.Errorf("stdout %q: want 6 tensors loaded and no replay", stdout)
	}
}

func TestModelsExportImportErrors(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.npz")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		cmd      func(*IOStreams) *cobra.Command
		args     []string
		wantCode ExitCode
		want     string // part of the error
	}{
		{"export unknown model", newCmdModelsExport, []string{"--model", "alexnet", "--out", existing}, ExitUsage, "unknown model"},
		{"export image too small", newCmdModelsExport, []string{"--model", "vgg16bn", "--image", "16", "--out", existing}, ExitUsage, "below the smallest"},
		{"export batch 1 with batch norm", newCmdModelsExport, []string{"--model", "vgg16bn", "--image", "32", "--width", "0.0625", "--batch", "1", "--out", existing}, ExitUsage, "batch norm"},
		{"export into a missing directory", newCmdModelsExport, []string{"--model", "mlp", "--width", "0.015625", "--out", filepath.Join(dir, "no", "f.npz")}, ExitUsage, "no such file"},
		{"import unknown model", newCmdModelsImport, []string{"--model", "alexnet", existing}, ExitUsage, "unknown model"},
		{"import missing file", newCmdModelsImport, []string{"--model", "mlp", filepath.Join(dir, "none.npz")}, ExitUsage, "no such file"},
		{"import not an archive", newCmdModelsImport, []string{"--model", "mlp", existing}, ExitUsage, "zip"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := models.LookupArch("vgg16bn"); err != nil && strings.Contains(tc.name, "batch norm") {
				t.Skip("vgg16bn is not in the zoo yet")
			}
			code, stdout, _, err := runCmd(t, tc.cmd, tc.args...)
			if code != tc.wantCode || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got exit %d, error %v; want %d and an error containing %q", code, err, tc.wantCode, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout on failure: %q", stdout)
			}
			if b, _ := os.ReadFile(existing); string(b) != "old" {
				t.Errorf("existing file now holds %q", b)
			}
		})
	}
}

func TestWriteAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.npz")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A failure halfway leaves the old file and no temporary one.
	err := writeAtomically(path, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("x"), 3<<20))
		return errors.New("out of memory")
	})
	if err == nil || err.Error() != "out of memory" {
		t.Errorf("got error %v, want the write's", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("after a failure the file holds %d bytes, want the old 3", len(b))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a failure the directory holds %d files, want 1", len(entries))
	}
	// A success replaces it.
	if err := writeAtomically(path, func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("after a success the file holds %q, want %q", b, "new")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("after a success the directory holds %d files, want 1", len(entries))
	}
}
