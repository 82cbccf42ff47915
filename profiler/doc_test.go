package profiler

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const schemaDoc = "../docs/run-record.md"

// docSections splits the schema document into its "### Type" sections
// and returns, for each type, the field names of its table rows.
func docSections(t *testing.T, doc string) map[string][]string {
	t.Helper()
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|")
	sections := map[string][]string{}
	var current string
	for line := range strings.Lines(doc) {
		switch {
		case strings.HasPrefix(line, "### "):
			current = strings.TrimSpace(strings.TrimPrefix(line, "### "))
			if _, dup := sections[current]; dup {
				t.Errorf("%s: section %q appears twice", schemaDoc, current)
			}
			sections[current] = nil
		case strings.HasPrefix(line, "## "):
			current = ""
		case current != "":
			if m := row.FindStringSubmatch(line); m != nil {
				sections[current] = append(sections[current], m[1])
			}
		}
	}
	return sections
}

// schemaFields returns, for Record and every struct type reachable from
// it, the JSON names of its fields, in declaration order; the fields of
// an embedded struct without a JSON name count as the embedding type's,
// as encoding/json promotes them.
func schemaFields(typ reflect.Type, into map[string][]string) {
	if _, seen := into[typ.Name()]; seen {
		return
	}
	into[typ.Name()] = []string{}
	schemaFieldsInto(typ, typ.Name(), into)
}

// schemaFieldsInto appends typ's fields to into[name].
func schemaFieldsInto(typ reflect.Type, name string, into map[string][]string) {
	owner := name
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
			schemaFieldsInto(f.Type, owner, into)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		into[owner] = append(into[owner], name)
		elem := f.Type
		for elem.Kind() == reflect.Pointer || elem.Kind() == reflect.Slice || elem.Kind() == reflect.Map {
			elem = elem.Elem()
		}
		if elem.Kind() == reflect.Struct {
			schemaFields(elem, into)
		}
	}
}

// TestSchemaDocumented keeps docs/run-record.md in step with record.go:
// every type has a section listing exactly its JSON fields, in order.
func TestSchemaDocumented(t *testing.T) {
	doc, err := os.ReadFile(schemaDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := docSections(t, string(doc))
	fields := map[string][]string{}
	schemaFields(reflect.TypeFor[Record](), fields)
	if len(fields) < 10 {
		t.Fatalf("found %d types in the schema, want the 12 of record.go", len(fields))
	}
	for typ, names := range fields {
		got, ok := documented[typ]
		if !ok {
			t.Errorf("%s: no section \"### %s\" documenting fields %v", schemaDoc, typ, names)
			continue
		}
		if !slices.Equal(got, names) {
			t.Errorf("%s: section %s documents %v, record.go has %v", schemaDoc, typ, got, names)
		}
	}
	for typ := range documented {
		if _, ok := fields[typ]; !ok {
			t.Errorf("%s: section %q documents no type of record.go", schemaDoc, typ)
		}
	}
	if !bytes.Contains(doc, []byte("schema version 1")) || SchemaVersion != 1 {
		t.Errorf("%s describes schema version 1; record.go's SchemaVersion is %d", schemaDoc, SchemaVersion)
	}
}

// TestSchemaDocExample checks that the document's example is a valid
// record with no field record.go lacks.
func TestSchemaDocExample(t *testing.T) {
	doc, err := os.ReadFile(schemaDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n## Example\n")
	_, block, ok2 := strings.Cut(rest, "```json\n")
	example, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s: no ```json block under \"## Example\"", schemaDoc)
	}
	dec := json.NewDecoder(strings.NewReader(example))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s: example: %v", schemaDoc, err)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("%s: example is not a valid record: %v", schemaDoc, err)
	}
}
