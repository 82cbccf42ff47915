package cli

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// This file reads the commands out of the docs' code blocks for
// TestDocCommands: fences, prompts, continuations, comments and the
// little of the shell's grammar that docs use.

// docShellLanguages are the info strings of the fenced blocks that may
// hold commands ("": a fence without one). Other blocks (json, text, go)
// are never commands.
var docShellLanguages = map[string]bool{"": true, "none": true, "sh": true, "bash": true, "shell": true, "console": true}

// docLine is one command line of a doc's code block: its segments are
// the commands that &&, ||, ; and | separate.
type docLine struct {
	file     string // the doc, relative to the repository root
	line     int    // the line of the doc it starts on, from 1
	text     string // as the doc writes it, continuations joined
	segments []shellSegment
	err      error // why the shell's grammar here cannot split it
}

func (l docLine) String() string { return fmt.Sprintf("%s:%d: %s", l.file, l.line, l.text) }

// docBlock is a fenced block of shell lines: every non-empty line that
// is not a comment, or only those after a "$ " prompt where it has any.
type docBlock struct {
	file     string
	line     int // the opening fence's line
	lines    []docLine
	prompted bool // its commands follow "$ " prompts, so none is output
}

// docBlocks returns the blocks of src, a Markdown file, whose fence has a
// shell language or none, and its indented code blocks: lines indented
// by four spaces or a tab after a blank line that follows a paragraph,
// not a list item (whose continuation lines are indented too).
func docBlocks(file, src string) []docBlock {
	var blocks []docBlock
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		if isIndentedCode(lines, i) {
			start := i
			var body []string
			for ; i < len(lines) && (isIndented(lines[i]) || strings.TrimSpace(lines[i]) == ""); i++ {
				body = append(body, lines[i])
			}
			i--
			b := docBlock{file: file, line: start + 1}
			b.lines, b.prompted = shellLines(file, start+1, body)
			blocks = append(blocks, b)
			continue
		}
		fence, lang, ok := openingFence(lines[i])
		if !ok {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && !closesFence(lines[i], fence); i++ {
			body = append(body, lines[i])
		}
		if docShellLanguages[lang] {
			b := docBlock{file: file, line: start + 1}
			b.lines, b.prompted = shellLines(file, start+2, body)
			blocks = append(blocks, b)
		}
	}
	return blocks
}

// openingFence returns the fence (``` or ~~~, three or more) a line
// opens, indented or not, and the first word of its info string.
func openingFence(line string) (fence, lang string, ok bool) {
	s := strings.TrimLeft(line, " \t")
	for _, c := range []string{"`", "~"} {
		n := len(s) - len(strings.TrimLeft(s, c))
		if n >= 3 {
			info := strings.Fields(s[n:])
			if len(info) > 0 {
				lang = strings.ToLower(info[0])
			}
			return s[:n], lang, true
		}
	}
	return "", "", false
}

func isIndented(line string) bool {
	return strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t")
}

var listItem = regexp.MustCompile(`^\s*([-*+]|[0-9]+[.)])\s`)

// isIndentedCode reports whether lines[i] starts an indented code block:
// it is indented, the line before it is blank, and the last line with
// text before that is neither indented nor a list item.
func isIndentedCode(lines []string, i int) bool {
	if !isIndented(lines[i]) || strings.TrimSpace(lines[i]) == "" || i == 0 || strings.TrimSpace(lines[i-1]) != "" {
		return false
	}
	for j := i - 1; j >= 0; j-- {
		if l := lines[j]; strings.TrimSpace(l) != "" {
			return !isIndented(l) && !listItem.MatchString(l)
		}
	}
	return true
}

// closesFence reports whether line closes a block opened by fence: the
// same character, at least as many, nothing after.
func closesFence(line, fence string) bool {
	s := strings.TrimSpace(line)
	return strings.HasPrefix(s, fence) && strings.Trim(s, fence[:1]) == ""
}

