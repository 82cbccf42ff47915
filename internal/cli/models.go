package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/config"
	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/reports"
)

// tableFormats are the formats of the commands that print a table.
var tableFormats = []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON}

// ModelSize is how the models commands size every network: the flags
// --image, --classes and --width.
type ModelSize struct {
	Image   int     // input height and width; 0 selects each model's default
	Classes int     // output classes; 0 selects each model's default
	Width   float64 // channel-width multiplier
}

func addSizeFlags(cmd *cobra.Command, s *ModelSize) {
	cmd.Flags().IntVar(&s.Image, "image", 0, "input height and width in pixels (0: each model's default; the mlp ignores it)")
	cmd.Flags().IntVar(&s.Classes, "classes", 0, "number of output classes (0: each model's default)")
	cmd.Flags().Float64Var(&s.Width, "width", 1, "multiplier of every channel count and hidden width (1: torchvision's networks)")
}

// validate rejects sizes that no model can take; sizes a particular model
// cannot take are the run function's to find.
func (s ModelSize) validate() error {
	switch {
	case s.Image < 0:
		return usageErrorf("--image %d: must be positive (or 0 for each model's default)", s.Image)
	case s.Classes < 0:
		return usageErrorf("--classes %d: must be positive (or 0 for each model's default)", s.Classes)
	case !(s.Width > 0) || math.IsInf(s.Width, 1):
		return usageErrorf("--width %v: must be a positive number", s.Width)
	}
	return nil
}

// config is the zoo configuration of model a at these sizes.
func (s ModelSize) config(a models.Arch) models.Config {
	return a.Sized(s.Image, s.Classes, s.Width)
}

// tooSmall says why a cannot take the --image size, or "" when it can.
func (s ModelSize) tooSmall(a models.Arch) string { return a.CheckSize(s.config(a)) }

// describe returns the model's structure and costs on the meta device:
// instant, and without allocating its parameters.
func (s ModelSize) describe(a models.Arch) (*models.Model, error) {
	m, err := models.Describe(a.Name, s.config(a))
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", a.Name, err)
	}
	return m, nil
}

// summary names the sizes for a title: "input 64×64, 10 classes, width 1".
func (s ModelSize) summary() string {
	image, classes := "each model's default input", "default classes"
	if s.Image > 0 {
		image = fmt.Sprintf("input %d×%d", s.Image, s.Image)
	}
	if s.Classes > 0 {
		classes = fmt.Sprintf("%d classes", s.Classes)
	}
	return fmt.Sprintf("%s, %s, width %s", image, classes, strconv.FormatFloat(s.Width, 'g', -1, 64))
}

// shapeCell shows a sample's shape as people write it, 3×224×224, and
// carries it as 3x224x224, which needs no character outside ASCII.
func shapeCell(dims []int) reports.Cell {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = strconv.Itoa(d)
	}
	return reports.Cell{Value: strings.Join(parts, "x"), Text: strings.Join(parts, "×")}
}

// Column definitions shared by both commands, so that a quantity has the
// same key and header everywhere.
var (
	// On a narrow terminal blocks fold first, then activations, MACs
	// and params.
	colParams      = reports.Column{Key: "params", Header: "params", Align: reports.AlignRight, Fold: 1}
	colMACs        = reports.Column{Key: "macs_per_sample", Header: "MACs/sample", Align: reports.AlignRight, Fold: 2}
	colActivations = reports.Column{Key: "activation_bytes_per_sample", Header: "activations/sample", Align: reports.AlignRight, Fold: 3}
	colBlocks      = reports.Column{Key: "blocks", Header: "blocks", Align: reports.AlignRight, Fold: 4}
)

// costFootnotes explain the per-sample columns.
var costFootnotes = []string{
	"MACs/sample: multiply-accumulates of one sample's forward pass in convolutions and linear layers.",
	"activations/sample: bytes (float32) a training forward keeps for the backward, per sample.",
}

