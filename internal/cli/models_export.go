package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/reports"
	"github.com/pipecast/pipecast/tensor"
	_ "github.com/pipecast/pipecast/tensor/cpu" // registers the "cpu" backend
)

// ModelsExportOptions is what models export needs.
type ModelsExportOptions struct {
	IO      *IOStreams
	Model   string
	Size    ModelSize
	Batch   int
	Seed    uint64
	Out     string
	Threads int // 0: every core
}

// newCmdModelsExport returns the models export command.
func newCmdModelsExport(streams *IOStreams) *cobra.Command {
	return newCmdModelsExportRun(streams, nil)
}

// newCmdModelsExportRun is newCmdModelsExport with runF, when not nil,
// running instead of the real work, so that tests can check what the
// flags parsed into.
func newCmdModelsExportRun(streams *IOStreams, runF func(*ModelsExportOptions) error) *cobra.Command {
	opts := &ModelsExportOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "export --model NAME --out FILE.npz|FILE.safetensors",
		Short: "Write a model's weights and one training step to a .npz or .safetensors file",
		Long: `Build a model with weights initialised from --seed and write, as a numpy
.npz archive or a Hugging Face .safetensors file (by the extension of
--out), its state_dict under the field's names (torchvision's for the CNNs,
num_batches_tracked as int64 0-d arrays; the transformers library's for
gpt2 and the Llamas, in its layouts: GPT-2's Conv1D weights [in, out], its
lm_head.weight stored once as transformer.wte.weight, and its config.json
as the .npz entry config.json or the safetensors metadata "config"), then
one training step: "input" (a batch drawn from N(0, 1), or token ids
[B, S] drawn uniformly), "target" (classes drawn uniformly, or the token
after each position, [B, S]), and the "logits", the "loss" (mean cross
entropy over every label) and "grad.<name>" for every parameter after one
training-mode forward and backward. Dropout is off, so that torch can replay
the step exactly (scripts/check_torchvision.py and
scripts/check_transformers.py do).

The file is written under a temporary name in the same directory and
renamed at the end: a failure never leaves a partial file and leaves an
existing file as it was.`,
		Example: `  pipecast models export --model resnet50 --image 64 --out resnet50.npz
  pipecast models import --model resnet50 --image 64 resnet50.npz
  pipecast models export --model gpt2 --layers 4 --seq 64 --out gpt2.safetensors`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Model == "":
				return usageErrorf("required flag --model not set")
			case opts.Out == "":
				return usageErrorf("required flag --out not set")
			case opts.Batch < 1:
				return usageErrorf("--batch %d: need at least 1 sample", opts.Batch)
			case opts.Threads < 0:
				return usageErrorf("--threads %d: must be positive (or 0 for every core)", opts.Threads)
			}
			if err := opts.Size.validate(); err != nil {
				return err
			}
			if _, err := models.WeightFormatOf(opts.Out); err != nil {
				return usageErrorf("--out %v", err)
			}
			if err := checkOutputFiles("out", opts.Out); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return modelsExportRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "model to export (required; see pipecast models)")
	opts.Size = defaultModelSize()
	addSizeFlags(cmd.Flags(), &opts.Size)
	cmd.Flags().IntVar(&opts.Batch, "batch", 2, "samples in the recorded training step")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "seed of the weights, the input and the targets")
	cmd.Flags().StringVar(&opts.Out, "out", "", "file to write (required)")
	cmd.Flags().IntVar(&opts.Threads, "threads", 0, "worker threads of the CPU device (0: every core)")
	return cmd
}

// lookupModel returns the architecture named by --model and checks that
// it can take --image; both failures are usage errors.
func lookupModel(name string, size ModelSize) (models.Arch, error) {
	a, err := models.LookupArch(name)
	if err != nil {
		return a, &UsageError{Err: fmt.Errorf("--model: %w", err)}
	}
	if err := size.sizeUsageError(a); err != nil {
		return a, err
	}
	return a, nil
}

// openDevice opens the CPU device the models commands compute on.
func openDevice(threads int) (tensor.Device, error) {
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	dev, err := tensor.Open(tensor.CPUBackend, tensor.Options{Threads: threads})
	if err != nil {
		return nil, fmt.Errorf("open device: %w", err)
	}
	return dev, nil
}

