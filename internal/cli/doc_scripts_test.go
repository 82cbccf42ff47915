package cli

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// checkScript checks a shell script the docs run: it exists, bash -n
// parses it, and every option the doc passes is one its usage mentions.
// Scripts are not run: they take minutes.
func checkScript(root, script string, args []string) (string, error) {
	p := filepath.Join(root, filepath.Clean(script))
	src, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("the script: %w", err)
	}
	if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
		return "", fmt.Errorf("bash -n %s: %v\n\t%s", script, err, strings.TrimSpace(string(out)))
	}
	known := scriptOptions(string(src))
	var given []string
	for _, a := range args {
		if opt, _, _ := strings.Cut(a, "="); strings.HasPrefix(opt, "-") && opt != "-" {
			given = append(given, opt)
		}
	}
	switch {
	case len(given) == 0:
		return "checked: exists, bash -n passes; not run (takes minutes)", nil
	case known == nil:
		return fmt.Sprintf("checked: exists, bash -n passes; its options %v not checked (the script has no usage to check them against); not run (takes minutes)", given), nil
	}
	for _, opt := range given {
		if !known[opt] {
			return "", fmt.Errorf("%s: option %s is not in the script's usage (%s)", script, opt, strings.Join(slices.Sorted(maps.Keys(known)), " "))
		}
	}
	return fmt.Sprintf("checked: exists, bash -n passes, its usage has %v; not run (takes minutes)", given), nil
}

var (
	// scriptOption is an option as a usage writes it: -x or --name,
	// after a space, a bracket, a bar or a quote.
	scriptOption = regexp.MustCompile("(?:^|[\\s\\[(|'\"`])(--?[A-Za-z][A-Za-z0-9-]*)")
	// scriptCase is a case arm of an option parser: "  --steps)" or
	// "-q|--quick)".
	scriptCase = regexp.MustCompile(`^\s*(-[-A-Za-z0-9|]*)\)`)
)

// scriptOptions returns the options a script's usage mentions: those of
// its header comment (the comment lines after #!), of every line that
// says "usage", and of the case arms that parse options. It returns nil
// when it finds none, for a script whose usage cannot be read.
func scriptOptions(src string) map[string]bool {
	var usage []string
	header := true
	for i, l := range strings.Split(src, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case i == 0 && strings.HasPrefix(t, "#!"):
		case header && strings.HasPrefix(t, "#"):
			usage = append(usage, t)
		default:
			header = false
			if strings.Contains(strings.ToLower(t), "usage") {
				usage = append(usage, t)
			}
			if m := scriptCase.FindStringSubmatch(l); m != nil {
				usage = append(usage, strings.ReplaceAll(m[1], "|", " "))
			}
		}
	}
	known := map[string]bool{}
	for _, l := range usage {
		for _, m := range scriptOption.FindAllStringSubmatch(l, -1) {
			known[m[1]] = true
		}
	}
	if len(known) == 0 {
		return nil
	}
	return known
}

func TestScriptOptions(t *testing.T) {
	src := `#!/usr/bin/env bash
# x.sh does things.
#
# Usage: scripts/x.sh [--quick] [DIR]
#   --steps N   steps
set -euo pipefail
# --hidden is a comment past the header
while (( $# )); do
	case "$1" in
	-o|--out) out=$2; shift 2 ;;
	*) usage ;;
	esac
done
`
	got := slices.Sorted(maps.Keys(scriptOptions(src)))
	want := []string{"--out", "--quick", "--steps", "-o"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := scriptOptions("#!/bin/sh\necho hi\n"); got != nil {
		t.Errorf("a script without usage: got %v, want nil", got)
	}
}