// ModelsOptions is what the models command needs.
type ModelsOptions struct {
	IO     *IOStreams
	Output Format
	Wide   bool // --wide: every column, however narrow the terminal
	Size   ModelSize
}

// NewCmdModels returns the models command with its subcommands. runF,
// when not nil, runs instead of the listing, so that tests can check what
// the flags parsed into.
func NewCmdModels(streams *IOStreams, runF func(*ModelsOptions) error) *cobra.Command {
	opts := &ModelsOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "models",
		Short: "List the model zoo with parameters, MACs and activation memory",
		Long: `List the networks pipecast trains, one row each: the input of one sample,
the trainable parameters, the forward multiply-accumulates and the
activation bytes a training forward keeps per sample, and the number of
blocks, the units a pipeline splits the network at.

The costs come from a symbolic build of each network, so listing is
instant and allocates no weights. With --image, a network that cannot take
that input is listed with its numbers left empty and a note.`,
		Example: `  pipecast models
  pipecast models --image 64 --classes 10 --output markdown`,
		Args: rootArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Size.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return modelsRun(opts)
		},
	}
	// rootArgs suggests subcommands as close as the root suggests its own.
	cmd.SuggestionsMinimumDistance = 2
	addSizeFlags(cmd, &opts.Size)
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	cmd.AddCommand(newCmdModelsPartition(streams, nil), newCmdModelsExport(streams), newCmdModelsImport(streams))
	return cmd
}

func modelsRun(opts *ModelsOptions) error {
	t, err := zooTable(opts.Size)
	if err != nil {
		return err
	}
	return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
}

// zooTable describes every model of the zoo at the given sizes.
func zooTable(size ModelSize) (*reports.Table, error) {
	t := &reports.Table{
		Title: "Model zoo (" + size.summary() + ")",
		Columns: []reports.Column{
			{Key: "model", Header: "model"},
			{Key: "input", Header: "input"},
			colParams, colMACs, colActivations, colBlocks,
			{Key: "description", Header: "description", MaxWidth: 48},
			{Key: "note", Header: "note", Show: reports.Machines},
		},
		Footnotes: append([]string(nil), costFootnotes...),
	}
	for _, a := range models.Archs() {
		note := size.tooSmall(a)
		if note == "" && a.DefaultImage == 0 && size.Image > 0 {
			note = a.Name + " takes flat vectors: --image does not apply"
		}
		name := reports.String(a.Name)
		if note != "" {
			// People read the note as a numbered footnote; machines get
			// it in the note column.
			n := len(t.Footnotes) - len(costFootnotes) + 1
			name.Text = fmt.Sprintf("%s [%d]", a.Name, n)
			t.Footnotes = append(t.Footnotes, fmt.Sprintf("[%d] %s.", n, note))
		}
		row := []reports.Cell{name}
		if size.tooSmall(a) != "" {
			dash := reports.Empty("—")
			row = append(row, dash, dash, dash, dash, dash)
		} else {
			m, err := size.describe(a)
			if err != nil {
				return nil, err
			}
			row = append(row, shapeCell(m.Input), reports.Count(m.Params()), reports.Count(m.MACs()),
				reports.Bytes(m.ActivationBytes()), reports.Int(int64(len(m.Blocks))))
		}
		noteCell := reports.Empty("")
		if note != "" {
			noteCell = reports.String(note)
		}
		t.Rows = append(t.Rows, append(row, reports.String(a.Description), noteCell))
	}
	return t, nil
}

// balanceValue is the pflag.Value behind --balance; like --output, a bad
// value is a flag error, so a usage error.
type balanceValue struct{ p *config.Balance }

func (v balanceValue) String() string { return string(*v.p) }

func (v balanceValue) Set(s string) error {
	if b := config.Balance(s); b == config.BalanceParams || b == config.BalanceMACs {
		*v.p = b
		return nil
	}
	return fmt.Errorf("unknown balance %q (want params|macs)", s)
}

func (v balanceValue) Type() string { return "cost" }

