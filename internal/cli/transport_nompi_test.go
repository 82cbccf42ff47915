//go:build !mpi

package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileMPIWithoutTheTag checks that a build without the mpi tag
// refuses --transport mpi before anything runs, saying how to build it.
func TestProfileMPIWithoutTheTag(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := execute(context.Background(), "profile", "--model", "mlp", "--devices", "1", "--microbatches", "1",
		"--schedule", "gpipe", "--steps", "1", "--transport", "mpi", "--out", dir)
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "go build -tags mpi") || strings.Contains(errOut, "run 1 of") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and how to build with mpi", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs.jsonl")); !os.IsNotExist(err) {
		t.Errorf("a refused sweep wrote runs.jsonl: %v", err)
	}
	if got := transports(); len(got) != 1 || got[0] != "inprocess" {
		t.Errorf("transports %v, want [inprocess]", got)
	}
}

// TestProfileDryRunMPIWithoutTheTag checks that a dry run refuses
// --transport mpi in a build without the tag as the sweep does, after
// checking the rest (a bad value elsewhere is named first).
func TestProfileDryRunMPIWithoutTheTag(t *testing.T) {
	code, out, errOut := execute(context.Background(), "profile", "--dry-run", "--model", "mlp", "--transport", "mpi")
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "--transport mpi: built without the mpi tag") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and how to build with mpi", code, out, errOut)
	}
	code, _, errOut = execute(context.Background(), "profile", "--dry-run", "--model", "mlp", "--batch", "3", "--microbatches", "2", "--transport", "mpi")
	if code != ExitUsage || !strings.Contains(errOut, "no combination of the flags can run") {
		t.Errorf("exit %d, stderr %q; want the sweep's own error before the transport's", code, errOut)
	}
}