// shellLines returns the command lines of a block's body, whose first
// line is line first of the doc. Where some line starts with a "$ "
// prompt only prompted lines are commands (the others are their output).
// A line ending in a backslash continues on the next.
func shellLines(file string, first int, body []string) (lines []docLine, prompted bool) {
	for _, l := range body {
		if isPrompt(l) {
			prompted = true
		}
	}
	for i := 0; i < len(body); i++ {
		l := strings.TrimSpace(body[i])
		if prompted {
			if !isPrompt(l) {
				continue
			}
			l = strings.TrimSpace(strings.TrimPrefix(l, "$"))
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		dl := docLine{file: file, line: first + i}
		for strings.HasSuffix(l, `\`) && i+1 < len(body) {
			i++
			l = strings.TrimSuffix(l, `\`) + " " + strings.TrimSpace(body[i])
		}
		dl.text = strings.Join(strings.Fields(l), " ")
		dl.segments, dl.err = splitShell(l)
		lines = append(lines, dl)
	}
	return lines, prompted
}

func isPrompt(l string) bool {
	l = strings.TrimSpace(l)
	return l == "$" || strings.HasPrefix(l, "$ ")
}

// shellSegment is one simple command of a line: its words, with the
// quotes removed, and where a > sends its standard output.
type shellSegment struct {
	words  []string
	stdout string // the file of a > or >> redirection, or ""
	piped  bool   // its standard input is the previous segment's output
	// expands lists the words that hold a $ outside single quotes: a
	// variable or command substitution that only the shell resolves.
	expands []string
}

// splitShell splits a command line into its simple commands: words in
// single or double quotes or with backslash escapes; && || ; & | between
// commands; > >> 2> &> and 2>&1 redirections; a # that starts a word
// comments out the rest of the line.
func splitShell(line string) ([]shellSegment, error) {
	var segs []shellSegment
	seg := shellSegment{}
	var word strings.Builder
	inWord, expands := false, false
	redirect := "" // "stdout" or "other": the next word is a redirection's file
	endWord := func() {
		if !inWord {
			return
		}
		w := word.String()
		word.Reset()
		inWord = false
		switch redirect {
		case "stdout":
			seg.stdout = w
		case "other":
		default:
			seg.words = append(seg.words, w)
			if expands {
				seg.expands = append(seg.expands, w)
			}
		}
		redirect, expands = "", false
	}
	endSegment := func(piped bool) error {
		if redirect != "" {
			return fmt.Errorf("a redirection names no file")
		}
		if len(seg.words) == 0 {
			return fmt.Errorf("an empty command before an operator")
		}
		segs = append(segs, seg)
		seg = shellSegment{piped: piped}
		return nil
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		next := byte(0)
		if i+1 < len(line) {
			next = line[i+1]
		}
		switch {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			i = len(line)
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			word.WriteString(line[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			inWord = true
			for i++; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				} else if line[i] == '$' || line[i] == '`' {
					expands = true
				}
				word.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, fmt.Errorf("unterminated double quote")
			}
		case c == '\\' && next != 0:
			word.WriteByte(next)
			inWord, i = true, i+1
		case c == '$' || c == '`':
			word.WriteByte(c)
			inWord, expands = true, true
		case c == '>' || (c == '&' && next == '>'):
			// A word of digits right before > is the descriptor: 2>.
			fd := ""
			if inWord && strings.Trim(word.String(), "0123456789") == "" {
				fd, inWord = word.String(), false
				word.Reset()
			}
			endWord()
			if c == '&' {
				fd, i = "&", i+1
			}
			if i+1 < len(line) && line[i+1] == '>' {
				i++
			}
			if i+1 < len(line) && line[i+1] == '&' { // 2>&1: a descriptor, not a file
				for i += 2; i < len(line) && line[i] >= '0' && line[i] <= '9'; i++ {
				}
				i--
				continue
			}
			redirect = "other"
			if fd == "" || fd == "1" {
				redirect = "stdout"
			}
		case c == '<':
			endWord()
			redirect = "other"
		case c == '|' || c == '&' || c == ';':
			endWord()
			piped := c == '|' && next != '|'
			if (c == '|' && next == '|') || (c == '&' && next == '&') {
				i++
			}
			if err := endSegment(piped); err != nil {
				return nil, err
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(seg.words) > 0 || redirect != "" {
		if err := endSegment(seg.piped); err != nil {
			return nil, err
		}
	}
	return segs, nil
}

func TestSplitShell(t *testing.T) {
	tests := []struct {
		name, line string
		want       []shellSegment
	}{
		{name: "words", line: "pipecast profile  --devices 1,2",
			want: []shellSegment{{words: []string{"pipecast", "profile", "--devices", "1,2"}}}},
		{name: "quotes", line: `go test -run '^$' -bench "Step(No)?" ./runner`,
			want: []shellSegment{{words: []string{"go", "test", "-run", "^$", "-bench", "Step(No)?", "./runner"}}}},
		{name: "comment after a space", line: "bash scripts/x.sh   # about 5 minutes",
			want: []shellSegment{{words: []string{"bash", "scripts/x.sh"}}}},
		{name: "a # inside a word stays", line: "echo a#b",
			want: []shellSegment{{words: []string{"echo", "a#b"}}}},
		{name: "redirections", line: "pipecast report r.jsonl --output csv > out.csv 2>/dev/null",
			want: []shellSegment{{words: []string{"pipecast", "report", "r.jsonl", "--output", "csv"}, stdout: "out.csv"}}},
		{name: "2>&1 and >>", line: "pipecast version 2>&1 >>log",
			want: []shellSegment{{words: []string{"pipecast", "version"}, stdout: "log"}}},
		{name: "lists and pipes", line: "go build ./cmd/pipecast && ./pipecast models | head -3; git status",
			want: []shellSegment{
				{words: []string{"go", "build", "./cmd/pipecast"}},
				{words: []string{"./pipecast", "models"}},
				{words: []string{"head", "-3"}, piped: true},
				{words: []string{"git", "status"}},
			}},
		{name: "expansions", line: `pipecast profile --threads $(nproc) --out "$HOME/runs" --name '$x'`,
			want: []shellSegment{{words: []string{"pipecast", "profile", "--threads", "$(nproc)", "--out", "$HOME/runs", "--name", "$x"},
				expands: []string{"$(nproc)", "$HOME/runs"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := splitShell(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{`echo 'open`, `echo "open`, "echo >", "&& echo"} {
		if _, err := splitShell(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestDocBlocks(t *testing.T) {
	src := "Text.\n" + // 1
		"```sh\n" + // 2
		"pipecast profile --model mlp \\\n" + // 3
		"    --devices 1,2   # a comment\n" + // 4
		"# a comment line\n" + // 5
		"\n" + // 6
		"go test ./...\n" + // 7
		"```\n" + // 8
		"```console\n" + // 9
		"$ pipecast version\n" + // 10
		"pipecast version 1.0\n" + // 11
		"```\n" + // 12
		"```json\n" + // 13
		"{\"a\": 1}\n" + // 14
		"```\n" + // 15
		"  ~~~bash\n" + // 16
		"  pipecast models\n" + // 17
		"  ~~~\n" + // 18
		"A paragraph.\n" + // 19
		"\n" + // 20
		"    pipecast plan --model gpt2 \\\n" + // 21
		"        --devices 2\n" + // 22
		"\n" + // 23
		"- a list item\n" + // 24
		"\n" + // 25
		"    go on with the item\n" // 26: the item's text, not code
	blocks := docBlocks("x.md", src)
	type line struct {
		n     int
		words string
	}
	var got [][]line
	for _, b := range blocks {
		var ls []line
		for _, l := range b.lines {
			if l.err != nil {
				t.Fatal(l.err)
			}
			ls = append(ls, line{l.line, strings.Join(l.segments[0].words, " ")})
		}
		got = append(got, ls)
	}
	want := [][]line{
		{{3, "pipecast profile --model mlp --devices 1,2"}, {7, "go test ./..."}},
		{{10, "pipecast version"}},
		{{17, "pipecast models"}}, // indented, in a ~~~ fence
		{{21, "pipecast plan --model gpt2 --devices 2"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
