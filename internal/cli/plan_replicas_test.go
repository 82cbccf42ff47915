package cli

import (
	"encoding/csv"
	"slices"
	"strings"
	"testing"
)

// TestPlanJobDevices plans 4 devices every way as R replicas of K and
// checks what a user sees: the splits (R·K = 4) that can run, with
// their R and K, and a note for each kind left out (a batch the replicas
// cannot share, a pipeline longer than the model), the verdict naming the split it chose, and a clear
// refusal of --devices with --job-devices.
func TestPlanJobDevices(t *testing.T) {
	code, out, errOut := run(t, "plan", "--model", "mlp", "--job-devices", "4", "--batch", "6", "--microbatches", "1,3",
		"--schedule", "gpipe,1f1b", "--output", "csv")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := rows[0]
	ri, ki := slices.Index(header, "replicas"), slices.Index(header, "devices")
	if ri < 0 || ki < 0 {
		t.Fatalf("header %v: want replicas and devices", header)
	}
	shapes := map[string]bool{}
	for _, r := range rows[1:] {
		shapes[r[ri]+"×"+r[ki]] = true
	}
	// Batch 6 splits into 1 and 2 replicas, not 4: R = 4 × K = 1 is left
	// out; the mlp's 3 blocks make no pipeline of 4: R = 1 × K = 4 neither.
	if len(shapes) != 1 || !shapes["2×2"] {
		t.Errorf("splits %v, want R×K 2×2 alone", shapes)
	}
	for _, note := range []string{"replica counts R that batch 6 does not split into equally", "pipelines of more devices than mlp has blocks"} {
		if !strings.Contains(errOut, note) {
			t.Errorf("stderr %q: want a note %q", errOut, note)
		}
	}
	code, out, errOut = run(t, "plan", "--model", "mlp", "--job-devices", "2", "--batch", "8", "--microbatches", "1", "--schedule", "gpipe")
	if code != ExitOK || !strings.Contains(out, "R=2 × K=1") && !strings.Contains(out, "R=1 × K=2") {
		t.Errorf("exit %d, %q: want a verdict naming its R and K; %s", code, out, errOut)
	}
	code, out, errOut = run(t, "plan", "--model", "mlp", "--job-devices", "2", "--batch", "8", "--microbatches", "1", "--schedule", "gpipe",
		"--by-device", "--output", "csv")
	rows, err = csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != ExitOK || err != nil || !slices.Equal(rows[0][1:3], []string{"replicas", "devices"}) {
		t.Fatalf("--by-device: exit %d, %v: want R and K columns:\n%s%s", code, err, out, errOut)
	}
	perShape := map[string]int{}
	for _, r := range rows[1:] {
		perShape[r[1]+"×"+r[2]]++
	}
	if len(perShape) != 2 || perShape["1×2"] != perShape["2×1"] || perShape["1×2"]%2 != 0 {
		t.Errorf("--by-device: rows per R×K %v, want two devices a configuration of R=1 × K=2 and of R=2 × K=1", perShape)
	}
	code, _, errOut = run(t, "plan", "--model", "mlp", "--job-devices", "4", "--devices", "2")
	if code != ExitUsage || !strings.Contains(errOut, "--devices and --job-devices") {
		t.Errorf("--devices with --job-devices: exit %d, %q; want %d and a message", code, errOut, ExitUsage)
	}
}
