// Command gemmbench measures the CPU backend's matrix products (GFLOP/s)
// on square matrices and on the products one training step of the zoo's
// convolutional networks runs, and, in a build with the openblas tag,
// OpenBLAS's on the same products with as many threads, side by side:
//
//	go run ./cmd/gemmbench                  # pipecast alone
//	go run -tags openblas ./cmd/gemmbench   # pipecast against OpenBLAS
//	go run -tags openblas ./cmd/gemmbench --quick --markdown
//
// Every product is timed reps times on each side, the two sides
// alternating (which goes first alternates too) so that noise from other
// processes hits both; a table row gives the medians. A model's row
// aggregates all of its step's products (convolutions forward, backward
// data and backward filter, as cpu.ConvGemmShapes lists them, and the
// linear layers): their total floating-point operations over their total
// time, each distinct product timed once per repetition and weighted by
// how often the step runs it. The model's largest products follow.
// Every product is timed as one call of Device.Gemm on all threads,
// including those the convolutions run one per thread side by side on
// several groups of samples: the table measures GEMM speed on the
// step's shapes, not the convolutions' own time. Before a product's row
// counts, the two sides' results must agree to float32 rounding.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

type options struct {
	threads  int
	reps     int
	minTime  time.Duration
	top      int
	squares  []int
	models   []string
	images   []int // empty: each model's defaults (see workloadsFor)
	batches  []int
	markdown bool
	quick    bool
}

func main() {
	var o options
	var squares, modelList, images, batches string
	flag.IntVar(&o.threads, "threads", 2, "worker threads of each side (pipecast's pool, OpenBLAS's threads)")
	flag.IntVar(&o.reps, "reps", 0, "timed repetitions of each product on each side (0: 5, or 3 with --quick)")
	flag.DurationVar(&o.minTime, "min-time", 0, "shortest time of one repetition; short products repeat within it (0: 20ms, or 5ms with --quick)")
	flag.IntVar(&o.top, "top", 0, "largest products listed per model (0: 5, or 3 with --quick)")
	flag.StringVar(&squares, "squares", "", "sizes of the square products (default 256,512,1024,2048; with --quick 256,512,1024)")
	flag.StringVar(&modelList, "models", "resnet50,vgg16bn,inceptionv3", "models whose step products are measured (empty: none)")
	flag.StringVar(&images, "image", "", "input sizes for every model (default per model: a small one at batch 32 and torchvision's at batch 8; --quick only the small one)")
	flag.StringVar(&batches, "batch", "", "batch sizes for every model, with --image (default 32,8 paired with the default sizes)")
	flag.BoolVar(&o.markdown, "markdown", false, "print markdown tables")
	flag.BoolVar(&o.quick, "quick", false, "a short run (about half a minute): fewer shapes and repetitions")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: gemmbench [flags]\n\nMeasures pipecast's GEMM (and OpenBLAS's, built with -tags openblas) on square and\nconvolution products. Flags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	o.reps = pick(o.reps, 5, 3, o.quick)
	o.top = pick(o.top, 5, 3, o.quick)
	if o.minTime == 0 {
		o.minTime = 20 * time.Millisecond
		if o.quick {
			o.minTime = 5 * time.Millisecond
		}
	}
	var err error
	if o.squares, err = ints(squares, "256,512,1024,2048", "256,512,1024", o.quick); err != nil {
		fail(fmt.Errorf("--squares: %w", err))
	}
	if o.images, err = ints(images, "", "", false); err != nil {
		fail(fmt.Errorf("--image: %w", err))
	}
	if o.batches, err = ints(batches, "", "", false); err != nil {
		fail(fmt.Errorf("--batch: %w", err))
	}
	if (len(o.images) == 0) != (len(o.batches) == 0) {
		fail(fmt.Errorf("--image and --batch go together"))
	}
	for _, m := range strings.Split(modelList, ",") {
		if m = strings.TrimSpace(m); m != "" {
			o.models = append(o.models, m)
		}
	}
	if o.threads < 1 || o.reps < 1 || o.top < 0 {
		fail(fmt.Errorf("--threads and --reps must be at least 1, --top at least 0"))
	}
	// Progress (the product being timed) overwrites one line of a
	// terminal; elsewhere it would only clutter a log.
	var progress io.Writer = io.Discard
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		progress = os.Stderr
	}
	if err := run(os.Stdout, progress, o); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gemmbench:", err)
	os.Exit(2)
}

// pick returns v, or its default for the run's length when v is 0.
func pick(v, normal, quick int, isQuick bool) int {
	switch {
	case v != 0:
		return v
	case isQuick:
		return quick
	}
	return normal
}

// ints parses a comma-separated list, or the default for the run's
// length when s is empty.
func ints(s, normal, quick string, isQuick bool) ([]int, error) {
	if s == "" {
		s = normal
		if isQuick {
			s = quick
		}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}
