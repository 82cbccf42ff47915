package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
)

func init() {
	// Another test file of the package may define -update first; both
	// then share it.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files in testdata")
	}
}

// updating reports whether the test run was given -update.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// checkGolden compares got with testdata/name, or rewrites the file under
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if updating() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestNewCmdModelsFlags(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		want      ModelsOptions
		wantUsage string // the usage error, if any
	}{
		{name: "defaults", want: ModelsOptions{Output: FormatTable, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "all flags", args: []string{"--image", "64", "--classes", "10", "--width", "0.25", "--output", "json"},
			want: ModelsOptions{Output: FormatJSON, Size: ModelSize{models.SizeVariants{Images: []int{64}, Classes: []int{10}, Widths: []float64{0.25}}}}},
		{name: "markdown", args: []string{"--output=markdown"}, want: ModelsOptions{Output: FormatMarkdown, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "csv", args: []string{"--output", "csv"}, want: ModelsOptions{Output: FormatCSV, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "text is not a table format", args: []string{"--output", "text"}, wantUsage: `unknown format "text"`},
		{name: "zero width", args: []string{"--width", "0"}, wantUsage: "--width 0: must be a positive number"},
		{name: "negative width", args: []string{"--width", "-1"}, wantUsage: "--width -1: must be a positive number"},
		{name: "NaN width", args: []string{"--width", "NaN"}, wantUsage: "--width NaN: must be a positive number"},
		{name: "infinite width", args: []string{"--width", "+Inf"}, wantUsage: "--width +Inf: must be a positive number"},
		{name: "negative image", args: []string{"--image", "-3"}, wantUsage: "--image -3: must be positive"},
		{name: "negative classes", args: []string{"--classes", "-1"}, wantUsage: "--classes -1: must be positive"},
		{name: "malformed image", args: []string{"--image", "big"}, wantUsage: "invalid argument"},
		{name: "unknown subcommand", args: []string{"partiton"}, wantUsage: `did you mean "partition"?`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams := &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
			var got *ModelsOptions
			cmd := NewCmdModels(streams, func(o *ModelsOptions) error {
				got = o
				return nil
			})
			// Flag errors become usage errors at the root; mirror it.
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
			// A nil slice would make cobra read the test binary's own arguments.
			cmd.SetArgs(append([]string{}, tc.args...))
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				if got != nil {
					t.Error("the run function ran despite the error")
				}
				return
			}
			if err != nil {
				t.Fatalf("args %q: %v", tc.args, err)
			}
			if got == nil {
				t.Fatal("the run function did not run")
			}
			if got.IO != streams || got.Output != tc.want.Output || !reflect.DeepEqual(got.Size, tc.want.Size) {
				t.Errorf("options: got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestNewCmdModelsPartitionFlags(t *testing.T) {
	base := []string{"--model", "resnet50", "--devices", "4"}
	withBase := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	tests := []struct {
		name      string
		args      []string
		want      ModelsPartitionOptions
		wantUsage string
	}{
		{name: "defaults", args: withBase(), want: ModelsPartitionOptions{Output: FormatTable, Model: "resnet50", Devices: 4,
			Balance: config.BalanceMACs, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "all flags", args: withBase("--balance", "params", "--image", "128",
			"--classes", "100", "--width", "0.5", "--output", "csv"),
			want: ModelsPartitionOptions{Output: FormatCSV, Model: "resnet50", Devices: 4, Balance: config.BalanceParams,
				Size: ModelSize{models.SizeVariants{Images: []int{128}, Classes: []int{100}, Widths: []float64{0.5}}}}},
		{name: "balance macs", args: withBase("--balance=macs"),
			want: ModelsPartitionOptions{Output: FormatTable, Model: "resnet50", Devices: 4, Balance: config.BalanceMACs, Size: ModelSize{models.SizeVariants{Widths: []float64{1}}}}},
		{name: "model is required", args: []string{"--devices", "4"}, wantUsage: "required flag --model not set"},
		{name: "devices are required", args: []string{"--model", "mlp"}, wantUsage: "required flag --devices not set"},
		{name: "zero devices", args: []string{"--model", "mlp", "--devices", "0"}, wantUsage: "--devices 0: need at least 1"},
		{name: "negative devices", args: []string{"--model", "mlp", "--devices", "-2"}, wantUsage: "--devices -2: need at least 1"},
		{name: "bad balance", args: withBase("--balance", "time"),
			wantUsage: `unknown balance "time" (want params|macs)`},
		{name: "balance is case sensitive", args: withBase("--balance", "MACs"),
			wantUsage: `unknown balance "MACs"`},
		{name: "zero width", args: withBase("--width", "0"), wantUsage: "--width 0: must be a positive number"},
		{name: "argument", args: withBase("extra"), wantUsage: `accepts no arguments, got "extra"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			streams := &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}
			var got *ModelsPartitionOptions
			cmd := newCmdModelsPartition(streams, func(o *ModelsPartitionOptions) error {
				got = o
				return nil
			})
			cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
			// A nil slice would make cobra read the test binary's own arguments.
			cmd.SetArgs(append([]string{}, tc.args...))
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceUsage, cmd.SilenceErrors = true, true
			err := cmd.Execute()
			if tc.wantUsage != "" {
				checkUsageError(t, err, tc.wantUsage)
				if got != nil {
					t.Error("the run function ran despite the error")
				}
				return
			}
			if err != nil {
				t.Fatalf("args %q: %v", tc.args, err)
			}
			if got == nil {
				t.Fatal("the run function did not run")
			}
			got.IO = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("options: got %+v, want %+v", *got, tc.want)
			}
		})
	}
}

// checkUsageError fails unless err is a UsageError whose message contains
// want.
func checkUsageError(t *testing.T, err error, want string) {
	t.Helper()
	var u *UsageError
	if !errors.As(err, &u) {
		t.Fatalf("got error %v (%T), want a usage error containing %q", err, err, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("got error %q, want it to contain %q", err, want)
	}
}

// goldenExt is the golden file extension of each output format.
var goldenExt = map[string]string{"table": "txt", "markdown": "md", "csv": "csv", "json": "json"}

func TestModelsGolden(t *testing.T) {
	cases := []struct {
		name string
		args []string
	}{
		{name: "models", args: []string{"models"}},
		{name: "models_image64", args: []string{"models", "--image", "64"}},
		{name: "models_image96_classes10_width0.5", args: []string{"models", "--image", "96", "--classes", "10", "--width", "0.5"}},
		{name: "partition_resnet50_k4_params", args: []string{"models", "partition", "--model", "resnet50", "--devices", "4", "--balance", "params"}},
		{name: "partition_resnet50_k4_macs", args: []string{"models", "partition", "--model", "resnet50", "--devices", "4", "--balance", "macs"}},
		{name: "partition_mlp_k2", args: []string{"models", "partition", "--model", "mlp", "--devices", "2"}},
	}
	for _, tc := range cases {
		for _, format := range []string{"table", "markdown", "csv", "json"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				code, stdout, stderr := run(t, append(tc.args, "--output", format)...)
				if code != ExitOK || stderr != "" {
					t.Fatalf("exit code %d, stderr %q", code, stderr)
				}
				checkGolden(t, tc.name+"."+goldenExt[format], stdout)
			})
		}
	}
}

// zooRow is a row of pipecast models --output json.
type zooRow struct {
	Model           string  `json:"model"`
	Input           *string `json:"input"`
	Params          *int64  `json:"params"`
	MACs            *int64  `json:"macs_per_sample"`
	ActivationBytes *int64  `json:"activation_bytes_per_sample"`
	Blocks          *int64  `json:"blocks"`
	Description     string  `json:"description"`
	Note            *string `json:"note"`
}

func modelsJSON(t *testing.T, args ...string) map[string]zooRow {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"models", "--output", "json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	var rows []zooRow
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, stdout)
	}
	byName := map[string]zooRow{}
	for _, r := range rows {
		byName[r.Model] = r
	}
	return byName
}

// TestModelsParamCounts checks the parameter counts against torchvision's
// own (torchvision 0.14, 1000 classes; inception_v3 without its auxiliary
// head, as the zoo builds it), independently of the golden files.
func TestModelsParamCounts(t *testing.T) {
	rows := modelsJSON(t)
	want := map[string]int64{
		"resnet50":    25_557_032,
		"vgg16bn":     138_365_992,
		"inceptionv3": 23_834_568,
		// 784·1024+1024 + 1024·1024+1024 + 1024·10+10.
		"mlp": 1_863_690,
	}
	for name, params := range want {
		r, ok := rows[name]
		if !ok {
			t.Errorf("%s: not listed", name)
			continue
		}
		if r.Params == nil || *r.Params != params {
			t.Errorf("%s params: got %v, want %d", name, deref(r.Params), params)
		}
		if r.Note != nil {
			t.Errorf("%s: got note %q at default sizes, want none", name, *r.Note)
		}
	}
	if r := rows["resnet50"]; r.Input == nil || *r.Input != "3x224x224" || r.Blocks == nil || *r.Blocks < 2 {
		t.Errorf("resnet50: got input %v, blocks %v, want 3x224x224 and several blocks", deref(r.Input), deref(r.Blocks))
	}
	if r := rows["inceptionv3"]; r.Input == nil || *r.Input != "3x299x299" {
		t.Errorf("inceptionv3 input: got %v, want 3x299x299", deref(r.Input))
	}
	if r := rows["mlp"]; r.Input == nil || *r.Input != "784" {
		t.Errorf("mlp input: got %v, want 784", deref(r.Input))
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestModelsImageBelowMinimum(t *testing.T) {
	rows := modelsJSON(t, "--image", "64")
	inc := rows["inceptionv3"]
	if inc.Params != nil || inc.MACs != nil || inc.ActivationBytes != nil || inc.Blocks != nil || inc.Input != nil {
		t.Errorf("inceptionv3 at 64: got %+v, want null numbers", inc)
	}
	if inc.Note == nil || !strings.Contains(*inc.Note, "75") {
		t.Errorf("inceptionv3 note: got %v, want the minimum, 75", deref(inc.Note))
	}
	res := rows["resnet50"]
	if res.Params == nil || *res.Params != 25_557_032 || res.Input == nil || *res.Input != "3x64x64" || res.Note != nil {
		t.Errorf("resnet50 at 64: got %+v, want its numbers at 3x64x64 and no note", res)
	}
	if m := rows["mlp"]; m.Params == nil || m.Input == nil || *m.Input != "784" || m.Note == nil {
		t.Errorf("mlp with --image: got %+v, want its numbers at 784 and a note that --image does not apply", m)
	}
	// A smaller input costs fewer MACs: the flag reaches the build.
	def := modelsJSON(t)["resnet50"]
	if *res.MACs >= *def.MACs || *res.ActivationBytes >= *def.ActivationBytes {
		t.Errorf("resnet50 MACs, activations at 64: %d, %d; at 224: %d, %d; want fewer at 64",
			*res.MACs, *res.ActivationBytes, *def.MACs, *def.ActivationBytes)
	}
}

func TestModelsClassesAndWidthReachTheBuild(t *testing.T) {
	def := modelsJSON(t)
	narrow := modelsJSON(t, "--classes", "10", "--width", "0.5")
	for _, name := range []string{"resnet50", "vgg16bn", "inceptionv3", "mlp"} {
		if *narrow[name].Params >= *def[name].Params {
			t.Errorf("%s params: %d with 10 classes and width 0.5, %d by default; want fewer", name, *narrow[name].Params, *def[name].Params)
		}
	}
	// The mlp's classes are its last layer: 784·1024+1024 + 1024·1024+1024 + 1024·3+3.
	if got := *modelsJSON(t, "--classes", "3")["mlp"].Params; got != 1_856_515 {
		t.Errorf("mlp params with 3 classes: got %d, want 1856515", got)
	}
}

// partitionOut is the json output of models partition.
type partitionOut struct {
	Model   string  `json:"model"`
	Input   string  `json:"input"`
	Classes int     `json:"classes"`
	Width   float64 `json:"width"`
	Devices int     `json:"devices"`
	Balance string  `json:"balance"`
	Stages  []struct {
		Stage      int    `json:"stage"`
		FirstBlock string `json:"first_block"`
		LastBlock  string `json:"last_block"`
		FirstIndex int    `json:"first_index"`
		LastIndex  int    `json:"last_index"`
		Blocks     int    `json:"blocks"`
		Params     int64  `json:"params"`
		MACs       int64  `json:"macs_per_sample"`
		Activation int64  `json:"activation_bytes_per_sample"`
	} `json:"stages"`
	Imbalance map[string]float64 `json:"imbalance"`
}

func partitionJSON(t *testing.T, args ...string) partitionOut {
	t.Helper()
	code, stdout, stderr := run(t, append([]string{"models", "partition", "--output", "json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("exit code %d, stderr %q", code, stderr)
	}
	var p partitionOut
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, stdout)
	}
	return p
}

func TestModelsPartitionCoversTheModel(t *testing.T) {
	zoo := modelsJSON(t)
	tests := []struct {
		name    string
		model   string
		devices int
		balance string
	}{
		{name: "resnet50 by params", model: "resnet50", devices: 4, balance: "params"},
		{name: "resnet50 by macs", model: "resnet50", devices: 4, balance: "macs"},
		{name: "vgg16bn on 3", model: "vgg16bn", devices: 3, balance: "macs"},
		{name: "inceptionv3 on 2", model: "inceptionv3", devices: 2, balance: "params"},
		{name: "mlp on every block", model: "mlp", devices: 3, balance: "params"},
		{name: "one device", model: "resnet50", devices: 1, balance: "macs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := partitionJSON(t, "--model", tc.model, "--devices", strconv.Itoa(tc.devices), "--balance", tc.balance)
			if p.Model != tc.model || p.Devices != tc.devices || p.Balance != tc.balance || len(p.Stages) != tc.devices {
				t.Fatalf("got model %q devices %d balance %q with %d stages, want %q %d %q",
					p.Model, p.Devices, p.Balance, len(p.Stages), tc.model, tc.devices, tc.balance)
			}
			var params, macs int64
			next := 1
			for i, s := range p.Stages {
				if s.Stage != i+1 || s.FirstIndex != next || s.LastIndex < s.FirstIndex || s.Blocks != s.LastIndex-s.FirstIndex+1 {
					t.Errorf("stage %d: got %+v, want stage %d starting at block %d", i+1, s, i+1, next)
				}
				next = s.LastIndex + 1
				params += s.Params
				macs += s.MACs
				if s.Activation <= 0 {
					t.Errorf("stage %d: got %d activation bytes, want some", i+1, s.Activation)
				}
			}
			z := zoo[tc.model]
			if next-1 != int(*z.Blocks) {
				t.Errorf("stages end at block %d, want %d", next-1, *z.Blocks)
			}
			if params != *z.Params || macs != *z.MACs {
				t.Errorf("stage sums: params %d, MACs %d; want the model's %d, %d", params, macs, *z.Params, *z.MACs)
			}
			for _, key := range []string{"params", "macs"} {
				if v, ok := p.Imbalance[key]; !ok || v < 1 || v > float64(tc.devices) {
					t.Errorf("imbalance of %s: got %v, want between 1 and %d", key, v, tc.devices)
				}
			}
			if tc.devices == 1 && (p.Imbalance["params"] != 1 || p.Imbalance["macs"] != 1) {
				t.Errorf("one device: got imbalance %v, want 1 for both", p.Imbalance)
			}
		})
	}
	// ResNet-50's exact count, asserted apart from any golden file.
	p := partitionJSON(t, "--model", "resnet50", "--devices", "4", "--balance", "params")
	var sum int64
	for _, s := range p.Stages {
		sum += s.Params
	}
	if sum != 25_557_032 {
		t.Errorf("resnet50 stage params sum to %d, want 25557032", sum)
	}
}

func TestModelsPartitionBalancesWhatItIsAsked(t *testing.T) {
	// Each partition minimises the largest stage of its own cost, so its
	// imbalance of that cost is no worse than the other partition's.
	for _, model := range []string{"resnet50", "vgg16bn", "inceptionv3"} {
		t.Run(model, func(t *testing.T) {
			byParams := partitionJSON(t, "--model", model, "--devices", "4", "--balance", "params")
			byMACs := partitionJSON(t, "--model", model, "--devices", "4", "--balance", "macs")
			if byParams.Imbalance["params"] > byMACs.Imbalance["params"] {
				t.Errorf("params imbalance: %v balancing params, %v balancing MACs", byParams.Imbalance["params"], byMACs.Imbalance["params"])
			}
			if byMACs.Imbalance["macs"] > byParams.Imbalance["macs"] {
				t.Errorf("MACs imbalance: %v balancing MACs, %v balancing params", byMACs.Imbalance["macs"], byParams.Imbalance["macs"])
			}
		})
	}
}

func TestModelsPartitionTableFootnotes(t *testing.T) {
	for _, balance := range []string{"params", "macs"} {
		t.Run(balance, func(t *testing.T) {
			code, stdout, stderr := run(t, "models", "partition", "--model", "resnet50", "--devices", "4", "--balance", balance)
			if code != ExitOK {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			name := map[string]string{"params": "params", "macs": "MACs"}
			other := map[string]string{"params": "MACs", "macs": "params"}
			balanced := "imbalance of " + name[balance] + " (the balanced cost), largest stage ÷ mean: "
			unbalanced := "imbalance of " + other[balance] + " (not balanced), largest stage ÷ mean: "
			i, j := strings.Index(stdout, balanced), strings.Index(stdout, unbalanced)
			if i < 0 || j < i {
				t.Errorf("output lacks %q followed by %q:\n%s", balanced, unbalanced, stdout)
			}
			if !strings.Contains(stdout, "balanced by "+name[balance]) {
				t.Errorf("title does not name the balanced cost %q:\n%s", name[balance], stdout)
			}
		})
	}
}

func TestModelsCSVHasRawNumbers(t *testing.T) {
	for _, args := range [][]string{
		{"models", "--output", "csv"},
		{"models", "partition", "--model", "resnet50", "--devices", "4", "--output", "csv"},
	} {
		code, stdout, stderr := run(t, args...)
		if code != ExitOK {
			t.Fatalf("%q: exit code %d, stderr %q", args, code, stderr)
		}
		records, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
		if err != nil {
			t.Fatalf("%q: output does not parse as csv: %v", args, err)
		}
		header := records[0]
		for _, rec := range records[1:] {
			for i, key := range header {
				if key != "params" && key != "macs_per_sample" && key != "activation_bytes_per_sample" {
					continue
				}
				if n, err := strconv.ParseInt(rec[i], 10, 64); err != nil || n <= 0 {
					t.Errorf("%q: %s = %q, want a plain positive integer", args, key, rec[i])
				}
			}
		}
		if strings.Contains(stdout, "MACs/sample:") || strings.Contains(stdout, "imbalance") {
			t.Errorf("%q: csv carries footnotes:\n%s", args, stdout)
		}
	}
}

func TestModelsErrors(t *testing.T) {
	part := []string{"models", "partition"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "more devices than blocks", args: append(part, "--model", "mlp", "--devices", "4"),
			want: "--devices 4: mlp has 3 blocks, so at most 3 stages"},
		{name: "more devices than resnet50 blocks", args: append(part, "--model", "resnet50", "--devices", "19"),
			want: "--devices 19: resnet50 has 18 blocks, so at most 18 stages"},
		{name: "zero devices", args: append(part, "--model", "mlp", "--devices", "0"), want: "--devices 0: need at least 1"},
		{name: "negative devices", args: append(part, "--model", "mlp", "--devices", "-1"), want: "--devices -1: need at least 1"},
		{name: "unknown model", args: append(part, "--model", "resnet18", "--devices", "2"),
			want: `--model: unknown model "resnet18" (the zoo has: gpt2, gpt2-large, gpt2-medium, gpt2-xl, inceptionv3, llama2-7b, mlp, resnet50, tinyllama-1.1b, vgg16, vgg16bn)`},
		{name: "bad balance", args: append(part, "--model", "mlp", "--devices", "2", "--balance", "time"),
			want: `invalid argument "time" for "--balance" flag: unknown balance "time" (want params|macs)`},
		{name: "zero width", args: append(part, "--model", "mlp", "--devices", "2", "--width", "0"),
			want: "--width 0: must be a positive number"},
		{name: "negative width", args: []string{"models", "--width", "-0.5"}, want: "--width -0.5: must be a positive number"},
		{name: "image below the minimum", args: append(part, "--model", "inceptionv3", "--devices", "2", "--image", "64"),
			want: "--image 64: input 64×64 is below the smallest inceptionv3 accepts, 75×75"},
		{name: "model missing", args: append(part, "--devices", "2"), want: "required flag --model not set"},
		{name: "devices missing", args: append(part, "--model", "mlp"), want: "required flag --devices not set"},
		{name: "misspelt subcommand", args: []string{"models", "partiton"},
			want: `unknown command "partiton" for "pipecast models"; did you mean "partition"?`},
		{name: "bad output", args: []string{"models", "--output", "text"}, want: `invalid argument "text" for "--output" flag: unknown format "text" (want table|markdown|csv|json)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != ExitUsage {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, ExitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout: got %q, want nothing", stdout)
			}
			if !strings.HasPrefix(stderr, "pipecast: "+tc.want+"\n") {
				t.Errorf("stderr: got %q, want it to start with %q", stderr, "pipecast: "+tc.want)
			}
			if !strings.Contains(stderr, "--help' for usage.") {
				t.Errorf("stderr: got %q, want a pointer to the help", stderr)
			}
		})
	}
}

func TestModelsWriteFailureExitsOne(t *testing.T) {
	for _, args := range [][]string{
		{"models"},
		{"models", "--output", "json"},
		{"models", "partition", "--model", "mlp", "--devices", "2"},
		{"models", "partition", "--model", "mlp", "--devices", "2", "--output", "json"},
	} {
		var errOut bytes.Buffer
		code := Execute(context.Background(), args, &IOStreams{Out: failingWriter{}, ErrOut: &errOut})
		if code != ExitError || !strings.Contains(errOut.String(), "broken pipe") {
			t.Errorf("%q: got exit code %d, stderr %q; want %d and the write error", args, code, errOut.String(), ExitError)
		}
	}
}

func TestModelsListedInHelp(t *testing.T) {
	_, stdout, _ := run(t, "--help")
	if !strings.Contains(stdout, "models") {
		t.Errorf("root help does not list models:\n%s", stdout)
	}
	_, stdout, _ = run(t, "models", "--help")
	for _, want := range []string{"partition", "--image", "--classes", "--width", "table|markdown|csv|json"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("models help lacks %q:\n%s", want, stdout)
		}
	}
}