// ModelsPartitionOptions is what the models partition command needs.
type ModelsPartitionOptions struct {
	IO      *IOStreams
	Output  Format
	Wide    bool // --wide: every column, however narrow the terminal
	Model   string
	Devices int
	Balance config.Balance
	Size    ModelSize
}

// newCmdModelsPartition returns the models partition command. runF, when
// not nil, runs instead of the real work.
func newCmdModelsPartition(streams *IOStreams, runF func(*ModelsPartitionOptions) error) *cobra.Command {
	opts := &ModelsPartitionOptions{IO: streams, Balance: config.BalanceMACs}
	cmd := &cobra.Command{
		Use:   "partition --model NAME --devices K",
		Short: "Split a model into pipeline stages of balanced cost",
		Long: `Split a model's blocks into K contiguous stages, one per device, so that
the costliest stage is as cheap as possible (an exact linear partition),
and print each stage's blocks, parameters, MACs and activation bytes per
sample. After the table comes the imbalance of each cost: the largest
stage's cost divided by the mean, 1 for a perfect balance.

--balance macs (the default) evens out compute; --balance params evens out
the weights, gradients and optimizer state each device holds. Blocks are
numbered from 1 in model order.`,
		Example: `  pipecast models partition --model resnet50 --devices 4
  pipecast models partition --model vgg16bn --devices 2 --balance params --output json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Model == "":
				return usageErrorf("required flag --model not set")
			case !cmd.Flags().Changed("devices"):
				return usageErrorf("required flag --devices not set")
			case opts.Devices < 1:
				return usageErrorf("--devices %d: need at least 1", opts.Devices)
			}
			if err := opts.Size.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return modelsPartitionRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Model, "model", "", "model to partition (required; see pipecast models)")
	cmd.Flags().IntVar(&opts.Devices, "devices", 0, "number of devices, one stage each (required)")
	cmd.Flags().Var(balanceValue{&opts.Balance}, "balance", "cost to balance: params|macs")
	addSizeFlags(cmd, &opts.Size)
	addTableFlags(cmd, &opts.Output, &opts.Wide)
	_ = cmd.RegisterFlagCompletionFunc("model", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		var names []string
		for _, a := range models.Archs() {
			names = append(names, a.Name)
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("balance", cobra.FixedCompletions([]string{"params", "macs"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// partitionDoc is the json output of models partition.
type partitionDoc struct {
	Model     string           `json:"model"`
	Input     string           `json:"input"`
	Classes   int              `json:"classes"`
	Width     float64          `json:"width"`
	Devices   int              `json:"devices"`
	Balance   config.Balance   `json:"balance"`
	Stages    []reports.Object `json:"stages"`
	Imbalance imbalance        `json:"imbalance"`
}

// imbalance is each cost's largest stage divided by the mean of the
// stages: 1 when the stages cost the same.
type imbalance struct {
	Params float64 `json:"params"`
	MACs   float64 `json:"macs"`
}

func (imb imbalance) of(b config.Balance) float64 {
	if b == config.BalanceMACs {
		return imb.MACs
	}
	return imb.Params
}

func modelsPartitionRun(opts *ModelsPartitionOptions) error {
	a, err := models.LookupArch(opts.Model)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--model: %w", err)}
	}
	if why := opts.Size.tooSmall(a); why != "" {
		return usageErrorf("--image %d: %s", opts.Size.Image, why)
	}
	m, err := opts.Size.describe(a)
	if err != nil {
		return err
	}
	if n := len(m.Blocks); opts.Devices > n {
		return usageErrorf("--devices %d: %s has %d blocks, so at most %d stages", opts.Devices, a.Name, n, n)
	}
	bounds, err := config.Config{Balance: opts.Balance}.Partition(m, opts.Devices, nil)
	if err != nil {
		return fmt.Errorf("partition %s: %w", a.Name, err)
	}
	t, imb := stageTable(m, bounds, opts.Balance)
	input := shapeCell(m.Input)
	if opts.Output == FormatJSON {
		return writeJSON(opts.IO.Out, partitionDoc{
			Model: a.Name, Input: input.Value.(string), Classes: m.Config.Classes, Width: m.Config.Width,
			Devices: opts.Devices, Balance: opts.Balance, Stages: t.Objects(), Imbalance: imb,
		})
	}
	t.Title = fmt.Sprintf("%s (input %s, %d classes, width %s) on %d devices, balanced by %s",
		a.Name, input.Text, m.Config.Classes, strconv.FormatFloat(m.Config.Width, 'g', -1, 64),
		opts.Devices, balanceName(opts.Balance))
	return renderTable(opts.IO.Out, t, opts.Output, opts.Wide)
}

// balanceName is how titles and footnotes name a cost.
func balanceName(b config.Balance) string {
	if b == config.BalanceMACs {
		return "MACs"
	}
	return "params"
}

// stageTable has a row per stage of the partition bounds, and the
// imbalance of each cost as footnotes.
func stageTable(m *models.Model, bounds []int, balance config.Balance) (*reports.Table, imbalance) {
	t := &reports.Table{
		Columns: []reports.Column{
			{Key: "stage", Header: "stage", Align: reports.AlignRight},
			{Key: "range", Header: "block range", Show: reports.People},
			{Key: "first_block", Header: "first block", Show: reports.Machines},
			{Key: "last_block", Header: "last block", Show: reports.Machines},
			{Key: "first_index", Header: "first index", Show: reports.Machines},
			{Key: "last_index", Header: "last index", Show: reports.Machines},
			colBlocks, colParams, colMACs, colActivations,
		},
	}
	k := len(bounds) - 1
	params, macs := make([]float64, k), make([]float64, k)
	for s := range k {
		blocks := m.Blocks[bounds[s]:bounds[s+1]]
		first, last := blocks[0], blocks[len(blocks)-1]
		var p, c, act int64
		for _, b := range blocks {
			p += b.Cost.Params
			c += b.Cost.MACs
			act += b.Cost.SavedBytes
		}
		// The stage keeps its last block's output until the next stage's
		// backward returns its gradient.
		act += last.Cost.OutputBytes
		params[s], macs[s] = float64(p), float64(c)
		lo, hi := bounds[s]+1, bounds[s+1] // numbered from 1
		span := fmt.Sprintf("%s … %s (%d–%d)", first.Name, last.Name, lo, hi)
		if lo == hi {
			span = fmt.Sprintf("%s (%d)", first.Name, lo)
		}
		t.Rows = append(t.Rows, []reports.Cell{
			reports.Int(int64(s + 1)), reports.String(span),
			reports.String(first.Name), reports.String(last.Name), reports.Int(int64(lo)), reports.Int(int64(hi)),
			reports.Int(int64(len(blocks))), reports.Count(p), reports.Count(c), reports.Bytes(act),
		})
	}
	imb := imbalance{Params: maxOverMean(params), MACs: maxOverMean(macs)}
	// The balanced cost first: it is what the partition optimised.
	first, second := config.BalanceMACs, config.BalanceParams
	if balance == config.BalanceParams {
		first, second = second, first
	}
	t.Footnotes = []string{
		fmt.Sprintf("imbalance of %s (the balanced cost), largest stage ÷ mean: %.3f", balanceName(first), imb.of(first)),
		fmt.Sprintf("imbalance of %s (not balanced), largest stage ÷ mean: %.3f", balanceName(second), imb.of(second)),
	}
	t.Footnotes = append(t.Footnotes, costFootnotes...)
	return t, imb
}

// maxOverMean is the largest of xs divided by their mean; 1 when all are
// zero, which is as even as stages get.
func maxOverMean(xs []float64) float64 {
	var sum, top float64
	for _, x := range xs {
		sum += x
		top = max(top, x)
	}
	if sum == 0 {
		return 1
	}
	return top / (sum / float64(len(xs)))
}