func modelsExportRun(opts *ModelsExportOptions) error {
	a, err := lookupModel(opts.Model, opts.Size)
	if err != nil {
		return err
	}
	cfg := opts.Size.config(a)
	if opts.Batch == 1 {
		// Training-mode batch norm needs more than one value per
		// channel; at batch 1 the zoo's CNNs reach 1×1 maps.
		m, err := models.Describe(a.Name, cfg)
		if err != nil {
			return fmt.Errorf("describe %s: %w", a.Name, err)
		}
		bn := false
		models.Walk(m.Net, func(_ string, l models.Layer) {
			_, ok := l.(*models.BatchNorm2D)
			bn = bn || ok
		})
		if bn {
			return usageErrorf("--batch 1: %s has batch norm, which needs more than one sample in training mode", a.Name)
		}
	}
	format, err := models.WeightFormatOf(opts.Out)
	if err != nil {
		return &UsageError{Err: err}
	}
	dev, err := openDevice(opts.Threads)
	if err != nil {
		return err
	}
	defer dev.Close()
	var res models.ExportResult
	err = writeAtomically(opts.Out, func(w io.Writer) error {
		var err error
		res, err = models.Export(dev, models.ExportOptions{Model: a.Name, Config: cfg, Batch: opts.Batch, Seed: opts.Seed, Format: format}, w)
		return err
	})
	if err != nil {
		return err
	}
	grads := 0
	for _, n := range res.Names {
		if strings.HasPrefix(n, models.ExportGradPrefix) {
			grads++
		}
	}
	state := len(res.Names) - grads - 4 // input, target, logits, loss
	fmt.Fprintf(opts.IO.Out, "wrote %s: %d tensors (%d state_dict, 4 of the step, %d gradients), %s, loss %.6g\n",
		opts.Out, len(res.Names), state, grads, reports.FormatBytes(res.Bytes), res.Loss)
	return nil
}

// ModelsImportOptions is what models import needs.
type ModelsImportOptions struct {
	IO      *IOStreams
	Output  Format
	Model   string
	Size    ModelSize
	Path    string
	Threads int // 0: every core
}

// newCmdModelsImport returns the models import command.
func newCmdModelsImport(streams *IOStreams) *cobra.Command {
	return newCmdModelsImportRun(streams, nil)
}

// newCmdModelsImportRun is newCmdModelsImport with runF, when not nil,
// running instead of the real work.
func newCmdModelsImportRun(streams *IOStreams, runF func(*ModelsImportOptions) error) *cobra.Command {
	opts := &ModelsImportOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "import --model NAME FILE.npz|FILE.safetensors",
		Short: "Load a .npz or .safetensors state_dict into a model and check an export's step",
		Long: `Load a state_dict saved as a numpy .npz archive or a Hugging Face
.safetensors file (by the file's extension) into the model: torchvision's
names, as models export writes them or as numpy.savez writes a torch
state_dict; for the transformers, the transformers library's names and
layouts, as models export writes them or as its save_pretrained or
safetensors' save_file write a GPT2LMHeadModel's or LlamaForCausalLM's
state_dict (GPT-2's Conv1D weights are turned to pipecast's layout; a
lm_head.weight beside transformer.wte.weight must equal it; a config.json
in the file must agree with the model's --layers, --width, --vocab and
family). Every missing, unexpected or mis-shaped tensor is listed and the
command fails; float64 arrays are rounded to float32, with a note; float16
and bfloat16 arrays load exactly.

When the file is an export (it holds input, target, logits and loss), the
command also replays the recorded training step on the loaded model and
reports the largest relative difference, max|got − file| / max|file|, of
the logits, the loss and the gradients: a self-check of the file against
this build. A bias whose true gradient is zero (a convolution followed by
batch norm) is compared against the model's largest gradient instead.`,
		Example: `  pipecast models export --model resnet50 --image 64 --out f.npz
  pipecast models import --model resnet50 --image 64 f.npz`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%q needs exactly one file, got %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			if _, err := models.WeightFormatOf(opts.Path); err != nil {
				return &UsageError{Err: err}
			}
			switch {
			case opts.Model == "":
				return usageErrorf("required flag --model not set")
			case opts.Threads < 0:
				return usageErrorf("--threads %d: must be positive (or 0 for every core)", opts.Threads)
			}
			if err := opts.Size.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return modelsImportRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "model to load into (required; see pipecast models)")
	opts.Size = defaultModelSize()
	addSizeFlags(cmd.Flags(), &opts.Size)
	cmd.Flags().IntVar(&opts.Threads, "threads", 0, "worker threads of the CPU device (0: every core)")
	addOutputFlag(cmd, &opts.Output, FormatText, FormatJSON)
	return cmd
}

