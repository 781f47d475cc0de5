package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/meshbench/meshbench/framework/target"
)

// Open reads results files for a report and checks each one whole before
// anything is drawn: a file that is missing, truncated, of another schema
// or without what a report needs is an error naming the file and the field.
func Open(paths ...string) ([]Input, error) {
	if len(paths) == 0 {
		return nil, errors.New("no results file given")
	}
	var ins []Input
	var errs []error
	for _, p := range paths {
		r, err := openOne(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ins = append(ins, Input{File: p, Results: r})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ins, nil
}

func openOne(path string) (*Results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The schema is read first, so that a file of another version says so
	// rather than failing on a field that moved.
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %s", path, where(data, err))
	}
	switch {
	case head.Schema == nil:
		return nil, fmt.Errorf("%s: schema: missing; not a meshbench results file (want %q)", path, Schema)
	case *head.Schema != Schema:
		return nil, fmt.Errorf("%s: schema: %q, this meshbench reads %q", path, *head.Schema, Schema)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %s", path, where(data, err))
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// check finds what a report cannot do without.
func (r *Results) check() error {
	if len(r.Records) == 0 {
		return errors.New("records: empty; the run measured nothing")
	}
	for i, rec := range r.Records {
		f := fmt.Sprintf("records[%d]", i)
		switch {
		case rec.Run == nil || rec.Load == nil:
			return fmt.Errorf("%s.load: missing", f)
		case rec.Load.Latency == nil:
			return fmt.Errorf("%s.load.latency: missing; the raw histogram is needed", f)
		case rec.Arm != target.Baseline && rec.Arm != target.Meshed:
			return fmt.Errorf("%s.arm: %q, want %s or %s", f, rec.Arm, target.Baseline, target.Meshed)
		case rec.Concurrency < 1:
			return fmt.Errorf("%s.concurrency: %d, want ≥ 1", f, rec.Concurrency)
		case rec.Benchmark == "":
			return fmt.Errorf("%s.benchmark: missing", f)
		}
	}
	return nil
}

// where explains a JSON decoding error with the field it happened in: for a
// truncated or malformed file the path of the last value read.
func where(data []byte, err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: got a JSON %s, want %s", te.Field, te.Value, te.Type)
	}
	field, off := lastField(data)
	if errors.Is(err, io.ErrUnexpectedEOF) || err.Error() == "unexpected end of JSON input" {
		return fmt.Sprintf("%s: truncated at byte %d (the file ends inside it)", field, off)
	}
	return fmt.Sprintf("%s: not valid JSON near byte %d: %v", field, off, err)
}

// lastField walks the JSON tokens and returns the path of the value being
// read where decoding stopped, like records[3].load.latency, and the offset.
func lastField(data []byte) (string, int64) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		key    string
		index  int // the element being read, in an array
		array  bool
		expect bool // an object expecting a key next
	}
	var stack []frame
	path := func() string {
		s := ""
		for _, f := range stack {
			switch {
			case f.array:
				s += "[" + strconv.Itoa(f.index) + "]"
			case f.key != "":
				if s != "" {
					s += "."
				}
				s += f.key
			}
		}
		if s == "" {
			return "top level"
		}
		return s
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return path(), dec.InputOffset()
		}
		top := len(stack) - 1
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				stack = append(stack, frame{array: t == '[', expect: t == '{'})
				continue
			}
			stack = stack[:top]
		case string:
			if top >= 0 && !stack[top].array && stack[top].expect {
				stack[top].key, stack[top].expect = t, false
				continue
			}
		}
		// A value ended: the enclosing container moves on.
		if top = len(stack) - 1; top >= 0 {
			if stack[top].array {
				stack[top].index++
			} else {
				stack[top].expect = true
			}
		}
	}
}
