package models

import (
	"fmt"
	"strconv"
)

// A model family owns its size: the fields of Config that size it, their
// defaults (Arch's defaults function, and Arch.Tokens for a language
// model's), their checks (Arch.CheckSize), their label (SizeRecord.Label)
// and their form in a run record (SizeRecord, which records embed whole).
// A new size field is added to Config and SizeRecord here, with its list
// in SizeVariants and its flag in SizeFlags, and the records, keys,
// labels and sweeps that carry a SizeRecord take it along.

// SizeRecord is a sized model's size as a run record holds it, under the
// record's JSON names; run records and the predictor's keys embed it
// whole. It holds what Config.Record keeps: the fields that size a zoo
// model as built (the mlp's layer widths are not recorded: its default).
// The fields only language models take are omitted when 0, so that the
// records of other models read and write as they did before the fields.
type SizeRecord struct {
	// Image is the input's height and width in pixels (0 for a model of
	// flat vectors or token sequences).
	Image int `json:"image"`
	// Classes is the number of output classes: a language model's
	// vocabulary.
	Classes int `json:"classes"`
	// Width multiplies every channel count and hidden width.
	Width float64 `json:"width"`
	// Seq is a language model's sequence length in tokens (0 for other
	// models).
	Seq int `json:"seq,omitempty"`
	// Vocab is a language model's vocabulary size (0 for other models).
	Vocab int `json:"vocab,omitempty"`
	// Layers is a language model's number of decoder layers (0 for other
	// models).
	Layers int `json:"layers,omitempty"`
}

// tokens reports whether r is a language model's size.
func (r SizeRecord) tokens() bool { return r.Seq != 0 || r.Vocab != 0 || r.Layers != 0 }

// Describe describes the size for messages: "image 32, 10 classes, width
// 0.25", or for a language model "seq 64, vocab 50257, 12 layers, width
// 0.25" (its classes are its vocabulary).
func (r SizeRecord) Describe() string {
	if r.tokens() {
		return fmt.Sprintf("seq %d, vocab %d, %d layers, width %g", r.Seq, r.Vocab, r.Layers, r.Width)
	}
	return fmt.Sprintf("image %d, %d classes, width %g", r.Image, r.Classes, r.Width)
}

// Check reports a recorded size that no model could have had: a negative
// count.
func (r SizeRecord) Check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"image", r.Image}, {"classes", r.Classes}, {"seq", r.Seq}, {"vocab", r.Vocab}, {"layers", r.Layers}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative", f.name, f.v)
		}
	}
	return nil
}

// Record returns c's form in a run record.
func (c Config) Record() SizeRecord {
	return SizeRecord{Image: c.Image, Classes: c.Classes, Width: c.Width, Seq: c.Seq, Vocab: c.Vocab, Layers: c.Layers}
}

// Config returns the configuration r records.
func (r SizeRecord) Config() Config {
	return Config{Image: r.Image, Classes: r.Classes, Width: r.Width, Seq: r.Seq, Vocab: r.Vocab, Layers: r.Layers}
}

// Label names model at size r for people, adding what differs from the
// family's defaults: the input size and width, "resnet50 32px ×0.25";
// a language model's sequence length, vocabulary and layers, "gpt2 ×0.25
// seq 64 4 layers". Of a model this build does not know it names every
// size it cannot tell from a default.
func (r SizeRecord) Label(model string) string {
	label := model
	a, err := LookupArch(model)
	known := err == nil
	if (known && a.DefaultImage > 0 && r.Image > 0 && r.Image != a.DefaultImage) || (!known && r.Image > 0) {
		label += fmt.Sprintf(" %dpx", r.Image)
	}
	if r.Width > 0 && r.Width != 1 {
		label += " ×" + strconv.FormatFloat(r.Width, 'g', -1, 64)
	}
	var def TokenSize
	if known && a.Tokens != nil {
		def = *a.Tokens
	}
	if r.Seq > 0 && r.Seq != def.Seq {
		label += fmt.Sprintf(" seq %d", r.Seq)
	}
	if r.Vocab > 0 && r.Vocab != def.Vocab {
		label += fmt.Sprintf(" vocab %d", r.Vocab)
	}
	if r.Layers > 0 && r.Layers != def.Layers {
		label += fmt.Sprintf(" %d layers", r.Layers)
	}
	return label
}

// Sized returns c without the fields a does not take, which its records
// hold as 0 (or, for a language model's classes, as its vocabulary): the
// image of a model of flat vectors or token sequences, the sequence
// length, vocabulary and layers of a model without Tokens, the classes of
// a language model.
func (a Arch) Sized(c Config) Config {
	if a.DefaultImage == 0 {
		c.Image = 0
	}
	if a.Tokens == nil {
		c.Seq, c.Vocab, c.Layers = 0, 0, 0
	} else {
		c.Classes = 0
	}
	return c
}

// CheckSize returns a *SizeError naming the field at fault when a cannot
// be built at c's size (an input below the smallest it accepts, a
// sequence longer than it takes), or nil when it can (0 is a field's
// default; a field a does not take is ignored).
func (a Arch) CheckSize(c Config) error {
	c = a.Sized(c)
	if a.DefaultImage > 0 && c.Image != 0 && c.Image < a.MinImage {
		return &SizeError{Field: "image", Value: fmt.Sprint(c.Image),
			Why: fmt.Sprintf("input %d×%d is below the smallest %s accepts, %d×%d", c.Image, c.Image, a.Name, a.MinImage, a.MinImage)}
	}
	if t := a.Tokens; t != nil && t.MaxSeq > 0 && c.Seq > t.MaxSeq {
		return &SizeError{Field: "seq", Value: fmt.Sprint(c.Seq),
			Why: fmt.Sprintf("a sequence of %d tokens is longer than %s takes, %d", c.Seq, a.Name, t.MaxSeq)}
	}
	return nil
}
