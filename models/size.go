package models

import (
	"fmt"
	"strconv"
)

// A model family owns its size: the fields of Config that size it, their
// defaults (Arch's defaults function), their checks (Arch.CheckSize), their
// label (SizeRecord.Label) and their form in a run record (SizeRecord,
// which records embed whole). A new size field — a transformer's sequence
// length or vocabulary — is added to Config and SizeRecord here, and the
// records, keys, labels and sweeps that carry a SizeRecord take it along.

// SizeRecord is a sized model's size as a run record holds it, under the
// record's JSON names; run records and the predictor's keys embed it
// whole. It holds what Config.Record keeps: the fields that size a zoo
// model as built (the mlp's layer widths are not recorded: its default).
type SizeRecord struct {
	// Image is the input's height and width in pixels (0 for a model of
	// flat vectors).
	Image int `json:"image"`
	// Classes is the number of output classes.
	Classes int `json:"classes"`
	// Width multiplies every channel count and hidden width.
	Width float64 `json:"width"`
}

// Describe describes the size for messages: "image 32, 10 classes, width
// 0.25".
func (r SizeRecord) Describe() string {
	return fmt.Sprintf("image %d, %d classes, width %g", r.Image, r.Classes, r.Width)
}

// Check reports a recorded size that no model could have had: a negative
// count.
func (r SizeRecord) Check() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"image", r.Image}, {"classes", r.Classes}} {
		if f.v < 0 {
			return fmt.Errorf("%s %d is negative", f.name, f.v)
		}
	}
	return nil
}

// Record returns c's form in a run record.
func (c Config) Record() SizeRecord {
	return SizeRecord{Image: c.Image, Classes: c.Classes, Width: c.Width}
}

// Config returns the configuration r records.
func (r SizeRecord) Config() Config {
	return Config{Image: r.Image, Classes: r.Classes, Width: r.Width}
}

// Label names model at size r for people, adding the input size and
// width where they differ from the zoo's defaults: "resnet50 32px ×0.25".
func (r SizeRecord) Label(model string) string {
	label := model
	if a, err := LookupArch(model); err == nil {
		if a.DefaultImage > 0 && r.Image > 0 && r.Image != a.DefaultImage {
			label += fmt.Sprintf(" %dpx", r.Image)
		}
	} else if r.Image > 0 {
		label += fmt.Sprintf(" %dpx", r.Image)
	}
	if r.Width > 0 && r.Width != 1 {
		label += " ×" + strconv.FormatFloat(r.Width, 'g', -1, 64)
	}
	return label
}

// Sized returns the configuration of a at an input size (0: the model's
// default), classes (0: the default) and width: a model that takes flat
// vectors (the mlp) ignores the image size.
func (a Arch) Sized(image, classes int, width float64) Config {
	cfg := Config{Classes: classes, Width: width}
	if a.DefaultImage > 0 {
		cfg.Image = image
	}
	return cfg
}

// CheckSize returns a *SizeError naming the field at fault when a cannot
// be built at c's size (an input below the smallest it accepts), or nil
// when it can (an image of 0 is the model's default; a model of flat
// vectors takes any).
func (a Arch) CheckSize(c Config) error {
	if a.DefaultImage == 0 || c.Image == 0 || c.Image >= a.MinImage {
		return nil
	}
	return &SizeError{Field: "image", Value: fmt.Sprint(c.Image),
		Why: fmt.Sprintf("input %d×%d is below the smallest %s accepts, %d×%d", c.Image, c.Image, a.Name, a.MinImage, a.MinImage)}
}
