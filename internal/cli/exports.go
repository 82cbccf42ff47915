package cli

import (
	"io"

	"github.com/pipecast/pipecast/profiler"
	"github.com/pipecast/pipecast/reports"
)

// writeExports writes the Chrome trace and pprof profile of recs to the
// files given, skipping an empty name.
func writeExports(tracePath, pprofPath string, recs []profiler.Record) error {
	if tracePath != "" {
		if err := writeAtomically(tracePath, func(w io.Writer) error { return reports.WriteTrace(w, recs) }); err != nil {
			return err
		}
	}
	if pprofPath != "" {
		if err := writeAtomically(pprofPath, func(w io.Writer) error { return reports.WritePprof(w, recs) }); err != nil {
			return err
		}
	}
	return nil
}
