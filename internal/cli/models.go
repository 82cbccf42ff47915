package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pipecast/pipecast/models"
	"github.com/pipecast/pipecast/reports"
)

// tableFormats are the formats of the commands that print a table.
var tableFormats = []Format{FormatTable, FormatMarkdown, FormatCSV, FormatJSON}

// ModelSize is how the models commands and plan size a network: one
// value of each size flag (models.SizeFlags), an empty list selecting
// each model's default.
type ModelSize struct {
	models.SizeVariants
}

// defaultModelSize is the flags' defaults: each model's own sizes at
// torchvision's width.
func defaultModelSize() ModelSize {
	return ModelSize{models.SizeVariants{Widths: []float64{1}}}
}

// validate rejects sizes that no model can take; sizes a particular model
// cannot take are the run function's to find.
func (s ModelSize) validate() error { return checkSizes(s.SizeVariants) }

// config is the zoo configuration of model a at these sizes.
func (s ModelSize) config(a models.Arch) models.Config { return s.Of(a)[0] }

// ignored says which size flags given a ignores, and why ("mlp takes
// flat vectors: --image does not apply"; "resnet50 takes no token
// sequences: --seq and --layers do not apply"), or "" when it takes them
// all. A flag given as 0 asks for the default, which every model takes.
func (s ModelSize) ignored(a models.Arch) string {
	var whys []string
	flags := map[string][]string{}
	for _, sf := range models.SizeFlags() {
		values := sf.Values(s.SizeVariants)
		if len(values) == 0 || values[0] == "0" {
			continue
		}
		if why := sf.Ignored(a); why != "" {
			if flags[why] == nil {
				whys = append(whys, why)
			}
			flags[why] = append(flags[why], "--"+sf.Name)
		}
	}
	notes := make([]string, len(whys))
	for i, why := range whys {
		f := flags[why]
		verb := "does"
		if len(f) > 1 {
			verb = "do"
		}
		list := strings.Join(f[:len(f)-1], ", ")
		if list != "" {
			list += " and "
		}
		notes[i] = fmt.Sprintf("%s: %s%s %s not apply", why, list, f[len(f)-1], verb)
	}
	return strings.Join(notes, "; ")
}

// tooSmall says why a cannot take these sizes, or "" when it can.
func (s ModelSize) tooSmall(a models.Arch) string {
	var se *models.SizeError
	if errors.As(a.CheckSize(s.config(a)), &se) {
		return se.Why
	}
	return ""
}

// sizeUsageError is the usage error of a size a cannot take, naming its
// flag, or nil.
func (s ModelSize) sizeUsageError(a models.Arch) error {
	var se *models.SizeError
	if errors.As(a.CheckSize(s.config(a)), &se) {
		return usageErrorf("--%s %s: %s", se.Field, se.Value, se.Why)
	}
	return nil
}

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
	c := s.Of(models.Arch{DefaultImage: 1})[0].Record() // as a model of images, which takes these fields
	image, classes := "each model's default input", "default classes"
	if c.Image > 0 {
		image = fmt.Sprintf("input %d×%d", c.Image, c.Image)
	}
	if c.Classes > 0 {
		classes = fmt.Sprintf("%d classes", c.Classes)
	}
	return fmt.Sprintf("%s, %s, width %s", image, classes, strconv.FormatFloat(c.Width, 'g', -1, 64))
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
	opts.Size = defaultModelSize()
	addSizeFlags(cmd.Flags(), &opts.Size)
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
		if note == "" {
			note = size.ignored(a)
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
