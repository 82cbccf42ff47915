package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// writeExports writes the Chrome trace and pprof profile of recs to the
// files given, skipping an empty name.
func writeExports(tracePath, pprofPath string, recs []profiler.Record) error {
	if tracePath != "" {
		if err := writeFile(tracePath, func(w io.Writer) error { return reports.WriteTrace(w, recs) }); err != nil {
			return err
		}
	}
	if pprofPath != "" {
		if err := writeFile(pprofPath, func(w io.Writer) error { return reports.WritePprof(w, recs) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile creates path and fills it with write; a failed write removes
// the partial file.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
