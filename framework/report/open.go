package report

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/framework/testbed"
	"github.com/meshbench/meshbench/framework/validity"
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
	var r *Results
	if strings.HasSuffix(path, JournalExt) { // a run still going, or killed
		var err error
		if r, _, err = ReadJournal(path); err != nil {
			return nil, err
		}
	} else {
		data, err := readFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if r, err = decode(path, data); err != nil {
			return nil, err
		}
	}
	// An upgrade gate's run (baseline, reference, candidate) is reported
	// as the suite reports it at the end of the run.
	if err := r.check(allArms...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// allArms are every arm a results file may hold.
var allArms = append(slices.Clone(testbed.Arms), testbed.Reference, testbed.Candidate)

// OpenStored reads the stored run a run is gated against (its reference),
// checked whole as Open checks a report's input (missing, truncated, of
// another schema, without a raw histogram: an error naming the file and
// the field), except that it may hold an upgrade gate's arms too. It also
// returns the file's SHA-256, in hex, so that a decision names the exact
// file it rests on.
func OpenStored(path string) (*Results, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	r, err := decode(path, data)
	if err != nil {
		return nil, "", err
	}
	if err := r.check(allArms...); err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	return r, hex.EncodeToString(sum[:]), nil
}

// decode reads a results file's bytes, schema first.
func decode(path string, data []byte) (*Results, error) {
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
	r.coarseTicks()
	return &r, nil
}

// coarseTicks marks the CPU figures of a local run written before the
// local target read CPU time in ns (no environment.cpuCounters: it read
// 10 ms ticks) as the target now marks a run that reads ticks: not
// trusted where a process counted fewer than testbed.MinTicks
// (validity.CPUCoarse).
func (r *Results) coarseTicks() {
	if r.Environment.Target != "local" || r.Environment.CPUCounters != "" {
		return
	}
	for _, rec := range r.Records {
		if rec.Run != nil && len(rec.CPUInvalid.Of(validity.CPUCoarse)) == 0 {
			rec.CPUInvalid = append(rec.CPUInvalid, testbed.CoarseTicks(rec.Resources)...)
		}
	}
}

// check finds what a report cannot do without; arms are the arms a
// record may have.
func (r *Results) check(arms ...testbed.Arm) error {
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
		case !slices.Contains(arms, rec.Arm):
			return fmt.Errorf("%s.arm: %q, want %s", f, rec.Arm, oneOf(arms))
		case rec.Concurrency < 1:
			return fmt.Errorf("%s.concurrency: %d, want ≥ 1", f, rec.Concurrency)
		case rec.Benchmark == "":
			return fmt.Errorf("%s.benchmark: missing", f)
		}
	}
	return nil
}

// oneOf lists arms as "baseline or meshed", "a, b or c".
func oneOf(arms []testbed.Arm) string {
	names := make([]string, len(arms))
	for i, a := range arms {
		names[i] = string(a)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
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

// readFile reads a results file, gunzipping one whose name ends in .gz
// (results kept in a repository, e.g. a fixture's calibration runs).
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	defer zr.Close()
	if data, err = io.ReadAll(zr); err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	return data, nil
}