// importDoc is what models import prints; its JSON form is the output of
// --output json.
type importDoc struct {
	File   string `json:"file"`
	Model  string `json:"model"`
	Loaded int    `json:"loaded"`
	// Converted names the float64 arrays rounded to float32.
	Converted []string `json:"converted"`
	// Check is the replay of an export's step; null for a plain
	// state_dict.
	Check *replayDoc `json:"check"`
}

type replayDoc struct {
	Batch         int     `json:"batch"`
	Logits        float64 `json:"logits_rel_diff"`
	Loss          float64 `json:"loss_rel_diff"`
	Grads         float64 `json:"grads_rel_diff"`
	WorstGrad     string  `json:"worst_grad"`
	GradsCompared int     `json:"grads_compared"`
}

func modelsImportRun(opts *ModelsImportOptions) error {
	a, err := lookupModel(opts.Model, opts.Size)
	if err != nil {
		return err
	}
	r, err := models.OpenWeightsFile(opts.Path)
	if err != nil {
		return &InputError{Err: err}
	}
	defer r.Close()
	dev, err := openDevice(opts.Threads)
	if err != nil {
		return err
	}
	defer dev.Close()
	// Dropout stays off: the replay must be the export's step, and the
	// command never trains.
	cfg := opts.Size.config(a)
	cfg.NoDropout = true
	imp, err := models.Import(dev, r, a.Name, cfg)
	var serr *models.StateDictError
	if errors.As(err, &serr) {
		listMismatch(opts.IO.ErrOut, serr)
		return &InputError{Err: fmt.Errorf("%s does not fit %s: %d missing, %d unexpected and %d mismatched tensors (listed above)",
			opts.Path, a.Name, len(serr.Missing), len(serr.Unexpected), len(serr.Mismatched))}
	}
	if err != nil {
		return &InputError{Err: fmt.Errorf("%s: %w", opts.Path, err)}
	}
	defer imp.Model.Release()
	if n := len(imp.Converted); n > 0 {
		fmt.Fprintf(opts.IO.ErrOut, "pipecast: note: rounded %d float64 arrays to float32 (%s)\n", n, firstNames(imp.Converted, 3))
	}
	doc := importDoc{File: opts.Path, Model: a.Name, Loaded: imp.Loaded, Converted: imp.Converted}
	if doc.Converted == nil {
		doc.Converted = []string{}
	}
	if models.IsExport(r) {
		rep, err := models.Replay(dev, imp.Model, r)
		if err != nil {
			return fmt.Errorf("%s: %w", opts.Path, err)
		}
		info, err := r.Info(models.ExportInput)
		if err != nil {
			return err
		}
		doc.Check = &replayDoc{Batch: info.Shape[0], Logits: rep.Logits, Loss: rep.Loss, Grads: rep.Grads,
			WorstGrad: rep.WorstGrad, GradsCompared: rep.GradsCompared}
	}
	if opts.Output == FormatJSON {
		return writeJSON(opts.IO.Out, doc)
	}
	return writeImportText(opts.IO.Out, doc)
}

func writeImportText(out io.Writer, doc importDoc) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "loaded %d tensors from %s into %s\n", doc.Loaded, doc.File, doc.Model)
	if c := doc.Check; c != nil {
		fmt.Fprintf(w, "replayed the export's training step (batch %d); largest relative differences:\n", c.Batch)
		fmt.Fprintf(w, "  logits\t%.3g\n", c.Logits)
		fmt.Fprintf(w, "  loss\t%.3g\n", c.Loss)
		if c.GradsCompared > 0 {
			fmt.Fprintf(w, "  gradients\t%.3g\t(worst of %d: %s)\n", c.Grads, c.GradsCompared, c.WorstGrad)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write import summary: %w", err)
	}
	return nil
}

// listMismatch prints every problem of a state_dict, one per line.
func listMismatch(w io.Writer, e *models.StateDictError) {
	for _, n := range e.Missing {
		fmt.Fprintf(w, "missing     %s\n", n)
	}
	for _, n := range e.Unexpected {
		fmt.Fprintf(w, "unexpected  %s\n", n)
	}
	for _, n := range e.Mismatched {
		fmt.Fprintf(w, "mismatched  %s\n", n)
	}
}

// firstNames lists up to n names, with how many more there are.
func firstNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
