package reports

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
)

// The machine formats of a Table: csv and json of the raw values.

func renderCSV(w io.Writer, t *Table) error {
	cols := t.visible(Machines)
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	record := make([]string, len(cols))
	for k, i := range cols {
		record[k] = t.Columns[i].Key
	}
	if err := cw.Write(record); err != nil {
		return err
	}
	for _, row := range t.Rows {
		for k, i := range cols {
			record[k] = rawText(row[i].Value)
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	_, err := buf.WriteTo(w)
	return err
}

// rawText writes a raw value as csv carries it: plain digits, no unit,
// empty for nil.
func rawText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	}
	panic(fmt.Sprintf("reports: raw value of type %T", v)) // check rules this out
}

func renderJSON(w io.Writer, t *Table) error {
	b, err := json.MarshalIndent(t.Objects(), "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// Objects returns the rows as json objects of the columns machines see,
// keyed by column key in column order: what FormatJSON writes, for
// callers that embed the rows in a larger document. It is never nil.
func (t *Table) Objects() []Object {
	cols := t.visible(Machines)
	out := make([]Object, len(t.Rows))
	for r, row := range t.Rows {
		obj := make(Object, len(cols))
		for k, i := range cols {
			obj[k] = Field{Key: t.Columns[i].Key, Value: row[i].Value}
		}
		out[r] = obj
	}
	return out
}

// Field is one key and value of an Object.
type Field struct {
	Key   string
	Value any
}

// Object is a json object whose keys keep their order, unlike a map's.
type Object []Field

// MarshalJSON writes the fields in order. Non-finite floats, which json
// cannot carry, are written as null.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		key, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		b.Write(key)
		b.WriteByte(':')
		v := f.Value
		if x, ok := v.(float64); ok && (math.IsNaN(x) || math.IsInf(x, 0)) {
			v = nil
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Key, err)
		}
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
